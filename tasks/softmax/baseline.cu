// One thread per row, three passes over it: the row maximum, the sum of exp(x - max), and the
// normalised outputs.
extern "C" __global__ void softmax_rows(const float* x, float* y, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) {
        return;
    }
    const float* xr = x + (size_t)r * cols;
    float* yr = y + (size_t)r * cols;
    float m = xr[0];
    for (int c = 1; c < cols; ++c) {
        m = fmaxf(m, xr[c]);
    }
    float sum = 0.0f;
    for (int c = 0; c < cols; ++c) {
        sum += expf(xr[c] - m);
    }
    for (int c = 0; c < cols; ++c) {
        yr[c] = expf(xr[c] - m) / sum;
    }
}
