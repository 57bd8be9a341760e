// Two launches. block_sums: each block of 256 threads loads one element per thread and sums them
// with a shared-memory tree (interleaved addressing), writing one partial per block.
// final_sum: a single block of 1024 threads; each thread adds up a strided share of the
// partials, then a shared-memory tree combines the 1024 values and thread 0 writes out[0].
extern "C" __global__ void block_sums(const float* x, float* partial, int n)
{
    __shared__ float s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = 1; stride < blockDim.x; stride *= 2) {
        if (tid % (2 * stride) == 0) {
            s[tid] += s[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = s[0];
    }
}

extern "C" __global__ void final_sum(const float* partial, float* out, int count)
{
    __shared__ float s[1024];
    int tid = threadIdx.x;
    float acc = 0.0f;
    for (int i = tid; i < count; i += blockDim.x) {
        acc += partial[i];
    }
    s[tid] = acc;
    __syncthreads();
    for (int stride = 1; stride < blockDim.x; stride *= 2) {
        if (tid % (2 * stride) == 0) {
            s[tid] += s[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        out[0] = s[0];
    }
}
