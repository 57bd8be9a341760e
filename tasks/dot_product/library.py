"""The library yardstick for dot_product (engine/gpu/library.py): cuBLAS sdot, its result written
straight to the output buffer (device pointer mode)."""

NAME = "cuBLAS sdot (through CuPy)"


def bind(cp, bufs, params, stream):
    from cupy_backends.cuda.libs import cublas

    a, b, out = bufs["a"], bufs["b"], bufs["out"]
    n = params["n"]
    handle = cp.cuda.device.get_cublas_handle()

    def run():
        cublas.setStream(handle, stream.ptr)
        cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_DEVICE)
        try:
            cublas.sdot(handle, n, a.data.ptr, 1, b.data.ptr, 1, out.data.ptr)
        finally:
            cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)

    return run
