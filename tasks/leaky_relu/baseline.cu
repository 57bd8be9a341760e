// One thread per element.
extern "C" __global__ void leaky_relu(const float* x, float* y, float alpha, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : alpha * v;
    }
}
