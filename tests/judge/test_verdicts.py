"""What the judge makes of the GPU's answers: a validated judgement plus the profiler's timing becomes
the final verdict (status, message, warnings, where it ran), a timing session that fails is retried
or blamed on its culprit, and the vendor library's figure says why it is missing when it is.

The real compiler compiles every program; the GPU is the fake one (tests/fakes/fake_gpu.py) with a
script on top: failures to answer the next profiling requests with, timings to replace or drop, and
fields to set on its reports."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest
from fakes.fake_gpu import FAKE_DEVICE, FAKE_PEAKS_SLOW, FakeGpu, fake_environment

from cuda_llm.engine.compile.result import DeviceGlobal
from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.client import ProfileFailure
from cuda_llm.engine.gpu.library import LIBRARY_LABEL, library_name
from cuda_llm.engine.gpu.protocol import Fault, LatencyLevel, RanOn, Timing, ValidationReport
from cuda_llm.engine.gpu.torch_compile import TORCH_COMPILE_LABEL
from cuda_llm.engine.judge.judge import Judge, compile_warnings, describe_timing
from cuda_llm.engine.judge.judgement import Candidate, Compiled, Judgement, LibraryResult
from cuda_llm.engine.judge.metrics import Figures
from cuda_llm.engine.task import TaskLibrary

KERNEL = (
    'extern "C" __global__ void vadd_{marker}(const float* a, const float* b, float* c, int n)'
    " {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }}"
)
# The message of an honest 50 us vector_add on the fake GPU (baseline 100 us, FAKE_PEAKS_SLOW).
AT_50_US = (
    "correct; 50.0 us (IQR 1.0), 2.00x the baseline, 40% of the achievable roofline (memory-bound), "
    "37% of the physical limit"
)
SUSPECT_1_US = (
    "measured 1.0 us is below the physical floor of 18.3 us (1830% of what the hardware can do at all): "
    "a measurement error or a kernel that skips work"
)
OLD_SUSPICION = "measured 2.0 us is below the physical floor of 18.3 us (915% of what the hardware can do at all)"
PRINTF = "the kernel printed 12 bytes (printf slows kernels down)"
WORKER_KILLED = "the worker process was killed (signal 9)"
HOST = RanOn("host-a", 0, FAKE_DEVICE.name, FAKE_DEVICE.uuid)
CLUSTER_NODE = RanOn("host-b", 1, FAKE_DEVICE.name, FAKE_DEVICE.uuid, node_id="5f3a2b1c9d8e7f60")


def timing(label: str, us: float, **fields) -> Timing:
    return Timing(label, us, us * 0.99, us * 1.01, us * 0.98, 50, 0, "events", 1, 1980.0, **fields)


@dataclass
class ScriptedGpu(FakeGpu):
    """The fake GPU, with answers a test sets: the next profiling requests fail with `failures` in
    turn, `timings` replaces (or with None drops) the timing of a label, and `report` / `validation`
    set fields on every profiling / validation report."""

    failures: list[Fault] = field(default_factory=list)
    timings: dict[str, Timing | None] = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    validation: dict = field(default_factory=dict)
    events: tuple[str, ...] | None = None  # what take_events() answers, where the pool has it

    async def validate(self, task, program) -> ValidationReport:
        return dataclasses.replace(await super().validate(task, program), **self.validation)

    async def profile(self, task, programs, library: bool = False, torch_compile: bool = False):
        if self.failures:
            self.profiled.append(tuple(p.label for p in programs))
            return ProfileFailure(self.failures.pop(0))
        rep = await super().profile(task, programs, library)
        timings = [self.timings.get(t.label, t) for t in rep.timings]
        have = {t.label for t in rep.timings}
        timings += [t for label, t in self.timings.items() if label not in have]
        if not torch_compile:
            timings = [t for t in timings if t is None or t.label != TORCH_COMPILE_LABEL]
        return dataclasses.replace(rep, timings=tuple(t for t in timings if t is not None), **self.report)

    async def torch_compile(self, task) -> str | None:
        return None  # compiled: the next profile(torch_compile=True) times it

    def __getattr__(self, name: str):
        if name == "take_events" and self.events is not None:
            return lambda: self.events
        raise AttributeError(name)


@pytest.fixture(scope="module")
def task():
    return TaskLibrary().get("vector_add")


@pytest.fixture
async def gpu_judge(task):
    gpu = ScriptedGpu()
    env = fake_environment(gpu)
    try:
        yield gpu, env.judge(task, Settings())
    finally:
        await env.close()


async def compiled(judge: Judge, label: str, marker: str, source: str | None = None) -> Compiled:
    task = judge.task
    plan = dataclasses.replace(
        task.baseline_plan,
        launches=tuple(dataclasses.replace(la, kernel=f"vadd_{marker}") for la in task.baseline_plan.launches),
    )
    c = await judge.compile(Candidate(label, source or KERNEL.format(marker=marker), plan))
    assert isinstance(c, Compiled), c
    return c


async def validated(judge: Judge, label: str, marker: str) -> tuple[Compiled, Judgement]:
    c = await compiled(judge, label, marker)
    j = await judge.validate(c)
    assert j.status == "correct", j
    return c, j


def by_label(judgements) -> dict[str, Judgement]:
    return {j.label: j for j in judgements}


# ---- a timing becomes the verdict -----------------------------------------------------------


async def test_an_honest_timing_makes_the_verdict_and_says_the_figures(gpu_judge):
    _gpu, judge = gpu_judge
    rt = await judge.profile([await validated(judge, "c50", "us50")])
    (j,) = rt.judgements
    assert j.status == "correct" and j.message == AT_50_US
    assert j.timing is not None and j.timing.median_us == 50.0 and j.figures.speedup == 2.0
    assert j.device == FAKE_DEVICE.name, "one GPU: its name, with no worker number"
    assert rt.device == FAKE_DEVICE.name and rt.baseline is not None and rt.baseline.median_us == 100.0


async def test_a_program_without_a_timing_is_a_launch_error_where_it_ran(gpu_judge):
    gpu, judge = gpu_judge
    gpu.timings["c60"] = None
    gpu.report["ran_on"] = HOST
    rt = await judge.profile([await validated(judge, "c50", "us50"), await validated(judge, "c60", "us60")])
    by = by_label(rt.judgements)
    assert by["c60"].status == "launch_error" and by["c60"].message == "timing failed: no timing"
    assert by["c60"].ran_on == HOST and by["c60"].timing is None
    assert by["c50"].status == "correct" and by["c50"].ran_on == HOST


async def test_a_timing_that_faulted_is_a_launch_error_with_the_faults_message(gpu_judge):
    gpu, judge = gpu_judge
    gpu.validation["ran_on"] = HOST  # validated there; the timing session says nothing of where
    fault = Fault("launch_error", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch")
    gpu.timings["c60"] = timing("c60", 60.0, fault=fault)
    rt = await judge.profile([await validated(judge, "c60", "us60")])
    (j,) = rt.judgements
    assert j.status == "launch_error" and j.message == "timing failed: too many resources requested for launch"
    assert j.ran_on == HOST, "where it was validated stays known"


async def test_a_suspect_timed_again_honestly_is_correct_and_loses_the_old_suspicion(gpu_judge):
    _gpu, judge = gpu_judge
    c, j = await validated(judge, "c50", "us50")
    j = dataclasses.replace(j, status="suspect", warnings=(OLD_SUSPICION, PRINTF))
    (timed,) = (await judge.profile([(c, j)])).judgements
    assert timed.status == "correct" and timed.message == AT_50_US
    assert timed.warnings == (PRINTF,), "the old 'measured ...' line goes, the others stay"


async def test_a_time_under_the_physical_floor_adds_the_suspicion_to_the_warnings(gpu_judge):
    gpu, judge = gpu_judge
    gpu.validation["printf_bytes"] = 12
    c, j = await validated(judge, "c1", "us1")
    assert j.warnings == (PRINTF,)
    (timed,) = (await judge.profile([(c, j)])).judgements
    assert timed.status == "suspect"
    assert timed.warnings == (PRINTF, SUSPECT_1_US)


async def test_on_a_cluster_the_verdict_names_the_gpu_and_its_node(gpu_judge):
    gpu, judge = gpu_judge
    gpu.report["ran_on"] = CLUSTER_NODE
    best = await validated(judge, "c70", "us70")
    rt = await judge.profile([await validated(judge, "c50", "us50")], anchor=best)
    (j,) = rt.judgements
    assert j.device == "Fake H100 #1 on host-b (node 5f3a2b1c)" and j.ran_on == CLUSTER_NODE
    assert rt.ran_on == CLUSTER_NODE
    assert rt.anchor is not None and rt.anchor.device == j.device and rt.anchor.ran_on == CLUSTER_NODE
    assert rt.anchor.figures.speedup == 100.0 / 70.0, "the best is compared with the baseline timed beside it"
    assert rt.anchors == {"c50": rt.anchor.timing}


async def test_off_a_cluster_the_verdict_names_the_gpu(gpu_judge):
    gpu, judge = gpu_judge
    gpu.report["ran_on"] = HOST
    best = await validated(judge, "c70", "us70")
    rt = await judge.profile([await validated(judge, "c50", "us50")], anchor=best)
    (j,) = rt.judgements
    assert j.device == FAKE_DEVICE.name and j.ran_on == HOST
    assert rt.anchor is not None and rt.anchor.device == FAKE_DEVICE.name and rt.anchor.ran_on == HOST


async def test_once_torch_compile_is_timed_every_figure_carries_its_speedup(task):
    imported = dataclasses.replace(task, pytorch_module="model.py")
    gpu = ScriptedGpu(timings={TORCH_COMPILE_LABEL: timing(TORCH_COMPILE_LABEL, 80.0)})
    env = fake_environment(gpu)
    try:
        judge = env.judge(imported, Settings())
        tc = await judge.torch_compile()
        assert tc.timing is not None and tc.timing.median_us == 80.0
        (j,) = (await judge.profile([await validated(judge, "c50", "us50")])).judgements
    finally:
        await env.close()
    assert j.figures.torch_compile_speedup == 80.0 / 50.0
    assert j.message.startswith("correct; 50.0 us (IQR 1.0), 2.00x eager, 1.60x torch.compile, ")


# ---- a timing session that fails --------------------------------------------------------------


@pytest.mark.parametrize("interruptions", [1, 2])
async def test_an_interrupted_session_is_timed_again(gpu_judge, interruptions):
    gpu, judge = gpu_judge
    gpu.failures = [Fault("crashed", "WORKER_DIED", WORKER_KILLED)] * interruptions
    rt = await judge.profile([await validated(judge, "c50", "us50")])
    assert rt.notes == (f"timing was interrupted ({WORKER_KILLED}); timed again",) * interruptions
    assert gpu.profiled == [("baseline", "c50")] * (interruptions + 1)
    (j,) = rt.judgements
    assert j.status == "correct" and j.timing is not None and j.message == AT_50_US


async def test_a_fault_in_the_baseline_is_an_interruption_not_a_candidates_crash(gpu_judge):
    gpu, judge = gpu_judge
    gpu.failures = [Fault("crashed", "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access", case="baseline")]
    rt = await judge.profile([await validated(judge, "c50", "us50")])
    assert rt.notes == ("timing was interrupted (an illegal memory access); timed again",)
    assert [j.status for j in rt.judgements] == ["correct"]


async def test_a_session_interrupted_again_and_again_leaves_the_programs_untimed(gpu_judge):
    gpu, judge = gpu_judge
    gpu.failures = [Fault("crashed", "WORKER_DIED", WORKER_KILLED)] * 3
    c, j = await validated(judge, "c50", "us50")
    rt = await judge.profile([(c, j)])
    assert len(gpu.profiled) == 3, "timed again twice, then given up"
    assert rt.notes == (f"timing was interrupted ({WORKER_KILLED}); timed again",) * 3
    assert rt.device == FAKE_DEVICE.name and rt.baseline is None
    (untimed,) = rt.judgements
    assert untimed.status == "correct" and untimed.message == j.message and untimed.timing is None
    assert untimed.warnings == (f"could not be timed: {WORKER_KILLED}",)


async def test_without_a_device_an_untimed_session_names_no_gpu(task):
    gpu = ScriptedGpu(failures=[Fault("crashed", "WORKER_DIED", WORKER_KILLED)] * 3)
    env = fake_environment(gpu)
    try:
        judge = Judge(task, env.compiler, gpu, "sm_90", Settings(), device=None, peaks=FAKE_PEAKS_SLOW)
        rt = await judge.profile([await validated(judge, "c50", "us50")])
    finally:
        await env.close()
    assert rt.device == "?" and rt.judgements[0].timing is None


@pytest.mark.parametrize(("kind", "status"), [("launch_error", "crashed"), ("timed_out", "timed_out")])
async def test_a_program_that_brings_the_session_down_is_blamed_and_the_rest_timed_again(gpu_judge, kind, status):
    gpu, judge = gpu_judge
    gpu.failures = [Fault(kind, "CUDA_ERROR_X", "it brought the worker down", case="c60")]
    rt = await judge.profile([await validated(judge, "c50", "us50"), await validated(judge, "c60", "us60")])
    assert gpu.profiled == [("baseline", "c50", "c60"), ("baseline", "c50")]
    assert [j.label for j in rt.judgements] == ["c50", "c60"]
    timed, culprit = rt.judgements
    assert timed.status == "correct" and timed.message == AT_50_US
    assert culprit.status == status and culprit.message == "while being timed: it brought the worker down"
    assert culprit.candidate is not None and culprit.candidate.label == "c60"
    assert rt.notes == ()


async def test_a_culprit_stays_blamed_when_the_rest_cannot_be_timed(gpu_judge):
    gpu, judge = gpu_judge
    gpu.failures = [Fault("crashed", "CUDA_ERROR_X", "it brought the worker down", case="c60")]
    gpu.failures += [Fault("crashed", "WORKER_DIED", WORKER_KILLED)] * 3
    rt = await judge.profile([await validated(judge, "c50", "us50"), await validated(judge, "c60", "us60")])
    assert [(j.label, j.status) for j in rt.judgements] == [("c50", "correct"), ("c60", "crashed")]
    assert rt.judgements[0].warnings == (f"could not be timed: {WORKER_KILLED}",)
    assert rt.judgements[1].message == "while being timed: it brought the worker down"
    assert len(rt.notes) == 3 and rt.baseline is None


async def test_the_sessions_notes_phases_and_the_pools_events_reach_the_round(gpu_judge):
    gpu, judge = gpu_judge
    gpu.report.update(
        throttle_note="the SM clock throttled", busy_note="another process used the GPU", phases_s={"time": 1.5}
    )
    gpu.events = ("GPU 2 on host-b was lost",)
    rt = await judge.profile([await validated(judge, "c50", "us50")])
    assert rt.notes == ("the SM clock throttled", "another process used the GPU", "GPU 2 on host-b was lost")
    assert rt.profile_phases_s == ({"time": 1.5},)
    assert rt.device == FAKE_DEVICE.name and rt.baseline is not None and rt.baseline.median_us == 100.0


async def test_the_round_says_where_it_was_timed(gpu_judge):
    gpu, judge = gpu_judge
    gpu.report["ran_on"] = HOST
    rt = await judge.profile([await validated(judge, "c50", "us50")])
    assert rt.ran_on == HOST and rt.notes == () and rt.profile_phases_s == ({},)


# ---- validation ---------------------------------------------------------------------------------

GLOBAL_WRITER = (
    '__device__ int calls;\nextern "C" __global__ void vadd_{marker}(const float* a, const float* b, float* c, int n)'
    " {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; if (i == 0) calls++; }}"
)


async def test_without_a_gpu_a_program_is_compiled_and_bound_only(task):
    env = fake_environment()
    try:
        judge = Judge(task, env.compiler, None, "sm_90", Settings())
        c = await compiled(judge, "c50", "us50")
        j = await judge.validate(c)
    finally:
        await env.close()
    assert (j.label, j.status, j.message) == ("c50", "compiled", "compiled and bound (no GPU: not run)")
    assert j.candidate is c.candidate and j.compile is c.compile and j.warnings == ()
    assert j.validation is None and j.ran_on is None


async def test_validation_keeps_the_compile_warnings_and_adds_printfs(gpu_judge):
    gpu, judge = gpu_judge
    gpu.validation.update(printf_bytes=12, ran_on=HOST)
    c = await compiled(judge, "g1", "us50", GLOBAL_WRITER.format(marker="us50"))
    j = await judge.validate(c)
    assert j.status == "correct" and j.message.startswith("correct in all ")
    assert j.warnings == (
        "writes __device__ global variables (calls): results must not be kept between runs",
        PRINTF,
    )
    assert j.candidate is c.candidate and j.compile is c.compile and j.validation is not None
    assert j.device == FAKE_DEVICE.name and j.ran_on == HOST


async def test_without_a_gpu_the_compile_warnings_are_kept(task):
    env = fake_environment()
    try:
        judge = Judge(task, env.compiler, None, "sm_90", Settings())
        j = await judge.validate(await compiled(judge, "g1", "us50", GLOBAL_WRITER.format(marker="us50")))
    finally:
        await env.close()
    assert j.warnings == ("writes __device__ global variables (calls): results must not be kept between runs",)


async def test_compile_warnings_name_reduced_precision_globals_and_spills(gpu_judge):
    _gpu, judge = gpu_judge
    base = (await compiled(judge, "c50", "us50")).compile
    assert compile_warnings(judge.task, base) == (), "a plain fp32 kernel: nothing to say"
    k = base.kernels[0]
    result = dataclasses.replace(
        base,
        precision_hints=("__half", "__float2half"),
        device_globals=(
            DeviceGlobal("calls", 4, True),
            DeviceGlobal("table", 64, False),
            DeviceGlobal("seen", 4, True),
        ),
        kernels=(
            dataclasses.replace(k, name="k_store", spill_store_bytes=8, spill_load_bytes=0),
            dataclasses.replace(k, name="k_load", spill_store_bytes=0, spill_load_bytes=4),
            dataclasses.replace(k, name="k_clean", spill_store_bytes=0, spill_load_bytes=0),
        ),
    )
    assert compile_warnings(judge.task, result) == (
        "uses reduced precision on an fp32 task: __half, __float2half",
        "writes __device__ global variables (calls, seen): results must not be kept between runs",
        "kernel k_store spills registers (8 bytes stored, 0 loaded)",
        "kernel k_load spills registers (0 bytes stored, 4 loaded)",
    )
    fp16 = TaskLibrary().get("gemm_fp16")
    assert fp16.roofline.peak != "fp32"
    assert compile_warnings(fp16, dataclasses.replace(base, precision_hints=("__half",))) == ()


# ---- the baseline ---------------------------------------------------------------------------------


async def test_the_baseline_is_compiled_once_as_the_baseline(gpu_judge):
    _gpu, judge = gpu_judge
    b = await judge.baseline()
    assert b.candidate.origin == "baseline" and b.candidate.label == "baseline"
    assert await judge.baseline() is b


async def test_a_baseline_that_does_not_compile_says_where(task):
    broken = dataclasses.replace(task, baseline_source=task.baseline_source + "\nthis is not C++;\n")
    env = fake_environment()
    try:
        with pytest.raises(UserError) as err:
            await env.judge(broken, Settings()).baseline()
    finally:
        await env.close()
    text = str(err.value)
    assert text.startswith(f"{task.folder / 'baseline.cu'}:")
    assert "the baseline of task 'vector_add' does not compile (compile error: " in text
    assert text.endswith(f"--plan {task.folder / 'baseline.json'} --compile-only` shows it all")


# ---- the vendor library ---------------------------------------------------------------------------


async def library_of(task, **script) -> LibraryResult:
    gpu = ScriptedGpu(**script)
    env = fake_environment(gpu)
    try:
        return await env.judge(task, Settings()).library()
    finally:
        await env.close()


async def test_a_library_session_that_fails_says_why(task):
    result = await library_of(task, failures=[Fault("crashed", "WORKER_DIED", WORKER_KILLED)])
    assert result.name == library_name(task) and result.timing is None
    assert result.note == f"could not be timed: {WORKER_KILLED}"


async def test_a_library_without_a_timing_keeps_the_workers_name_and_note(task):
    result = await library_of(task, report={"library_name": "CuPy add (as run)", "library_note": "no CuPy here"})
    assert (result.name, result.note, result.timing) == ("CuPy add (as run)", "no CuPy here", None)
    result = await library_of(task, report={"library_name": None, "library_note": None})
    assert (result.name, result.note) == (library_name(task), "not timed")


async def test_a_library_timing_that_faulted_gives_the_faults_message(task):
    fault = Fault("launch_error", "CUDA_ERROR_X", "the library call failed")
    result = await library_of(task, timings={LIBRARY_LABEL: timing(LIBRARY_LABEL, 30.0, fault=fault)})
    assert (result.name, result.note, result.device) == (library_name(task), "the library call failed", "Fake H100")
    assert result.timing is None


async def test_a_library_result_that_fails_the_recheck_has_no_figure(task):
    t = timing(LIBRARY_LABEL, 30.0, state_check="the outputs differ")
    result = await library_of(task, timings={LIBRARY_LABEL: t})
    assert result.name == library_name(task) and result.device == "Fake H100" and result.timing is None
    assert result.note == "its result failed validation against the reference: the outputs differ"


async def test_a_timed_library_gets_figures_against_the_baseline_beside_it(task):
    # 18 us is 102% of vector_add's 18.3 us physical floor on these peaks: within the default
    # setting's allowance (103%), so not suspect.
    script = {"timings": {LIBRARY_LABEL: timing(LIBRARY_LABEL, 18.0)}, "report": {"library_name": "CuPy add"}}
    result = await library_of(task, **script)
    assert result.name == "CuPy add" and result.device == "Fake H100" and result.note is None
    assert result.timing is not None and result.timing.median_us == 18.0
    assert result.figures.speedup == 100.0 / 18.0
    assert result.figures.physical_floor_us == pytest.approx(18.3, abs=0.01) and result.figures.suspect is None


# ---- the one-line message -------------------------------------------------------------------------


def test_a_bimodal_timing_shows_both_levels():
    levels = (LatencyLevel(763.2, 0.47, 1980.0), LatencyLevel(833.1, 0.53, 1755.0))
    fig = Figures(
        median_us=800.0,
        iqr_us=40.0,
        bytes=1,
        flops=0,
        gbps=0.0,
        gflops=0.0,
        floor_us=400.0,
        bound="compute",
        roofline_share=0.5,
        speedup=1.25,
        suspect=None,
        physical_floor_us=360.0,
        physical_share=0.45,
        levels=levels,
    )
    assert describe_timing(fig) == (
        "correct; 800.0 us (IQR 40.0), 1.25x the baseline, 50% of the achievable roofline (compute-bound), "
        "45% of the physical limit, "
        "two levels: 763.2 us (47% of samples, SM 1980 MHz) and 833.1 us (53%, SM 1755 MHz) "
        "(the median depends on the mix)"
    )
    bare = dataclasses.replace(fig, speedup=None, floor_us=0.0, physical_floor_us=0.0, levels=())
    assert describe_timing(bare) == "correct; 800.0 us (IQR 40.0)"
