"""On the GPU: an imported task's cases are made, kept and compared on the device
(engine/gpu/device_cases.py), and the cheats that keeping them could invite are still refused: a
kernel that leaves its output to whatever earlier runs left in memory (eager's, the correct reply's,
the reference's), and one that computes for validation and then returns results cached from earlier
runs. The first is refused at the smallest case, with the larger cases not run."""

from __future__ import annotations

import pytest

from cuda_llm.engine.judge.judgement import Candidate
from cuda_llm.engine.task.plan import parse_plan

from .conftest import REPLIES

pytestmark = pytest.mark.gpu

TASK = "elementwise_gelu"
PLAN = {
    "launches": [
        {
            "kernel": "gelu",
            "grid": ["cdiv(batch_size * features, 256)"],
            "block": [256],
            "args": ["x", "out", "batch_size * features"],
        }
    ]
}
WRITES_NOTHING = 'extern "C" __global__ void gelu(const float* x, float* out, int n) { }\n'
# Right for the first THRESHOLD launches (validation's), then it returns at once: what the timed runs
# leave in the output stays there, as if a result were cached between runs.
CACHES_AFTER = """
__device__ unsigned long long launches_seen;

extern "C" __global__ void gelu(const float* __restrict__ x, float* __restrict__ out, int n)
{
    if (launches_seen >= THRESHOLD) return;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
    if (i == 0) atomicAdd(&launches_seen, 1ull);
}
"""


def _judge(gpu, task, label: str, source: str, profile: bool):
    judge = gpu.env.judge(task, gpu.settings)
    return gpu.run(judge.judge(Candidate(label, source, parse_plan(PLAN), origin="user"), profile=profile))


def test_a_kernel_that_leaves_its_output_to_stale_memory_is_refused_at_the_smallest_case(gpu, imported):
    task = gpu.task(str(imported[TASK]))
    judge = gpu.env.judge(task, gpu.settings)
    assert gpu.run(judge.baseline_judgement()).status == "correct"  # eager ran and was timed here
    reply = judge.parse("right", (REPLIES / f"{TASK}.md").read_text(encoding="utf-8"), origin="user")
    assert gpu.run(judge.judge(reply, profile=True)).status == "correct"  # so did a correct kernel
    j = _judge(gpu, task, "writes_nothing", WRITES_NOTHING, profile=True)
    assert j.status == "wrong", j.message
    report = j.validation
    assert report is not None and all(c.unwritten == c.checked for c in report.cases), report.cases
    limit = gpu.settings.validation.after_failure_max_bytes
    large = sum(c.seeds for c in task.validation if task.buffer_bytes(c) > limit)
    assert large and report.not_run == large, (report.not_run, large)
    assert report.summary.endswith(f"; {large} larger cases not run"), report.summary
    print(f"refused in {report.elapsed_s:.2f} s: {report.summary}")


@pytest.mark.parametrize("after", ["two launches", "validation"])
def test_a_kernel_that_caches_its_result_across_runs_is_refused(gpu, imported, after):
    """Right for its first launches, then it returns at once, leaving whatever earlier runs left in the
    output. Its launch counter is a __device__ variable, which the judge puts back before every run
    that must be independent (engine/gpu/device_state.py): so it is either refused (validation poisons
    the next case's outputs; the check after timing brings new inputs) or it never reaches its
    threshold and is timed doing the whole work, no faster than the honest kernel (call C of session
    19 on an H200: the 'validation' variant was judged correct at 56.7 us, the honest kernel's time)."""
    task = gpu.task(str(imported[TASK]))
    validation_launches = 2 * sum(c.seeds for c in task.validation)  # each case runs twice
    threshold = 2 if after == "two launches" else validation_launches
    j = _judge(gpu, task, f"caches_after_{threshold}", CACHES_AFTER.replace("THRESHOLD", str(threshold)), profile=True)
    print(f"{after}: {j.message}")
    if j.status == "wrong":
        if j.validation is not None and j.validation.passed:
            assert j.timing is not None and j.timing.state_check, j.message
        return
    assert j.status == "correct" and j.timing is not None, j.message
    honest = _judge(gpu, task, "honest", CACHES_AFTER.replace("THRESHOLD", str(2**62)), profile=True)
    assert honest.status == "correct" and honest.timing is not None, honest.message
    # The cheat's path returns at once; timed on it, it would take a small share of the honest time.
    assert j.timing.median_us > 0.8 * honest.timing.median_us, (j.message, honest.message)
