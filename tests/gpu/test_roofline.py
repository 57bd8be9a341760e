"""The roofline on a real GPU: the fastest honest kernels are correct, never "suspect"; our probes
reach at least what the best of them reaches; and a kernel that skips work is still refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_llm.engine.contract.reply import parse_reply

pytestmark = pytest.mark.gpu

HELDOUT = Path(__file__).resolve().parents[2] / "bench" / "heldout"


def heldout(gpu, name: str, task: str):
    reply = parse_reply((HELDOUT / f"{name}.md").read_text())
    return gpu.judge(task, reply.source, reply.plan, profile=True, label=name)


def test_the_physical_limits_come_from_the_device(gpu):
    peaks, info = gpu.env.peaks, gpu.env.device
    assert peaks is not None
    expected = info.memory_clock_mhz * 1e6 * 2 * info.memory_bus_bits / 8
    assert peaks.bandwidth_physical == pytest.approx(expected)
    assert 0.5 * peaks.bandwidth_physical < peaks.bandwidth < peaks.bandwidth_physical, "achievable sits under physical"
    assert 0.5 * peaks.fp32_physical < peaks.fp32_flops <= 1.01 * peaks.fp32_physical
    print(
        f"{info.name}: bandwidth {peaks.bandwidth / 1e12:.3f} TB/s achievable, {peaks.bandwidth_physical / 1e12:.3f} "
        f"physical; fp32 {peaks.fp32_flops / 1e12:.1f} / {peaks.fp32_physical / 1e12:.1f} TFLOP/s; {peaks.method}"
    )


@pytest.mark.parametrize(
    ("name", "task"),
    [
        ("vector_add_float4", "vector_add"),
        ("reduction_sum_two_pass", "reduction_sum"),
        ("matrix_transpose_tiled", "matrix_transpose"),
    ],
)
def test_the_fastest_honest_memory_bound_kernels_are_correct_not_suspect(gpu, name, task):
    j = heldout(gpu, name, task)
    assert j.status == "correct", j.message
    fig = j.figures
    assert fig is not None and fig.suspect is None, fig
    assert fig.physical_share <= 1.0, f"{name}: {fig.physical_pct:.1f}% of the physical limit"
    # Our probes are the achievable ceiling: no honest kernel beats them by more than the noise.
    assert fig.roofline_share <= 1.02, f"{name}: {fig.roofline_pct:.1f}% of the achievable roofline"
    print(f"{name}: {fig.median_us:.1f} us, {fig.roofline_pct:.1f}% achievable, {fig.physical_pct:.1f}% physical")


def test_a_kernel_that_skips_half_its_work_at_the_timing_size_is_refused(gpu):
    """Right at every small size, half the work at the timing size: the validator's pass at the
    timing size refuses it, and it is never timed into a best."""
    task = gpu.task("vector_add")
    big = dict(task.timing.values)["n"]
    source = (HELDOUT / "vector_add_float4.md").read_text()
    reply = parse_reply(source)
    lazy = reply.source.replace(
        "int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;",
        f"int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;\n    if (n >= {big} && i >= n / 2) return;",
    )
    assert lazy != reply.source
    j = gpu.judge("vector_add", lazy, reply.plan, profile=True)
    assert j.status != "correct", j.message
    assert j.timing is None
