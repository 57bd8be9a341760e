"""The judge's checks after validation, each with a test that fails without it (the mutants named
in docs/testing.md): a failed re-check after timing and a time under the physical floor never stay
"correct", an output left as poisoned as the validator made it is wrong, the default suspect share
flags a time 5% under the physical floor, a task's tolerance refuses the shortcut it names, and
the poison the validator writes is the one the comparison recognises as never written."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from fakes.fake_gpu import FAKE_PEAKS_SLOW, RECHECK_FAILURE, FakeGpu, fake_environment

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.compare import compare_output
from cuda_llm.engine.gpu.protocol import Timing
from cuda_llm.engine.gpu.validate import poison
from cuda_llm.engine.judge.judgement import Candidate, Judgement
from cuda_llm.engine.judge.metrics import figures
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.reference import load_reference

KERNEL = (
    'extern "C" __global__ void vadd_{marker}(const float* a, const float* b, float* c, int n)'
    " { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }"
)


@pytest.fixture(scope="module")
def task():
    return TaskLibrary().get("vector_add")


async def judged(task, marker: str) -> Judgement:
    """vector_add's baseline under another kernel name, judged to the end by the real judge on the fake GPU."""
    plan = dataclasses.replace(
        task.baseline_plan,
        launches=tuple(dataclasses.replace(la, kernel=f"vadd_{marker}") for la in task.baseline_plan.launches),
    )
    env = fake_environment(FakeGpu())
    try:
        judge = env.judge(task, Settings())
        return await judge.judge(Candidate(f"r1-{marker}", KERNEL.replace("{marker}", marker), plan))
    finally:
        await env.close()


async def test_the_control_is_correct_and_timed(task):
    """The same kernel under a plain name: what the checks below change is theirs alone."""
    j = await judged(task, "plain")
    assert j.status == "correct" and j.timing is not None and j.timing.median_us == 50.0
    assert j.figures is not None and j.figures.suspect is None


async def test_a_failed_recheck_after_timing_is_wrong(task):
    j = await judged(task, "recheck")
    assert j.validation is not None and j.validation.verdict == "correct"  # it passed validation...
    assert j.status == "wrong"  # ...and is wrong all the same: its timed runs were not honest
    assert j.message == RECHECK_FAILURE
    assert j.timing is not None and j.timing.state_check == RECHECK_FAILURE


async def test_a_time_under_the_physical_floor_is_suspect(task):
    j = await judged(task, "us1")
    assert j.figures is not None and j.figures.physical_floor_us > 1.0  # 18 us on the fake's peaks
    assert j.status == "suspect"
    assert any("below the physical floor" in w for w in j.warnings)


async def test_an_output_left_poisoned_is_wrong_and_said_so(task):
    j = await judged(task, "unwritten")
    assert j.status == "wrong" and j.timing is None
    assert "never written" in j.message
    assert j.validation is not None and all(c.unwritten == c.checked for c in j.validation.cases)


def test_five_percent_under_the_physical_floor_is_suspect_by_default(task):
    """The default share leaves room for measurement noise (a few percent), not for 5%: no honest
    kernel is timed 5% under what the memory can move at all."""
    nbytes, _ = task.bytes_and_flops(task.timing)
    floor_us = nbytes / FAKE_PEAKS_SLOW.bandwidth_physical * 1e6
    t = floor_us * 0.95
    timing = Timing("r1-1", t, t * 0.99, t * 1.01, t * 0.98, 50, 0, "events", 1, None)
    fig = figures(task, timing, FAKE_PEAKS_SLOW, None, Settings().profile.suspect_physical_share)
    assert fig.physical_share == pytest.approx(1 / 0.95)
    assert fig.suspect is not None


@pytest.mark.parametrize("n", [1000, 65537])
def test_vector_adds_tolerance_refuses_an_fp16_sum_and_takes_the_fp32_one(task, n):
    """task.toml: one fp32 rounding passes; "an fp16 shortcut (relative error ~5e-4) fails"."""
    case = next(c for c in task.validation if c.as_dict()["n"] == n)
    ref = load_reference(task)
    inputs = ref.inputs(case, 1)
    expected = ref.outputs(inputs, case)["c"]
    fp32 = inputs["a"] + inputs["b"]
    fp16 = (inputs["a"].astype(np.float16) + inputs["b"].astype(np.float16)).astype(np.float32)
    assert compare_output("c", expected, fp32, task.tolerance).passed
    shortcut = compare_output("c", expected, fp16, task.tolerance)
    assert shortcut.wrong > n // 2


class _Memory:
    """The two fills the validator's poison() uses, into host memory (no GPU needed)."""

    def fill16(self, buf: np.ndarray, value: int) -> None:
        buf.view(np.uint16)[:] = value

    def fill32(self, buf: np.ndarray, value: int) -> None:
        buf.view(np.uint32)[:] = value


@pytest.mark.parametrize("dtype", sorted(d for d in DTYPES if DTYPES[d].poison is not None))
def test_the_poison_written_is_the_poison_recognised(dtype):
    """Every element poison() fills counts as never written in the comparison, whatever the
    expected values (zeros included: an output poisoned with 0 would pass where 0 is expected)."""
    np_dtype = DTYPES[dtype].numpy
    buf = np.ones(64, dtype=np_dtype)
    poison(_Memory(), buf, dtype)  # type: ignore[arg-type]
    expected = np.zeros(64)
    exact = dataclasses.replace(TaskLibrary().get("vector_add").tolerance, scale="exact", rtol=0.0, atol=0.0)
    result = compare_output("out", expected, buf, exact, dtype=dtype)
    assert (result.wrong, result.unwritten) == (64, 64)


@pytest.mark.parametrize(
    ("name", "peak", "physical"),
    [
        ("matmul", FAKE_PEAKS_SLOW.fp32_flops, FAKE_PEAKS_SLOW.fp32_physical),
        # The tensor cores' rate is a datasheet figure: the achievable and the physical floor agree.
        ("gemm_fp16", FAKE_PEAKS_SLOW.fp16_tensor_flops, FAKE_PEAKS_SLOW.fp16_tensor_flops),
    ],
)
def test_a_compute_bound_task_is_floored_by_its_own_unit(name, peak, physical):
    """Each unit's rate sets the floor of the tasks that use it (the mutation run found no test of a
    compute-bound floor: vector_add is memory-bound, so a wrong unit changed nothing there)."""
    gemm = TaskLibrary().get(name)
    nbytes, flops = gemm.bytes_and_flops(gemm.timing)
    assert flops / peak > nbytes / FAKE_PEAKS_SLOW.bandwidth  # compute-bound on these peaks
    t = 2 * flops / physical * 1e6  # twice the physical floor: honest, not suspect
    timing = Timing("r1-1", t, t * 0.99, t * 1.01, t * 0.98, 50, 0, "events", 1, None)
    fig = figures(gemm, timing, FAKE_PEAKS_SLOW, None, Settings().profile.suspect_physical_share)
    assert fig.bound == "compute"
    assert fig.floor_us == pytest.approx(flops / peak * 1e6)
    assert fig.physical_floor_us == pytest.approx(flops / physical * 1e6)
    assert fig.physical_share == pytest.approx(0.5) and fig.suspect is None


def test_a_memory_bound_task_is_floored_by_the_bandwidth(task):
    nbytes, _ = task.bytes_and_flops(task.timing)
    t = 1000.0
    timing = Timing("r1-1", t, t * 0.99, t * 1.01, t * 0.98, 50, 0, "events", 1, None)
    fig = figures(task, timing, FAKE_PEAKS_SLOW, timing)
    assert (fig.bytes, fig.flops) == task.bytes_and_flops(task.timing)
    assert fig.bound == "memory"
    assert fig.floor_us == pytest.approx(nbytes / FAKE_PEAKS_SLOW.bandwidth * 1e6)
    assert fig.physical_floor_us == pytest.approx(nbytes / FAKE_PEAKS_SLOW.bandwidth_physical * 1e6)
    assert fig.speedup == 1.0


def test_a_task_without_a_compute_unit_is_floored_by_its_bytes_alone():
    """histogram names no unit (peak = "none"): its flops set no floor, however many it counts."""
    hist = TaskLibrary().get("histogram")
    nbytes, _ = hist.bytes_and_flops(hist.timing)
    t = 1000.0
    timing = Timing("r1-1", t, t * 0.99, t * 1.01, t * 0.98, 50, 0, "events", 1, None)
    fig = figures(hist, timing, FAKE_PEAKS_SLOW, None)
    assert fig.bound == "memory"
    assert fig.floor_us == pytest.approx(nbytes / FAKE_PEAKS_SLOW.bandwidth * 1e6)


def test_without_the_setting_any_time_under_the_physical_floor_is_suspect(task):
    """figures()'s own default (callers pass the setting) is the physical floor itself."""
    nbytes, _ = task.bytes_and_flops(task.timing)
    t = nbytes / FAKE_PEAKS_SLOW.bandwidth_physical * 1e6 / 1.5
    timing = Timing("r1-1", t, t * 0.99, t * 1.01, t * 0.98, 50, 0, "events", 1, None)
    suspect = figures(task, timing, FAKE_PEAKS_SLOW, None).suspect
    assert suspect is not None and suspect.endswith("a measurement error or a kernel that skips work")


def test_without_peaks_or_a_time_there_is_no_share_and_no_suspicion(task):
    """No ceilings known: the bound is named memory and no share is made up; a zero median (no
    time measured) divides nothing."""
    blank = Timing("r1-1", 0.0, 0.0, 0.0, 0.0, 0, 0, "events", 1, None)
    for peaks in (None, FAKE_PEAKS_SLOW):
        fig = figures(task, blank, peaks, None)
        assert (fig.roofline_share, fig.physical_share, fig.gbps, fig.suspect) == (0.0, 0.0, 0.0, None)
    assert figures(task, blank, None, None).bound == "memory"
    fig = figures(task, blank, FAKE_PEAKS_SLOW, blank)
    assert (fig.gflops, fig.speedup) == (0.0, None)


def test_the_achieved_rates_the_speedup_and_the_levels_are_the_timings_own(task):
    """Half a microsecond (a tiny task's time): rates over the task's minimal bytes and flops, the
    baseline's median over this one, and the two latency levels passed through as measured."""
    from cuda_llm.engine.gpu.protocol import LatencyLevel

    nbytes, flops = task.bytes_and_flops(task.timing)
    levels = (LatencyLevel(0.45, 0.5, 1980.0), LatencyLevel(0.55, 0.5, 1755.0))
    t = 0.5
    timing = Timing("r1-1", t, t, t, t, 50, 0, "events", 1, None, levels=levels)
    base = Timing("baseline", 2.0, 2.0, 2.0, 2.0, 50, 0, "events", 1, None)
    fig = figures(task, timing, FAKE_PEAKS_SLOW, base)
    assert fig.gbps == pytest.approx(nbytes / 0.5e-6 / 1e9, rel=1e-12)
    assert fig.gflops == pytest.approx(flops / 0.5e-6 / 1e9, rel=1e-12)
    assert fig.speedup == 4.0
    assert fig.levels == levels
