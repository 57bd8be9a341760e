"""The library yardstick for matrix_transpose (engine/gpu/library.py): cuBLAS's out-of-place
transpose, geam with alpha = 1 and beta = 0.

cuBLAS is column-major: the row-major rows x cols input is a column-major cols x rows matrix X
(leading dimension cols), and the row-major cols x rows output a column-major rows x cols matrix Y
(leading dimension rows) = X^T.
"""

import numpy as np

NAME = "cuBLAS geam transpose (through CuPy)"


def bind(cp, bufs, params, stream):
    from cupy_backends.cuda.libs import cublas

    x, y = bufs["input"], bufs["output"]
    rows, cols = params["rows"], params["cols"]
    handle = cp.cuda.device.get_cublas_handle()
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)

    def run():
        cublas.setStream(handle, stream.ptr)
        cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
        cublas.sgeam(
            handle, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, rows, cols,
            one.ctypes.data, x.data.ptr, cols, zero.ctypes.data, y.data.ptr, rows, y.data.ptr, rows,
        )  # fmt: skip

    return run
