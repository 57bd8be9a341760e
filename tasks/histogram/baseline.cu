// Two launches. zero_bins clears the 256 global counters (they hold garbage before the run).
// histogram: one thread per value; each block of 256 threads counts into its own shared-memory
// bins, then adds its non-zero counts to the global bins with one atomicAdd per bin.
extern "C" __global__ void zero_bins(int* bins)
{
    bins[threadIdx.x] = 0;
}

extern "C" __global__ void histogram(const int* values, int* bins, int n)
{
    __shared__ int local[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    local[tid] = 0;
    __syncthreads();
    if (i < n) {
        atomicAdd(&local[values[i]], 1);
    }
    __syncthreads();
    if (local[tid] != 0) {
        atomicAdd(&bins[tid], local[tid]);
    }
}
