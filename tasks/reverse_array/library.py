"""The library yardstick for reverse_array (engine/gpu/library.py): CuPy's copy of a reversed view."""

NAME = "CuPy copyto of a reversed view"


def bind(cp, bufs, params, stream):
    x, y = bufs["x"], bufs["y"]
    return lambda: cp.copyto(y, x[::-1])
