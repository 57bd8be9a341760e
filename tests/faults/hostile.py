"""Hostile and broken candidates for the GPU fault suite: each a vector_add (or reduction) kernel that
a model could write, with the verdict the harness must reach."""

from __future__ import annotations

from dataclasses import dataclass

SIG = 'extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)'
BODY = "{ int i = blockIdx.x * blockDim.x + threadIdx.x; %s }"
PLAN = {"launches": [{"kernel": "vector_add", "grid": ["cdiv(n, 256)"], "block": [256], "args": ["a", "b", "c", "n"]}]}


def vadd(body: str, signature: str = SIG, prelude: str = "") -> str:
    return prelude + signature + BODY % body


@dataclass(frozen=True)
class Hostile:
    name: str  # the row in docs/reliability.md
    group: str  # "kernels" or "cheats"
    source: str
    expect: str  # the verdict
    error: str | None = None  # the CUDA error name, for crashes
    plan: dict | None = None
    expected_text: str = ""  # the 'expected' cell


CASES: tuple[Hostile, ...] = (
    Hostile(
        "illegal address (read)",
        "kernels",
        vadd("if (i < n) c[i] = a[i + (1ll << 40)];"),
        "crashed",
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        expected_text="crashed: CUDA_ERROR_ILLEGAL_ADDRESS; worker restarted",
    ),
    Hostile(
        "misaligned access",
        "kernels",
        vadd("if (i < n) { c[i] = a[i] + b[i]; *reinterpret_cast<float4*>(c + 1) = make_float4(0, 0, 0, 0); }"),
        "crashed",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        expected_text="crashed: CUDA_ERROR_MISALIGNED_ADDRESS; worker restarted",
    ),
    Hostile(
        "assert failure in device code",
        "kernels",
        vadd("assert(n < 0); if (i < n) c[i] = a[i] + b[i];"),
        "crashed",
        "CUDA_ERROR_ASSERT",
        expected_text="crashed: CUDA_ERROR_ASSERT; worker restarted",
    ),
    Hostile(
        "stack overflow through deep recursion",
        "kernels",
        vadd(
            "if (i < n) c[i] = a[i] + b[i] + deep(n + 100000, a);",
            prelude="__device__ float deep(int d, const float* p) { volatile float pad[64]; pad[d & 63] = p[0];"
            " return d <= 0 ? pad[3] * 0.0f : deep(d - 1, p) + pad[d & 63] * 0.0f; }\n",
        ),
        "crashed",
        None,
        expected_text="crashed (a stack error or illegal address); worker restarted",
    ),
    Hostile(
        "a 2-second kernel",
        "kernels",
        vadd(
            "if (n == 1 && i == 0) { long long t0 = clock64(); while (clock64() - t0 < 4000000000ll) { } }"
            " if (i < n) c[i] = a[i] + b[i];"
        ),
        "correct",
        expected_text="judged normally (under the hang limit): correct",
    ),
    Hostile(
        "grid over the limit",
        "kernels",
        vadd("if (i < n) c[i] = a[i] + b[i];"),
        "launch_error",
        plan={
            "launches": [
                {"kernel": "vector_add", "grid": ["cdiv(n, 256)", 70000], "block": [256], "args": ["a", "b", "c", "n"]}
            ]
        },
        expected_text="launch error naming the limit; nothing launched",
    ),
    Hostile(
        "register-spilling kernel",
        "kernels",
        """extern "C" __global__ void __launch_bounds__(1024, 2)
vector_add(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[64];
#pragma unroll
    for (int k = 0; k < 64; ++k) acc[k] = a[(i + 37 * k) % n] * (k + 1);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 64; ++k) s += acc[k] * acc[63 - k] + acc[(k * 7) % 64];
    if (i < n) c[i] = a[i] + b[i] + s * 0.0f;
}
""",
        "correct",
        expected_text="correct, with a note that it spills registers",
    ),
    Hostile(
        "printf a million times",
        "kernels",
        vadd('if (i < n) { c[i] = a[i] + b[i]; if (i < 1000000) printf("element %d is %f\\n", i, c[i]); }'),
        "correct",
        expected_text="judged normally (printed bytes noted), or timed out when printing outlasts the launch "
        "limit; the output never reaches the worker's protocol; next candidate correct",
    ),
    Hostile(
        "kernel named like a harness symbol",
        "kernels",
        'extern "C" __global__ void harness_scrub_shared(const float* a, const float* b, float* c, int n)'
        + BODY % "if (i < n) c[i] = a[i] + b[i];",
        "correct",
        plan={
            "launches": [
                {
                    "kernel": "harness_scrub_shared",
                    "grid": ["cdiv(n, 256)"],
                    "block": [256],
                    "args": ["a", "b", "c", "n"],
                }
            ]
        },
        expected_text="judged normally: its own module, no clash",
    ),
    Hostile(
        "shape-specialised code (right only at the timing size)",
        "cheats",
        vadd("if (n == 33554432 && i < n) c[i] = a[i] + b[i];"),
        "wrong",
        expected_text="wrong at the small and odd sizes",
    ),
    Hostile(
        "reading shared memory left over from an earlier launch",
        "cheats",
        vadd(
            "__shared__ float memo[256]; if (i < n) { float prev = memo[threadIdx.x];"
            " memo[threadIdx.x] = a[i] + b[i]; c[i] = (prev == prev) ? prev : a[i] + b[i]; }"
        ),
        "wrong",
        expected_text="wrong (the scrub leaves garbage between runs)",
    ),
    Hostile(
        "caching results in a __device__ global between runs",
        "cheats",
        vadd(
            "if (i < n && !done) c[i] = a[i] + b[i]; __syncthreads(); if (i == n - 1) done = 1;",
            prelude="__device__ int done = 0;\n",
        ),
        "wrong",
        expected_text="wrong (the second run leaves outputs unwritten); flagged for writing a global",
    ),
)
