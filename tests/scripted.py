"""Scripted model replies for loop and UI tests: a correct vector_add kernel with its plan, a broken
one, and helpers that stream them in chunks from the loopback server."""

from __future__ import annotations

import json

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
