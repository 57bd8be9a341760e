"""The library yardstick for matmul (engine/gpu/library.py): cuBLAS SGEMM in full fp32 (no TF32).

cuBLAS is column-major: row-major C = A @ B is column-major C^T = B^T A^T, so the call computes an
N x M product of B (N x K, leading dimension N) and A (K x M, leading dimension K).
"""

import numpy as np

NAME = "cuBLAS SGEMM (through CuPy)"


def bind(cp, bufs, params, stream):
    from cupy_backends.cuda.libs import cublas

    a, b, c = bufs["A"], bufs["B"], bufs["C"]
    m, n, k = params["M"], params["N"], params["K"]
    handle = cp.cuda.device.get_cublas_handle()
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)

    def run():
        cublas.setStream(handle, stream.ptr)
        cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
        cublas.setMathMode(handle, cublas.CUBLAS_DEFAULT_MATH)  # full fp32: TF32 would fail validation
        cublas.sgemm(
            handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k,
            one.ctypes.data, b.data.ptr, n, a.data.ptr, k, zero.ctypes.data, c.data.ptr, n,
        )  # fmt: skip

    return run
