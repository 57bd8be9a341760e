"""The library yardstick for histogram (engine/gpu/library.py): CUB's device-wide even histogram, as
CuPy's histogram runs it with the CUB accelerator on; its int64 counts cast into the output."""

NAME = "CUB histogram even (CuPy histogram)"


def bind(cp, bufs, params, stream):
    values, bins = bufs["values"], bufs["bins"]

    def run():
        counts, _edges = cp.histogram(values, bins=256, range=(0, 256))
        bins[...] = counts

    return run
