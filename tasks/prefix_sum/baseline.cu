// Three launches (scan blocks, scan the block totals, add the carries).
// scan_blocks: one thread per element; each block of 1024 threads scans its elements with a
// double-buffered Hillis-Steele scan in shared memory and stores its total in block_sums.
// scan_block_sums: a single block of 1024 threads scans block_sums in place; each thread scans a
// contiguous chunk sequentially, a Hillis-Steele scan over the chunk totals gives each chunk its
// carry, and each thread adds its carry to its chunk.
// add_carries: adds the inclusive total of all earlier blocks to every element of blocks >= 1.
#define BLOCK 1024

extern "C" __global__ void scan_blocks(const float* x, float* y, float* block_sums, int n)
{
    __shared__ float buf[2][BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    int cur = 0;
    buf[0][tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < BLOCK; offset *= 2) {
        float v = buf[cur][tid];
        if (tid >= offset) {
            v += buf[cur][tid - offset];
        }
        buf[1 - cur][tid] = v;
        cur = 1 - cur;
        __syncthreads();
    }
    if (i < n) {
        y[i] = buf[cur][tid];
    }
    if (tid == BLOCK - 1) {
        block_sums[blockIdx.x] = buf[cur][tid];
    }
}

extern "C" __global__ void scan_block_sums(float* block_sums, int count)
{
    __shared__ float buf[2][BLOCK];
    int tid = threadIdx.x;
    int chunk = (count + BLOCK - 1) / BLOCK;
    int begin = tid * chunk;
    int end = min(begin + chunk, count);
    float acc = 0.0f;
    for (int j = begin; j < end; ++j) {
        acc += block_sums[j];
        block_sums[j] = acc;
    }
    int cur = 0;
    buf[0][tid] = acc;
    __syncthreads();
    for (int offset = 1; offset < BLOCK; offset *= 2) {
        float v = buf[cur][tid];
        if (tid >= offset) {
            v += buf[cur][tid - offset];
        }
        buf[1 - cur][tid] = v;
        cur = 1 - cur;
        __syncthreads();
    }
    float carry = tid > 0 ? buf[cur][tid - 1] : 0.0f;
    for (int j = begin; j < end; ++j) {
        block_sums[j] += carry;
    }
}

extern "C" __global__ void add_carries(float* y, const float* block_sums, int n)
{
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (blockIdx.x > 0 && i < n) {
        y[i] += block_sums[blockIdx.x - 1];
    }
}
