"""The library yardstick for matrix_copy (engine/gpu/library.py): the driver's device-to-device copy."""

NAME = "cudaMemcpyAsync device to device (CuPy)"


def bind(cp, bufs, params, stream):
    a, b = bufs["a"], bufs["b"]
    nbytes = a.nbytes
    kind = cp.cuda.runtime.memcpyDeviceToDevice
    return lambda: cp.cuda.runtime.memcpyAsync(b.data.ptr, a.data.ptr, nbytes, kind, stream.ptr)
