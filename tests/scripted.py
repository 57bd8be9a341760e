"""Scripted model replies for loop and UI tests: a correct vector_add kernel with its plan, a broken
one, and helpers that stream them in chunks from the loopback server."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

from llm_servers import Reply

GOOD_KERNEL = """extern "C" __global__ void vadd4(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < n) {
        float4 x = *reinterpret_cast<const float4*>(a + i);
        float4 y = *reinterpret_cast<const float4*>(b + i);
        *reinterpret_cast<float4*>(c + i) = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    } else {
        for (int j = i; j < n; ++j) c[j] = a[j] + b[j];
    }
}"""
GOOD_PLAN = {
    "launches": [{"kernel": "vadd4", "grid": ["cdiv(cdiv(n, 4), 256)"], "block": [256], "args": ["a", "b", "c", "n"]}]
}
BROKEN_KERNEL = GOOD_KERNEL.replace("float4 y =", "float4 y = undefined_thing +")


def reply(kernel: str = GOOD_KERNEL, plan: dict | None = GOOD_PLAN, note: str = "Vectorised loads.") -> str:
    text = f"{note}\n\n```cuda\n{kernel}\n```\n"
    if plan is not None:
        text += f"\n```json\n{json.dumps(plan)}\n```\n"
    return text


def chunked(text: str, size: int = 40) -> Reply:
    return Reply.text(*[text[i : i + size] for i in range(0, len(text), size)])


def numbered(text: str) -> Callable[[object], Reply]:
    """A responder (`server.default`) whose every reply is another program: the reply `text` with a
    comment that numbers it on its kernel's first line. The same reply twice would be a repeat,
    which the loop does not judge again (engine/fsr/repeats.py)."""
    count = itertools.count(1)
    return lambda _request: chunked(numbered_once(text, next(count)))


def numbered_once(text: str, n: int) -> str:
    """The reply `text` with `// reply N` on its kernel's first line: another program than `text`."""
    return text.replace("```cuda\n", f"```cuda\n// reply {n}\n", 1)


TAIL_UNWRITTEN_KERNEL = GOOD_KERNEL.replace("for (int j = i; j < n; ++j) c[j] = a[j] + b[j];", "")

FAST_REDUCTION = """__device__ float block_sum(float acc)
{
    __shared__ float warp_sums[32];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    acc = 0.0f;
    if (warp == 0) {
        acc = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    }
    return acc;
}

extern "C" __global__ void partial_sums(const float* __restrict__ x, float* __restrict__ partial, int n)
{
    const float4* x4 = reinterpret_cast<const float4*>(x);
    int n4 = n / 4;
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
        float4 v = x4[i];
        acc += (v.x + v.y) + (v.z + v.w);
    }
    if (blockIdx.x == 0 && threadIdx.x < n - 4 * n4) acc += x[4 * n4 + threadIdx.x];
    acc = block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

extern "C" __global__ void final_sum(const float* __restrict__ partial, float* __restrict__ out, int count)
{
    float acc = 0.0f;
    for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partial[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) out[0] = acc;
}"""
FAST_REDUCTION_PLAN = {
    "scratch": [{"name": "partial", "dtype": "float32", "count": "min(cdiv(n, 1024), 1056)"}],
    "launches": [
        {"kernel": "partial_sums", "grid": ["min(cdiv(n, 1024), 1056)"], "block": [256], "args": ["x", "partial", "n"]},
        {"kernel": "final_sum", "grid": [1], "block": [1024], "args": ["partial", "out", "min(cdiv(n, 1024), 1056)"]},
    ],
}
RACY_REDUCTION = FAST_REDUCTION.replace("    __syncthreads();\n    acc = 0.0f;", "    acc = 0.0f;")
