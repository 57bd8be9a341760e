// One thread per output; each thread walks the k taps straight from global memory.
extern "C" __global__ void conv1d(const float* x, const float* w, float* y, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n - k) {
        float acc = 0.0f;
        for (int j = 0; j < k; ++j) {
            acc += x[i + j] * w[j];
        }
        y[i] = acc;
    }
}
