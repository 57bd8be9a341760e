"""The library yardstick for gemm_fp16 (engine/gpu/library.py): cuBLAS gemmEx, fp16 inputs, fp32
accumulation and fp32 output, tensor cores allowed.

cuBLAS is column-major: row-major C = A @ B is column-major C^T = B^T A^T (see matmul/library.py).
"""

import numpy as np

NAME = "cuBLAS gemmEx fp16 -> fp32 (through CuPy)"


def bind(cp, bufs, params, stream):
    from cupy_backends.cuda.api import runtime
    from cupy_backends.cuda.libs import cublas

    a, b, c = bufs["A"], bufs["B"], bufs["C"]
    m, n, k = params["M"], params["N"], params["K"]
    handle = cp.cuda.device.get_cublas_handle()
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)

    def run():
        cublas.setStream(handle, stream.ptr)
        cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
        cublas.gemmEx(
            handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k,
            one.ctypes.data, b.data.ptr, runtime.CUDA_R_16F, n, a.data.ptr, runtime.CUDA_R_16F, k,
            zero.ctypes.data, c.data.ptr, runtime.CUDA_R_32F, n,
            cublas.CUBLAS_COMPUTE_32F, cublas.CUBLAS_GEMM_DEFAULT_TENSOR_OP,
        )  # fmt: skip

    return run
