"""The library yardstick for spmv_csr (engine/gpu/library.py): cuSPARSE's CSR matrix-vector product
through cupyx.scipy.sparse, its result copied to the output."""

NAME = "cuSPARSE SpMV (cupyx.scipy.sparse)"


def bind(cp, bufs, params, stream):
    from cupyx.scipy import sparse

    matrix = sparse.csr_matrix(
        (bufs["values"], bufs["col_idx"], bufs["row_ptr"]), shape=(params["rows"], params["cols"]), copy=False
    )
    x, y = bufs["x"], bufs["y"]
    return lambda: cp.copyto(y, matrix @ x)
