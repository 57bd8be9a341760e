"""Kernel sources the compile tests share."""

from __future__ import annotations

TRIVIAL = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n'

# Line 4 uses an undefined `y` at column 20 (after a tab); line 5 has a syntax error at column 15.
BROKEN = (
    'extern "C" __global__ void k(float* a, int n)\n'
    "{\n"
    "\tint i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "\tif (i < n) a[i] = y + 1.0f;\n"
    "    float z = ;\n"
    "}\n"
)

# 64 accumulators live across a loop under a 32-register cap (__launch_bounds__(1024, 2)).
SPILLS = """\
extern "C" __global__ void __launch_bounds__(1024, 2) spills(const float* x, float* y, int n)
{
    float acc[64];
#pragma unroll
    for (int j = 0; j < 64; ++j) acc[j] = x[j];
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = x[i];
#pragma unroll
        for (int j = 0; j < 64; ++j) acc[j] = fmaf(acc[j], v, (float)j);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 64; ++j) s += acc[j] * (float)(j + 1);
    y[threadIdx.x] = s;
}
"""

# 32 x 33 floats of static shared memory: 4224 bytes.
SHARED_TILE = """\
extern "C" __global__ void transpose_tile(const float* in, float* out, int w, int h)
{
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    if (x < w && y < h) tile[threadIdx.y][threadIdx.x] = in[y * w + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    if (x < h && y < w) out[y * h + x] = tile[threadIdx.x][threadIdx.y];
}
"""

# Parameters of every size: pointer, int, double, char, short, a 20-byte struct, long long.
PARAMS = """\
struct Five { float v[5]; };
extern "C" __global__ void params(float* p, int i, double d, char c, short s) {}
extern "C" __global__ void by_value(Five f, long long q) {}
extern "C" __global__ void none() {}
"""

HALF_SHORTCUT = """\
#include <cuda_fp16.h>
extern "C" __global__ void add_half(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = __half2float(__hadd(__float2half(a[i]), __float2half(b[i])));
}
"""

# `calls` counts launches in a __device__ global (the caching cheat's building block); `lut` is a
# read-only table, which is no cheat.
DEVICE_GLOBALS = """\
__device__ int calls;
__device__ const float lut[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__device__ float cache[64];
extern "C" __global__ void counted(float* a) { atomicAdd(&calls, 1); a[threadIdx.x] = lut[threadIdx.x & 3]; }
extern "C" __global__ void remember(const float* a) { float* p = cache + (threadIdx.x & 63); *p = a[threadIdx.x]; }
extern "C" __global__ void reads(float* a) { a[threadIdx.x] = cache[threadIdx.x & 63]; printf("%f\\n", a[0]); }
"""

# 2^18 distinct instantiations summed by a fold: 2^14 already takes NVRTC 20 s (13.0 and 13.5
# alike), and the time grows faster than the count. Template depth stays at 18, under EDG's limit.
TEMPLATE_BOMB = """\
template <int... I> struct Seq { using twice = Seq<I..., (int(sizeof...(I)) + I)...>; };
template <int N> struct Pow2 { using type = typename Pow2<N - 1>::type::twice; };
template <> struct Pow2<0> { using type = Seq<0>; };
template <int N> struct V { static constexpr int v = N % 7; };
template <class S> struct Sum;
template <int... I> struct Sum<Seq<I...>> { static constexpr int v = (V<I>::v + ... + 0); };
extern "C" __global__ void bomb(int* out) { *out = Sum<Pow2<18>::type>::v; }
"""

# A 131 MB string literal from 17 doublings of a 1000-character one: past 1 GiB within 3 s, where
# NVRTC reports "out of memory" or NVVM aborts.
MEMORY_BOMB = (
    '#define S0 "'
    + "a" * 1000
    + '"\n'
    + "".join(f"#define S{i} S{i - 1} S{i - 1}\n" for i in range(1, 18))
    + "__device__ const char s[] = S17;\n"
    + 'extern "C" __global__ void bomb(char* out) { out[threadIdx.x] = s[threadIdx.x * 4096]; }\n'
)
