"""The validator's two runs of each case, and what its report says, on a real GPU.

Each validation case runs the candidate twice (engine/gpu/validate.py): the first run's outputs are
compared with the reference on the device, the second run's with the first's, bit for bit. A kernel
that is right once and wrong the next time must be wrong whichever run is the bad one. These tests
were written for the survivors of the GPU mutation run (docs/testing.md): the mutants that checked
only one of the two runs, and those that changed the report's phases, mismatches, patterns and
summary, passed every GPU test before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re

import pytest
from gpu_session import TEST_LAUNCH_TIMEOUT_S

from cuda_llm.engine.core.settings import Settings, ValidationSettings
from cuda_llm.engine.fsr.judging import open_environment
from cuda_llm.engine.judge.judgement import Candidate
from cuda_llm.engine.task import TaskLibrary

pytestmark = pytest.mark.gpu

# A vector_add whose every other launch adds 1 to each element. Thread 0 of each block reads the
# launch count, then takes a ticket; the block that takes the launch's last ticket resets the
# tickets and counts the launch, after every block of the launch has read the count. The validator
# launches the candidate twice per case, so the bad launch is the first or the second run of every
# case, by WRONG_PARITY.
ALTERNATING = """
__device__ unsigned int tickets;
__device__ unsigned int launches;

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    __shared__ unsigned int launch;
    if (threadIdx.x == 0) {
        launch = *(volatile unsigned int*)&launches;
        __threadfence();
        if (atomicAdd(&tickets, 1u) == gridDim.x - 1) {
            tickets = 0;
            __threadfence();
            atomicAdd(&launches, 1u);
        }
    }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i] + ((launch & 1u) == WRONG_PARITY ? 1.0f : 0.0f);
}
"""

# Wrong in the first three elements only, at every size: every case fails, with few mismatches each.
FIRST_THREE_WRONG = (
    'extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)'
    " { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i] + (i < 3 ? 1.0f : 0.0f); }"
)

# Right at every validation size (n up to about 2^20), wrong from element 2^24 on: only the timing
# size (n = 2^25), validated last, shows it.
WRONG_WHEN_LARGE = (
    'extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)'
    " { int i = blockIdx.x * blockDim.x + threadIdx.x;"
    " if (i < n) c[i] = a[i] + b[i] + (i >= (1 << 24) ? 1.0f : 0.0f); }"
)

# Blocks of at most 128 threads by the kernel's own declaration, which the baseline's plan (blocks of
# 256) breaks: nothing before the GPU can tell (the compile's figures do not carry the kernel's own
# block limit), so the worker refuses it as it prepares the first launch.
BOUNDED_TO_128 = (
    'extern "C" __global__ void __launch_bounds__(128) vector_add(const float* a, const float* b, float* c, int n)'
    " { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }"
)

PHASES = {"reference", "upload", "allocate", "run", "device checks", "compare"}


def test_a_kernel_right_on_its_first_run_and_wrong_on_its_second_is_wrong(gpu):
    j = gpu.judge("vector_add", ALTERNATING.replace("WRONG_PARITY", "1u"), label="second_run_wrong")
    assert j.status == "wrong", j.message
    first = j.validation.cases[0]
    assert not first.passed and first.problem is not None
    # The first run matched the reference; the second is described, with why such a thing happens.
    assert first.problem.startswith("two runs on the same inputs differ: the second run leaves 1 element(s) of 'c'")
    assert first.problem.endswith("(a race, or a read of memory nothing wrote, e.g. uninitialised shared memory)")


def test_a_kernel_wrong_on_its_first_run_and_right_on_its_second_is_wrong(gpu):
    j = gpu.judge("vector_add", ALTERNATING.replace("WRONG_PARITY", "0u"), label="first_run_wrong")
    assert j.status == "wrong", j.message
    first = j.validation.cases[0]
    assert not first.passed
    assert first.wrong == first.checked == 1, "the first run's output, not the second's, is what is judged"
    assert first.problem == (
        "results also differ between two runs on the same inputs ('c'): a race or a read of uninitialised memory"
    )


def test_a_correct_validation_reports_where_its_time_went(gpu):
    j = gpu.judge("vector_add")
    assert j.status == "correct", j.message
    report = j.validation
    assert set(report.phases_s) == PHASES
    assert all(s >= 0 for s in report.phases_s.values())
    assert report.elapsed_s > 0
    assert report.elapsed_s >= 0.9 * sum(report.phases_s.values())
    # Every element of every case checked, none wrong and none left unwritten (an unwritten count on a
    # correct case would tell the model, and the user, of a fault that is not there).
    assert all(c.passed and c.checked > 0 and c.wrong == 0 and c.unwritten == 0 for c in report.cases), report.cases


def test_a_failure_is_reported_within_its_caps(gpu):
    """Fifteen failing cases of 1 or 3 wrong elements: the mismatches stop at the setting (8) and
    the patterns at four, in the order of the cases; the timing size is skipped and said to be."""
    j = gpu.judge("vector_add", FIRST_THREE_WRONG, label="first_three_wrong")
    assert j.status == "wrong", j.message
    report = j.validation
    assert set(report.phases_s) == PHASES | {"download"}, "a failure is described from its downloaded outputs"
    assert len(report.cases) == 15, "the timing size is not run once a case failed"
    assert all(not c.passed for c in report.cases)
    assert gpu.settings.validation.mismatches_reported == 8
    assert [(m.case, m.index) for m in report.mismatches] == [
        ("n=1 seed 0", (0,)),
        ("n=1 seed 1", (0,)),
        ("n=1 seed 2", (0,)),
        ("n=3 seed 0", (0,)),
        ("n=3 seed 0", (1,)),
        ("n=3 seed 0", (2,)),
        ("n=3 seed 1", (0,)),
        ("n=3 seed 1", (1,)),
    ]
    # Each seed draws inputs of its own: three seeds at n=1, three different sums.
    assert len({m.expected for m in report.mismatches[:3]}) == 3, report.mismatches[:3]
    assert list(report.patterns) == [
        "every element is wrong at n=3 seed 0",
        "every element is wrong at n=3 seed 1",
        "every element is wrong at n=3 seed 2",
        "the first 3 elements are wrong at n=1000 seed 0",
    ]
    assert report.summary == "wrong in 15 of 15 cases; first: n=1 seed 0: 1 of 1 elements wrong; 1 larger case not run"


def in_process_worker(gpu, label: str, source: str | None = None):
    """A GPU worker's state in this process (its arena's figures readable) and a request to validate
    `source` (vector_add's baseline by default), compiled, with it: handle_validate(state, request)
    runs what the worker process would. The caller unpins state.refs at the end."""
    from cuda_llm.engine.gpu.protocol import ValidateRequest
    from cuda_llm.engine.gpu.worker_process import WorkerState
    from cuda_llm.engine.judge.judgement import Candidate, Compiled

    task = gpu.task("vector_add")
    judge = gpu.env.judge(task, gpu.settings)
    compiled = gpu.run(judge.compile(Candidate(label, source or task.baseline_source, task.baseline_plan)))
    assert isinstance(compiled, Compiled)
    return WorkerState(0, gpu.settings), ValidateRequest(str(task.folder), compiled.program())


def test_a_validation_gives_back_every_buffer_it_took(gpu):
    """Validated twice in one worker, the same program takes no new device memory the second time:
    after a case every buffer goes back to the arena (engine/gpu/arena.py) for the next request of
    its size. A validation that kept its buffers would leak them, round after round, until the
    GPU ran out of memory."""
    from cuda_llm.engine.gpu.worker_process import handle_validate

    state, request = in_process_worker(gpu, "gives-back")
    stats = state.ctx.arena.stats
    try:
        first = handle_validate(state, request).result
        assert first.verdict == "correct", first.summary
        taken, reused = stats.allocated, stats.reused
        second = handle_validate(state, request).result
        assert second.verdict == "correct", second.summary
    finally:
        state.refs.unpin_all()  # the cache's arrays are freed with it: never while page-locked
    assert stats.allocated == taken, f"{stats.allocated - taken} buffers allocated again"
    assert stats.reused > reused


def test_a_comparison_that_fails_gives_back_its_buffers(gpu, monkeypatch):
    """A comparison on the device that raises a CUDA error the context survives (an out-of-memory, say)
    still wipes and frees what it uploaded, the float64 expected values above all: kept, they would
    leak, and the next candidate could find them in the arena's memory."""
    from cuda_llm.engine.gpu.driver import CudaError
    from cuda_llm.engine.gpu.harness import Harness
    from cuda_llm.engine.gpu.worker_process import handle_validate

    state, request = in_process_worker(gpu, "fails-to-compare")
    stats = state.ctx.arena.stats
    real_compare = Harness.compare

    def out_of_memory(*args, **kwargs):
        raise CudaError("CUDA_ERROR_OUT_OF_MEMORY", "cuLaunchKernel")

    try:
        assert handle_validate(state, request).result.verdict == "correct"
        taken = stats.allocated
        monkeypatch.setattr(Harness, "compare", out_of_memory)
        failed = handle_validate(state, request)
        assert "CUDA_ERROR_OUT_OF_MEMORY" in repr(failed), "the comparison's error is what the worker reports"
        monkeypatch.setattr(Harness, "compare", real_compare)
        assert handle_validate(state, request).result.verdict == "correct"
    finally:
        state.refs.unpin_all()
    assert stats.allocated == taken, f"{stats.allocated - taken} buffers allocated again: the comparison kept them"


def test_a_wrong_output_of_several_is_named_in_its_patterns(gpu):
    """black_scholes writes two outputs: a candidate that leaves the last 3 elements of `put` unwritten
    is described per output, each pattern led by the output's name (one output needs no name)."""
    src = gpu.task("black_scholes").baseline_source.replace("    put[i] =", "    if (i < n - 3) put[i] =")
    j = gpu.judge("black_scholes", src, label="put_short")
    assert j.status == "wrong", j.message
    patterns = j.validation.patterns
    assert patterns and all(p.startswith("put: ") for p in patterns), patterns
    assert any("the last 3 elements are unwritten" in p for p in patterns), patterns


# Two kernels that read dynamic shared memory nothing wrote, each right only for one fill of it: all
# zero bits (a carry taken to start at 0) and all one bits (a memo of ints taken to start negative,
# "nothing stored"; the scrub varies a few low bits from word to word, never the sign). The
# validator runs each case twice, after a scrub of shared memory with two different patterns
# (ValidationSettings.scrub_patterns), so whichever fill a kernel needs, a run finds garbage. The
# plan asks for 192 KiB of dynamic shared memory: the SMs keep the scrub's L1/shared split, so what
# the kernel reads is what the scrub left.
ASSUMES_ZEROED_SHARED = """
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    extern __shared__ float carry[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i] + carry[threadIdx.x];
}
"""
ASSUMES_ALL_ONES_SHARED = """
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    extern __shared__ int memo[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = memo[threadIdx.x] < 0 ? a[i] + b[i] : __int_as_float(memo[threadIdx.x]);
}
"""
BIG_SHARED_PLAN = {
    "launches": [
        {
            "kernel": "vector_add",
            "grid": ["cdiv(n, 256)"],
            "block": [256],
            "shared_bytes": 192 * 1024,
            "args": ["a", "b", "c", "n"],
        }
    ]
}


@pytest.mark.parametrize("source", [ASSUMES_ZEROED_SHARED, ASSUMES_ALL_ONES_SHARED], ids=["zeroed", "all-ones"])
def test_a_kernel_that_needs_its_shared_memory_filled_one_way_is_wrong(gpu, source):
    j = gpu.judge("vector_add", source, plan=BIG_SHARED_PLAN, label="uninitialised_shared")
    assert j.status == "wrong", j.message


def test_a_kernel_wrong_only_at_the_timing_size_is_wrong_there_and_says_so(gpu):
    """The timing size is validated too (last): a failure there is reported as that case's, and the
    summary does not say the timing size was skipped, as it does when an earlier case failed."""
    j = gpu.judge("vector_add", WRONG_WHEN_LARGE, label="wrong_when_large")
    assert j.status == "wrong", j.message
    report = j.validation
    assert [c.label for c in report.cases if not c.passed] == ["timing n=33554432 seed 0"], report.cases
    first = "first: timing n=33554432 seed 0"  # and nothing after what was wrong
    summary = rf"wrong in 1 of {len(report.cases)} cases; {first}: \d+ of 33554432 elements wrong"
    assert re.fullmatch(summary, report.summary), report.summary


def test_a_block_over_the_kernel_s_own_limit_is_a_launch_error_in_the_plan_s_words(gpu):
    """The refusal comes from preparing the launch, before the case's buffers were used: what the user
    reads is the plan's fault and how to mend it, and the case's clean-up (which gives the buffers
    back) must not raise over it. The worker then judges the next candidate as before."""
    j = gpu.judge("vector_add", BOUNDED_TO_128, label="bounded_to_128")
    assert j.status == "launch_error", j.message
    assert "a block of 256 threads is more than this kernel can launch (128)" in j.message, j.message
    assert gpu.judge("vector_add", label="after_bounded").status == "correct"


def test_a_second_candidate_of_a_task_uploads_no_input(gpu, monkeypatch):
    """A worker uploads a case's inputs and its float64 expected values once and fills each candidate's
    buffers, and each comparison's, from those copies on the device (engine/gpu/input_masters.py,
    expected_vault.py): at vector_add's timing size that is 268 MB across PCIe, twice, that the second
    candidate, and every one after it, does not wait for."""
    import numpy as np

    from cuda_llm.engine.gpu.worker_process import handle_validate

    state, request = in_process_worker(gpu, "uploads-once")
    real_upload = state.ctx.upload
    uploaded: list[np.dtype] = []

    def counted(buf, host):
        uploaded.append(np.asarray(host).dtype)
        real_upload(buf, host)

    try:
        assert handle_validate(state, request).result.verdict == "correct"
        assert state.vault is not None, "no vault on this GPU (the driver has no virtual memory management)"
        held = state.vault.uploads
        monkeypatch.setattr(state.ctx, "upload", counted)
        assert handle_validate(state, request).result.verdict == "correct"
    finally:
        state.refs.unpin_all()
    assert uploaded == [], f"uploaded again: {sorted(map(str, set(uploaded)))}"
    assert held > 0 and state.vault.uploads == held, "the vault put the expected values there again"


WRITES_ITS_INPUT = (
    'extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)'
    " { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { c[i] = a[i] + b[i]; ((float*)b)[i] = 0.0f; } }"
)


@pytest.mark.parametrize("source", [None, WRITES_ITS_INPUT], ids=["baseline", "writes-its-input"])
def test_a_worker_with_no_room_for_device_copies_uploads_and_judges_alike(gpu, monkeypatch, source):
    """Where a case's inputs are over the masters' budget, or the driver has no virtual memory
    management for the vault, a worker uploads the inputs and the expected values for each candidate
    and checks the inputs against a copy made on the device: the verdicts are those of a worker that
    keeps them there. (Every other GPU test runs with both copies kept.)"""
    import numpy as np

    from cuda_llm.engine.gpu.worker_process import handle_validate

    state, request = in_process_worker(gpu, "no-room", source)
    state.inputs = None
    state.vault = None
    real_upload = state.ctx.upload
    uploaded: list[np.dtype] = []

    def counted(buf, host):
        uploaded.append(np.asarray(host).dtype)
        real_upload(buf, host)

    monkeypatch.setattr(state.ctx, "upload", counted)
    try:
        result = handle_validate(state, request).result
    finally:
        state.refs.unpin_all()
    assert np.dtype(np.float32) in uploaded, "the inputs were not uploaded"
    assert np.dtype(np.float64) in uploaded, "the expected values were not uploaded"
    if source is None:
        assert result.verdict == "correct", result.summary
        assert result.cases and all(c.passed for c in result.cases)
    else:
        assert result.verdict == "wrong", result.summary
        assert "wrote to input 'b'" in (result.cases[0].problem or ""), result.cases[0]


def _judged_with_windows(candidates: list[tuple[str, str]]) -> list:
    """`candidates` judged by a worker of its own that describes every failing output from a window
    (ValidationSettings.describe_whole_max_bytes = 0), as it does outputs too large for the host."""
    validation = dataclasses.replace(
        ValidationSettings(), launch_timeout_s=TEST_LAUNCH_TIMEOUT_S, describe_whole_max_bytes=0
    )
    settings = Settings(validation=validation)
    task = TaskLibrary().get("vector_add")

    async def judge_all() -> list:
        env = await open_environment(settings)
        try:
            judge = env.judge(task, settings)
            cands = [Candidate(label, src, task.baseline_plan, origin="user") for label, src in candidates]
            return [await judge.judge(c) for c in cands]
        finally:
            await env.close()

    return asyncio.run(judge_all())


def test_a_failure_described_from_a_window_lists_what_the_whole_output_lists(gpu):
    """An output too large for the host is described from the device's counts and a window from its
    first wrong element (engine/gpu/failure_window.py): the verdict, the counts and the first
    mismatches are those of the whole output brought to the host; the second run's failure is found
    on the device too; a correct kernel is still correct."""
    candidates = [
        ("first_three", FIRST_THREE_WRONG),
        ("wrong_when_large", WRONG_WHEN_LARGE),
        ("second_run_wrong", ALTERNATING.replace("WRONG_PARITY", "1u")),
        ("baseline", gpu.task("vector_add").baseline_source),
    ]
    windowed = _judged_with_windows(candidates)
    for (label, source), w in zip(candidates, windowed, strict=True):
        whole = gpu.judge("vector_add", source, label=label)
        assert w.status == whole.status, (label, w.message, whole.message)
        if whole.status == "correct":
            continue
        pairs = list(zip(w.validation.cases, whole.validation.cases, strict=True))
        for a, b in pairs:
            assert (a.label, a.passed, a.checked, a.wrong, a.unwritten, a.problem) == (
                b.label,
                b.passed,
                b.checked,
                b.wrong,
                b.unwritten,
                b.problem,
            ), label
        assert w.validation.mismatches == whole.validation.mismatches, label
        assert w.validation.summary == whole.validation.summary, label
    # Each case's pattern is tagged with the case (validate.py); the window's come from the device's counts.
    assert "the first 3 elements (flat) are wrong at n=1000 seed 0" in windowed[0].validation.patterns, windowed[0]
    large = windowed[1].validation
    assert large.patterns == ("the last 16777216 elements (flat) are wrong at timing n=33554432 seed 0",), large
