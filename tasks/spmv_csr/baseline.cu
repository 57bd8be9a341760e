// One thread per row (the "CSR scalar" kernel): each thread walks its row's entries in order.
extern "C" __global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* values,
                                    const float* x, float* y, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int p = row_ptr[r]; p < row_ptr[r + 1]; ++p) {
            acc += values[p] * x[col_idx[p]];
        }
        y[r] = acc;
    }
}
