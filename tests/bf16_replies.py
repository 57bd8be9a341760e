"""Replies for the built-in bf16 tasks (tasks/rmsnorm_bf16, tasks/gemm_bf16): a correct one each, and
one that accumulates in bf16 where fp32 is needed. The CPU tests compile and bind them
(tests/judge/test_bf16.py); the GPU tests judge them (tests/gpu/test_bf16.py)."""

from __future__ import annotations

RMSNORM_CORRECT = r"""
One block per row: the sum of squares in fp32 (per-thread sums, then warp shuffles), then every
element scaled and rounded once to bf16.

```cuda
#include <cuda_bf16.h>

extern "C" __global__ void rmsnorm_block(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                         __nv_bfloat16* __restrict__ y, int cols, float eps)
{
    __shared__ float partial[32];
    const __nv_bfloat16* row = x + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = __bfloat162float(row[c]);
        s = fmaf(v, v, s);
    }
    for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0) partial[0] = rsqrtf(s / cols + eps);
    }
    __syncthreads();
    float inv = partial[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        y[(long long)blockIdx.x * cols + c] = __float2bfloat16(__bfloat162float(row[c]) * inv * __bfloat162float(w[c]));
    }
}
```

```json
{"launches": [{"kernel": "rmsnorm_block", "grid": ["rows"], "block": [256], "args": ["x", "w", "y", "cols", "eps"]}]}
```
"""

RMSNORM_BF16_SUM = r"""
One thread per row, the sum of squares in a bf16 register (wrong: 8 significant bits).

```cuda
#include <cuda_bf16.h>

extern "C" __global__ void rmsnorm_bf16_sum(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                            __nv_bfloat16* __restrict__ y, int rows, int cols, float eps)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const __nv_bfloat16* row = x + (long long)r * cols;
    __nv_bfloat16 s = __float2bfloat16(0.0f);
    for (int c = 0; c < cols; ++c) s = __hfma(row[c], row[c], s);
    float inv = rsqrtf(__bfloat162float(s) / cols + eps);
    for (int c = 0; c < cols; ++c) {
        y[(long long)r * cols + c] = __float2bfloat16(__bfloat162float(row[c]) * inv * __bfloat162float(w[c]));
    }
}
```

```json
{"launches": [{"kernel": "rmsnorm_bf16_sum", "grid": ["cdiv(rows, 128)"], "block": [128],
  "args": ["x", "w", "y", "rows", "cols", "eps"]}]}
```
"""

GEMM_CORRECT = r"""
Tensor cores through WMMA: one warp per 16x16 tile of C, bf16 fragments, fp32 accumulators; tiles of
A and B staged through shared memory with zeros past the edges, C rounded once to bf16.

```cuda
#include <mma.h>
#include <cuda_bf16.h>

extern "C" __global__ void gemm_wmma(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                                     __nv_bfloat16* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(32) __nv_bfloat16 As[16 * 16];
    __shared__ __align__(32) __nv_bfloat16 Bs[16 * 16];
    __shared__ __align__(32) float Cs[16 * 16];
    const int tm = blockIdx.y * 16, tn = blockIdx.x * 16, lane = threadIdx.x;
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
    nvcuda::wmma::fill_fragment(acc, 0.0f);
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = lane; i < 256; i += 32) {
            int r = i / 16, c = i % 16;
            As[i] = (tm + r < M && k0 + c < K) ? A[(long long)(tm + r) * K + k0 + c] : __float2bfloat16(0.0f);
            Bs[i] = (k0 + r < K && tn + c < N) ? B[(long long)(k0 + r) * N + tn + c] : __float2bfloat16(0.0f);
        }
        __syncwarp();
        nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> a;
        nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> b;
        nvcuda::wmma::load_matrix_sync(a, As, 16);
        nvcuda::wmma::load_matrix_sync(b, Bs, 16);
        nvcuda::wmma::mma_sync(acc, a, b, acc);
        __syncwarp();
    }
    nvcuda::wmma::store_matrix_sync(Cs, acc, 16, nvcuda::wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < 256; i += 32) {
        int r = i / 16, c = i % 16;
        if (tm + r < M && tn + c < N) C[(long long)(tm + r) * N + tn + c] = __float2bfloat16(Cs[i]);
    }
}
```

```json
{"launches": [{"kernel": "gemm_wmma", "grid": ["cdiv(N, 16)", "cdiv(M, 16)"], "block": [32],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
```
"""

GEMM_BF16_ACCUMULATOR = r"""
One thread per element of C, the running sum in a bf16 register (wrong: 8 significant bits).

```cuda
#include <cuda_bf16.h>

extern "C" __global__ void gemm_bf16_acc(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                                         __nv_bfloat16* __restrict__ C, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        __nv_bfloat16 acc = __float2bfloat16(0.0f);
        for (int k = 0; k < K; ++k) acc = __hfma(A[(long long)row * K + k], B[(long long)k * N + col], acc);
        C[(long long)row * N + col] = acc;
    }
}
```

```json
{"launches": [{"kernel": "gemm_bf16_acc", "grid": ["cdiv(N, 16)", "cdiv(M, 16)"], "block": [16, 16],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
```
"""

# (task, reply text, the verdict on a GPU)
REPLIES = {
    "rmsnorm_bf16.correct": ("rmsnorm_bf16", RMSNORM_CORRECT, "correct"),
    "rmsnorm_bf16.bf16_sum": ("rmsnorm_bf16", RMSNORM_BF16_SUM, "wrong"),
    "gemm_bf16.wmma": ("gemm_bf16", GEMM_CORRECT, "correct"),
    "gemm_bf16.bf16_accumulator": ("gemm_bf16", GEMM_BF16_ACCUMULATOR, "wrong"),
}
