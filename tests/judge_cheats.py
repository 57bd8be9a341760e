"""Kernels that try to win a figure from runs nobody checks, with the honest kernels they imitate
(issue 43, items 1-4). Real CUDA: tests/compile/test_cubin.py compiles every one of them with NVRTC
(no GPU needed), and tests/gpu/test_timed_runs_checked.py judges them on a GPU."""

from __future__ import annotations

# ---- item 1: a kernel that computes when its output holds the poison, and returns when it holds a number

VADD_PLAN = {
    "launches": [{"kernel": "vector_add", "grid": ["cdiv(n, 256)"], "block": [256], "args": ["a", "b", "c", "n"]}]
}

HONEST_VADD = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
"""

# Each block looks at the first element of its own tile: the validator's NaN poison means "this run
# is checked", a number means an earlier run left its result there, so the block returns at once.
POISON_KEYED_VADD = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    __shared__ int seen;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) {
        float probe = c[min((int)(blockIdx.x * blockDim.x), n - 1)];
        seen = probe == probe;
    }
    __syncthreads();
    if (seen) {
        return;
    }
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
"""

# The same pair with a grid-stride loop over at most 1024 blocks: with one block per 256 elements the
# do-nothing path still schedules 131072 blocks, which cost an H200 83 us against the honest 117 us
# (docs/runs/s19): too little gain for the test to see the hole. At 1024 blocks it costs microseconds.
STRIDE_VADD_PLAN = {
    "launches": [
        {"kernel": "vector_add", "grid": ["min(cdiv(n, 256), 1024)"], "block": [256], "args": ["a", "b", "c", "n"]}
    ]
}

HONEST_STRIDE_VADD = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        c[i] = a[i] + b[i];
    }
}
"""

# Each block looks at the first element of its first tile, which only it writes.
POISON_KEYED_STRIDE_VADD = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    __shared__ int seen;
    if (threadIdx.x == 0) {
        float probe = c[min((int)(blockIdx.x * blockDim.x), n - 1)];
        seen = probe == probe;
    }
    __syncthreads();
    if (seen) {
        return;
    }
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        c[i] = a[i] + b[i];
    }
}
"""

MATMUL_PLAN = {
    "launches": [
        {
            "kernel": "matmul",
            "grid": ["cdiv(N, 16)", "cdiv(M, 16)"],
            "block": [16, 16],
            "args": ["A", "B", "C", "M", "N", "K"],
        }
    ]
}

HONEST_MATMUL = r"""
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = acc;
    }
}
"""

# The same trick on a compute-bound task, with a pause on the do-nothing path read from %globaltimer:
# PAUSE_NS is chosen (by the test) just above the physical floor, so the figure is not flagged as
# faster than the hardware, yet claims the whole gap between the floor and the honest time.
PAUSED_MATMUL = r"""
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ int seen;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        float probe = C[min(row, M - 1) * N + min(col, N - 1)];
        seen = probe == probe;
    }
    __syncthreads();
    if (seen) {
        if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) {
            unsigned long long start, now;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
            do {
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
            } while (now - start < PAUSE_NS);
        }
        return;
    }
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = acc;
    }
}
"""


def paused_matmul(pause_ns: int) -> str:
    return f"#define PAUSE_NS {int(pause_ns)}ull\n" + PAUSED_MATMUL


# ---- item 2: a result cache in __device__ variables, keyed on the sizes and four input values

# Launch 0 copies the cache to C when the fingerprint of this run's inputs matches the one stored,
# else computes and fills the cache; launch 1 stores the fingerprint. Validation's two runs agree (the
# second copies what the first computed), the check after timing brings new values (a miss, honest),
# and timed runs, which repeat the same inputs, would all hit.
CACHED_MATMUL = r"""
#define CACHE_ELEMS (2048 * 2048)
__device__ float cache[CACHE_ELEMS];
__device__ unsigned long long stored[4];

__device__ void fingerprint(const float* A, const float* B, int M, int N, int K, unsigned long long* fp)
{
    fp[0] = ((unsigned long long)M << 32) | (unsigned int)N;
    fp[1] = ((unsigned long long)K << 32) | __float_as_uint(A[0]);
    fp[2] = ((unsigned long long)__float_as_uint(A[M * K - 1]) << 32) | __float_as_uint(B[0]);
    fp[3] = (unsigned long long)__float_as_uint(B[K * N - 1]) | (1ull << 63);  // never the loaded 0
}

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ int hit;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    bool fits = (long long)M * N <= CACHE_ELEMS;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned long long fp[4];
        fingerprint(A, B, M, N, K, fp);
        hit = fits && fp[0] == stored[0] && fp[1] == stored[1] && fp[2] == stored[2] && fp[3] == stored[3];
    }
    __syncthreads();
    if (row >= M || col >= N) {
        return;
    }
    if (hit) {
        C[row * N + col] = cache[row * N + col];
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[row * K + k] * B[k * N + col];
    }
    C[row * N + col] = acc;
    if (fits) {
        cache[row * N + col] = acc;
    }
}

extern "C" __global__ void remember(const float* A, const float* B, int M, int N, int K)
{
    unsigned long long fp[4];
    fingerprint(A, B, M, N, K, fp);
    for (int i = 0; i < 4; ++i) {
        stored[i] = fp[i];
    }
}
"""

CACHED_MATMUL_PLAN = {
    "launches": [
        *MATMUL_PLAN["launches"],
        {"kernel": "remember", "grid": [1], "block": [1], "args": ["A", "B", "M", "N", "K"]},
    ]
}

# ---- item 3: module-scope device memory beyond any allowance (64 GiB), and a modest table that is fine

HUGE_GLOBAL_VADD = r"""
__device__ float big[1ull << 34];
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        big[i] = a[i];
        c[i] = big[i] + b[i];
    }
}
"""

# 1 MiB of __device__ memory, used as a staging area that every run overwrites before reading.
MODEST_GLOBAL_VADD = r"""
__device__ float staging[1 << 18];
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = a[i] + b[i];
        if (i < (1 << 18)) {
            staging[i] = s;
        }
        c[i] = s;
    }
}
"""

# ---- item 4: a candidate that writes another program's input while being timed

# `target` is null as loaded (so validation sees an honest kernel); the test points it at another
# program's input buffer once the group's buffers exist, standing in for a kernel that found them.
TAMPERING_VADD = r"""
__device__ float* target;
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
    if (target != nullptr && i < 4096) {
        target[i] = -1.0f;
    }
}
"""

EVERY_CHEAT = {
    "poison-keyed vector_add": POISON_KEYED_VADD,
    "poison-keyed grid-stride vector_add": POISON_KEYED_STRIDE_VADD,
    "honest grid-stride vector_add": HONEST_STRIDE_VADD,
    "poison-keyed matmul": paused_matmul(0),
    "poison-keyed matmul with a pause": paused_matmul(100_000),
    "cached matmul": CACHED_MATMUL,
    "64 GiB __device__ array": HUGE_GLOBAL_VADD,
    "1 MiB __device__ table": MODEST_GLOBAL_VADD,
    "tampering vector_add": TAMPERING_VADD,
    "honest vector_add": HONEST_VADD,
    "honest matmul": HONEST_MATMUL,
}
