// One thread per output element.
extern "C" __global__ void reverse_array(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = x[n - 1 - i];
    }
}
