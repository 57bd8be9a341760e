"""The library yardstick for gemm_bf16 (engine/gpu/library.py): cuBLAS gemmEx, bf16 inputs and
output, fp32 accumulation, tensor cores allowed.

cuBLAS is column-major: row-major C = A @ B is column-major C^T = B^T A^T (see matmul/library.py).
"""

import numpy as np

NAME = "cuBLAS gemmEx bf16 -> bf16, fp32 accumulation (through CuPy)"


def bind(cp, bufs, params, stream):
    from cupy_backends.cuda.api import runtime
    from cupy_backends.cuda.libs import cublas

    a, b, c = bufs["A"], bufs["B"], bufs["C"]
    m, n, k = params["M"], params["N"], params["K"]
    handle = cp.cuda.device.get_cublas_handle()
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
    bf16 = getattr(runtime, "CUDA_R_16BF", 14)  # cudaDataType's CUDA_R_16BF, for a CuPy that lacks the name

    def run():
        cublas.setStream(handle, stream.ptr)
        cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
        cublas.gemmEx(
            handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k,
            one.ctypes.data, b.data.ptr, bf16, n, a.data.ptr, bf16, k,
            zero.ctypes.data, c.data.ptr, bf16, n,
            cublas.CUBLAS_COMPUTE_32F, cublas.CUBLAS_GEMM_DEFAULT_TENSOR_OP,
        )  # fmt: skip

    return run
