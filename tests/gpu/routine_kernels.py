"""The kernels and the small task of tests/gpu/test_routine_checks.py, kept apart from the tests so
that a CPU test can compile each against its task with NVRTC (no GPU needed to prove the CUDA)."""

from __future__ import annotations

import shutil
from pathlib import Path

from cuda_llm.engine.task import TaskLibrary

# vector_add that puts each pair of inputs in order (a[i] <= b[i]) after adding them. The sum is the
# same either way round (IEEE addition commutes exactly), and a second run finds the pairs in order
# and writes them back unchanged: both runs give the same right answer, so only the check that the
# inputs are unchanged after the runs can fail it.
SORTS_ITS_INPUTS = """
extern "C" __global__ void vector_add(float* a, float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i], y = b[i];
        c[i] = x + y;
        a[i] = fminf(x, y);
        b[i] = fmaxf(x, y);
    }
}
"""

# vector_add that remembers which inputs it has seen (a fingerprint: n, a[0], b[n-1]) and answers
# inputs it saw before, other than the last ones, with a "cached" result (one more than the sum).
# Validation shows it new inputs case after case, and each case's second run repeats the last ones:
# always right. Timing repeats one set of inputs: always right. The re-check after timing brings
# back the inputs validation saw at the timing size: wrong, and only that check can say so. Thread 0
# of each block reads the table before taking a ticket; the block that takes the launch's last
# ticket records the fingerprint, after every block has read the table (as ALTERNATING does in
# tests/gpu/test_validation_runs.py).
REMEMBERS_ITS_INPUTS = """
#define SEEN 64
__device__ unsigned int tickets;
__device__ unsigned int seen_count;
__device__ unsigned long long seen[SEEN];

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    __shared__ int stale;
    if (threadIdx.x == 0) {
        unsigned long long f = ((unsigned long long)__float_as_uint(a[0]) << 32)
            ^ (unsigned long long)__float_as_uint(b[n - 1]) ^ ((unsigned long long)n * 0x9E3779B97F4A7C15ull);
        volatile unsigned long long* table = seen;
        unsigned int count = *(volatile unsigned int*)&seen_count;
        int known = 0;
        for (unsigned int k = 0; k < count && k < SEEN; ++k) known |= table[k] == f;
        int latest = count > 0 && table[(count - 1) % SEEN] == f;
        stale = known && !latest;
        __threadfence();
        if (atomicAdd(&tickets, 1u) == gridDim.x - 1) {
            tickets = 0;
            if (!latest) table[count % SEEN] = f;
            __threadfence();
            if (!latest) atomicAdd(&seen_count, 1u);
        }
    }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i] + (stale ? 1.0f : 0.0f);
}
"""

# vector_add's timing size for the graph-mode test: 2^23 elements, 100 MB moved (twice an H100's or
# H200's L2, so replays in a row do not run from the cache), about 25 us on an H200: under
# ProfileSettings.graph_threshold_us (50 us), so the profiler times it as a CUDA graph of K replays.
SHORT_N = 1 << 23


def short_vector_add(root: Path) -> Path:
    """vector_add with a timing size of SHORT_N (a copy under `root`)."""
    folder = root / "short" / "vector_add"
    shutil.copytree(TaskLibrary().get("vector_add").folder, folder)
    toml = (folder / "task.toml").read_text()
    assert "timing = { n = 33554432 }" in toml, "vector_add's task.toml changed; update this helper"
    (folder / "task.toml").write_text(toml.replace("timing = { n = 33554432 }", f"timing = {{ n = {SHORT_N} }}"))
    return folder
