"""No figure from a run nobody checked (issue 43, items 1-4), on a real GPU.

Each cheat (tests/judge_cheats.py) is timed twice by the worker's own profiler in this process: once
with `independent_runs` off, the profiler as it was before these defences (the positive control: the
cheat really wins there, so the test can see it), and once as the judge runs it. Its honest twin is
timed both ways too (the negative control: it passes and keeps its time within noise). The cheats
are also judged end to end through the GPU worker, as a round judges them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from judge_cheats import (
    CACHED_MATMUL,
    CACHED_MATMUL_PLAN,
    HONEST_MATMUL,
    HONEST_STRIDE_VADD,
    HONEST_VADD,
    HUGE_GLOBAL_VADD,
    MATMUL_PLAN,
    MODEST_GLOBAL_VADD,
    POISON_KEYED_STRIDE_VADD,
    STRIDE_VADD_PLAN,
    TAMPERING_VADD,
    VADD_PLAN,
    paused_matmul,
)

from cuda_llm.engine.contract.limits import ModuleMemory
from cuda_llm.engine.gpu.protocol import ProfileReport, Timing
from cuda_llm.engine.judge.judgement import Candidate, Compiled
from cuda_llm.engine.task.model import SizeCase
from cuda_llm.engine.task.plan import parse_plan

pytestmark = pytest.mark.gpu

# Two profiles of the same honest kernel agree within 2% (tests/gpu/test_timing.py); a cheat that no
# longer wins is timed at least this share of its honest twin.
NOISE = 0.03
# The positive control: where the hole is open, the cheat takes at most this share of the honest time.
CHEAT_WINS_UNDER = 0.6
# matmul at this size (M = N = K) does tens of microseconds of work in 576 blocks; with the graph threshold
# raised to GRAPH_EVERY_US it is timed as a CUDA graph of replays whatever its time.
GRAPH_SIZE = 384
GRAPH_EVERY_US = 10_000.0

Programs = dict[str, tuple[str, dict]]  # label -> (source, plan)
Profile = Callable[..., ProfileReport]


@pytest.fixture(scope="module")
def profile(gpu) -> Iterator[Profile]:
    """profile(task, {label: (source, plan)}, independent=bool, trusted=(labels), hook=fn) -> report:
    the programs compiled by the judge, loaded here, and timed together by the worker's profiler
    (two placements each) with `independent_runs` as asked. `hook(profiler, modules, cubins)` may
    wrap the profiler before it runs."""
    from cuda_llm.engine.gpu.device_state import DeviceState
    from cuda_llm.engine.gpu.profile import Profiler
    from cuda_llm.engine.gpu.worker_process import WorkerState

    state = WorkerState(0, gpu.settings)

    def run(
        task_name,
        programs: Programs,
        independent: bool = True,
        trusted=(),
        hook=None,
        graph_under_us: float | None = None,
    ) -> ProfileReport:
        task = gpu.task(task_name) if isinstance(task_name, str) else task_name
        judge = gpu.env.judge(task, gpu.settings)
        compiled: dict[str, Compiled] = {}
        for label, (source, plan) in programs.items():
            result = gpu.run(judge.compile(Candidate(label, source, parse_plan(plan), origin="user")))
            assert isinstance(result, Compiled), result.message
            compiled[label] = result
        vsettings = dataclasses.replace(gpu.settings.validation, independent_runs=independent)
        psettings = dataclasses.replace(gpu.settings.profile, placements=2)
        if graph_under_us is not None:
            psettings = dataclasses.replace(psettings, graph_threshold_us=graph_under_us)
        profiler = Profiler(state.ctx, state.info, state.harness, state.refs, state.nvml, psettings, vsettings)
        cubins = {label: c.compile.cubin for label, c in compiled.items()}
        modules = {label: state.ctx.load_module(cubin) for label, cubin in cubins.items()}
        states = {label: DeviceState.capture(state.ctx, modules[label], cubins[label]) for label in modules}
        if hook is not None:
            hook(profiler, modules, cubins)
        try:
            listed = [(label, modules[label], c.bound, label in trusted) for label, c in compiled.items()]
            return profiler.profile(task, listed, states=states)
        finally:
            for s in states.values():
                s.release()
            for m in modules.values():
                state.ctx.unload_module(m)

    yield run
    state.refs.unpin_all()


def timings(report: ProfileReport) -> dict[str, Timing]:
    by_label = {t.label: t for t in report.timings}
    for t in by_label.values():
        assert t.fault is None, t
    return by_label


def assert_cheat_closed(profile: Profile, task, honest, cheat, same_time: bool = True, **how) -> dict[str, Timing]:
    """Open (independent_runs off): the cheat wins. Closed: it is timed on its honest path or caught,
    and the honest twin keeps its time within noise (`same_time`). `how`: the profile's options."""
    before = timings(profile(task, {"honest": honest, "cheat": cheat}, independent=False, **how))
    assert before["cheat"].median_us < CHEAT_WINS_UNDER * before["honest"].median_us, (
        f"positive control: the cheat should win when runs are not independent: {before}"
    )
    after = timings(profile(task, {"honest": honest, "cheat": cheat}, **how))
    assert after["honest"].state_check is None
    if after["cheat"].state_check is None:
        assert after["cheat"].median_us >= (1 - NOISE) * after["honest"].median_us, after
    if same_time:
        assert abs(after["honest"].median_us / before["honest"].median_us - 1) <= NOISE, (before, after)
    return after


# ---- item 1: timed runs are checked ----------------------------------------------------------------


def test_a_kernel_that_skips_work_when_its_output_holds_a_number_gains_nothing(profile):
    assert_cheat_closed(
        profile, "vector_add", (HONEST_STRIDE_VADD, STRIDE_VADD_PLAN), (POISON_KEYED_STRIDE_VADD, STRIDE_VADD_PLAN)
    )


def test_in_a_graph_of_replays_each_replay_finds_its_outputs_poisoned(gpu, profile):
    """A plan timed as a CUDA graph of K replays (matmul at 384^3, every program graphed here): each
    replay writes outputs of its own, poisoned before the sample, and the check after timing verifies
    every replay's. Not compared with its time before: replays that rewrite the same outputs found
    them in the L2, and each replay now writes new ones (the baseline too, so a speedup compares like
    with like). matmul, not vector_add: a small vector_add's time is all launch, the skipping kernel's
    as much as the honest one's (3.65 us against 3.72 us on an H200, docs/runs/s19)."""
    base = gpu.task("matmul")
    case = SizeCase(f"graph-sized {GRAPH_SIZE}^3", tuple((x, GRAPH_SIZE) for x in "MNK"), 1, is_timing=True)
    task = dataclasses.replace(base, timing=case, fingerprint=base.fingerprint + "-graph-sized")
    after = assert_cheat_closed(
        profile,
        task,
        (HONEST_MATMUL, MATMUL_PLAN),
        (paused_matmul(0), MATMUL_PLAN),
        same_time=False,
        graph_under_us=GRAPH_EVERY_US,
    )
    assert after["honest"].mode == "graph" and after["honest"].replays >= 2, after["honest"]


def test_a_globaltimer_pause_just_above_the_physical_floor_gains_nothing(gpu, profile):
    """The do-nothing path pauses until its figure lands 20% above the physical floor (not suspect)."""
    honest = gpu.judge("matmul", HONEST_MATMUL, MATMUL_PLAN, profile=True)
    assert honest.status == "correct" and honest.timing is not None and honest.figures is not None, honest.message
    floor_us = honest.figures.physical_floor_us or honest.timing.median_us / 5
    cheat_source = paused_matmul(int(1.2 * floor_us * 1000))
    assert_cheat_closed(profile, "matmul", (HONEST_MATMUL, MATMUL_PLAN), (cheat_source, MATMUL_PLAN))
    j = gpu.judge("matmul", cheat_source, MATMUL_PLAN, profile=True, label="paused")
    assert j.status == "correct" and j.figures is not None and j.figures.speedup is not None, j.message
    assert j.figures.speedup <= 1 + NOISE, f"the paused cheat beat the baseline it copies: {j.message}"


# ---- item 2: writable device state is reset between runs -------------------------------------------


def test_an_input_keyed_device_cache_gains_nothing(gpu, profile):
    assert_cheat_closed(profile, "matmul", (HONEST_MATMUL, MATMUL_PLAN), (CACHED_MATMUL, CACHED_MATMUL_PLAN))
    j = gpu.judge("matmul", CACHED_MATMUL, CACHED_MATMUL_PLAN, profile=True, label="cached")
    assert j.status == "correct" and j.figures is not None and j.figures.speedup is not None, j.message
    assert j.figures.speedup <= 1 + NOISE, f"the cache beat the baseline it copies: {j.message}"


# ---- item 3: module globals count against the memory allowance -------------------------------------


def test_a_64_gib_device_array_is_refused_before_anything_is_loaded(gpu):
    j = gpu.judge("vector_add", HUGE_GLOBAL_VADD, VADD_PLAN)
    assert j.status == "launch_error", j.message
    assert "big" in j.message and "__device__" in j.message and "scratch" in j.message, j.message
    assert j.validation is None, "refused by the judge, before the GPU worker loaded it"


def test_the_worker_refuses_it_too_when_the_judge_did_not(gpu, monkeypatch):
    """A program reaching the worker some other way (the judge's count patched out) is refused there."""
    monkeypatch.setattr("cuda_llm.engine.judge.judge.module_memory", lambda cubin: ModuleMemory(0))
    j = gpu.judge("vector_add", HUGE_GLOBAL_VADD, VADD_PLAN)
    assert j.status == "launch_error" and j.validation is not None, j.message
    assert "big" in j.message and "__device__" in j.message, j.message


def test_a_modest_device_table_passes_and_keeps_its_time(gpu):
    j = gpu.judge("vector_add", MODEST_GLOBAL_VADD, VADD_PLAN, profile=True, label="table")
    assert j.status == "correct" and j.figures is not None and j.figures.speedup is not None, j.message
    assert j.figures.speedup >= 1 - NOISE, f"1 MiB of __device__ memory put back before each run cost time: {j.message}"


# ---- item 4: programs timed together are isolated ------------------------------------------------------


def point_at(victim: str, name: str = "a") -> Callable:
    """A hook that points the tampering program's `target` at `victim`'s input `name` (first
    placement) once the group's buffers exist: a kernel that found them."""
    from cuda_llm.engine.gpu.device_state import DeviceState
    from cuda_llm.engine.gpu.driver import DeviceBuffer

    def hook(profiler, modules, cubins) -> None:
        set_up = profiler._set_up
        found: dict[str, int] = {}

        def wrapped(task, e, *rest):
            set_up(task, e, *rest)
            if e.label == victim:
                found["ptr"] = e.placements[0].bufs.device[name].ptr
            if e.label == "attacker":
                ctx = profiler.ctx
                at = ctx.module_global(modules["attacker"], "target")
                assert at is not None and "ptr" in found, "the victim is set up before the attacker"
                pointer = np.array([found["ptr"]], dtype=np.uint64)
                ctx.upload(DeviceBuffer(at[0], 8), pointer)
                ctx.wait(10.0)  # `pointer` lives until the copy is done
                e.state.release()  # what is put back before each run now holds the pointer
                e.state = DeviceState.capture(ctx, modules["attacker"], cubins["attacker"])

        profiler._set_up = wrapped

    return hook


@pytest.mark.parametrize("victim", ["baseline", "victim"])
def test_a_program_that_writes_another_s_inputs_is_blamed_and_its_victim_is_not(profile, victim):
    group = {
        "baseline": (HONEST_VADD, VADD_PLAN),
        "victim": (HONEST_VADD, VADD_PLAN),
        "attacker": (TAMPERING_VADD, VADD_PLAN),
    }
    before = timings(profile("vector_add", group, independent=False, trusted=("baseline",), hook=point_at(victim)))
    # The hole: the baseline's inputs were never checked, and an honest candidate written to was blamed.
    assert before["attacker"].state_check is None
    if victim == "victim":
        assert before["victim"].state_check is not None, before
    report = profile("vector_add", group, trusted=("baseline",), hook=point_at(victim))
    after = timings(report)
    assert report.tampering == ("attacker",), report
    assert "another program" in (after["attacker"].state_check or ""), after["attacker"]
    assert after["victim"].state_check is None and after["baseline"].state_check is None, after


def test_honest_programs_timed_together_are_not_blamed_and_keep_their_time(profile):
    group = {"baseline": (HONEST_VADD, VADD_PLAN), "honest": (TAMPERING_VADD, VADD_PLAN)}  # target stays null
    before = timings(profile("vector_add", group, independent=False, trusted=("baseline",)))
    report = profile("vector_add", group, trusted=("baseline",))
    after = timings(report)
    assert report.tampering == () and report.tampering_unexplained is None, report
    assert after["honest"].state_check is None, after
    assert abs(after["honest"].median_us / before["honest"].median_us - 1) <= NOISE, (before, after)
