"""What the profiler does before and after each run so that no run leans on an earlier one
(engine/gpu/profile.py, device_state.py), on a simulated device: device memory is a byte array, a
kernel is a Python function over it, a CUDA graph replays what its body queued. Every line of these
paths runs here without a GPU; tests/gpu/test_timed_runs_checked.py runs them on one."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from cuda_llm.engine.contract.limits import PlanError
from cuda_llm.engine.core.settings import ProfileSettings, ValidationSettings
from cuda_llm.engine.gpu.driver import BUFFER_ALIGNMENT, Context, DeviceBuffer, allocated_bytes, pack_params
from cuda_llm.engine.gpu.harness import DeviceComparison
from cuda_llm.engine.gpu.profile import Profiler, _Entry, _Placement
from cuda_llm.engine.gpu.runner import PreparedLaunch, PreparedPlan
from cuda_llm.engine.gpu.validate import BufferSet, poison
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.model import SizeCase

N = 1000
HEAP = 96 * 2**20


class Device:
    """The Context calls the profiler makes, over a byte array; kernels run when launched."""

    wipe_slack = Context.wipe_slack  # the real one, over this device's zero()

    def __init__(self, budget: int) -> None:
        self.heap = np.zeros(HEAP, dtype=np.uint8)
        self.top = BUFFER_ALIGNMENT // 2  # so every buffer has slack before it as well as after
        self.budget = budget  # what free_memory() answers

    def f32(self, ptr: int, count: int) -> np.ndarray:
        return self.heap[ptr : ptr + 4 * count].view(np.float32)

    def alloc(self, nbytes: int) -> DeviceBuffer:
        base = self.top
        self.top += allocated_bytes(nbytes)
        assert self.top <= HEAP
        return DeviceBuffer(-(-base // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT, nbytes, base)

    def free_memory(self) -> int:
        return self.budget

    def free(self, buf: DeviceBuffer) -> None:
        pass

    def zero(self, ptr: int, nbytes: int) -> None:
        self.heap[ptr : ptr + nbytes] = 0

    def fill32(self, buf: DeviceBuffer, word: int, nbytes: int | None = None) -> None:
        n = buf.nbytes if nbytes is None else nbytes
        self.heap[buf.ptr : buf.ptr + n // 4 * 4].view(np.uint32)[:] = word

    def fill_rows32(self, ptr: int, pitch: int, word: int, width_words: int, rows: int) -> None:
        for r in range(rows):
            self.heap[ptr + r * pitch : ptr + r * pitch + 4 * width_words].view(np.uint32)[:] = word

    def copy(self, dst: DeviceBuffer, src: DeviceBuffer) -> None:
        self.copy_raw(dst.ptr, src.ptr, min(dst.nbytes, src.nbytes))

    def copy_raw(self, dst: int, src: int, nbytes: int) -> None:
        self.heap[dst : dst + nbytes] = self.heap[src : src + nbytes].copy()

    def upload(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        self.heap[buf.ptr : buf.ptr + host.nbytes] = np.frombuffer(host.tobytes(), dtype=np.uint8)

    def launch(self, func, grid, block, shared, params) -> None:
        func(self, *params[0])

    def capture_graph(self, body):
        return body  # replayed by calling what queued it

    def launch_graph(self, graph) -> None:
        graph()

    def destroy_graph(self, graph) -> None:
        pass

    def event(self):
        return object()

    def record(self, event) -> None:
        pass

    def wait(self, timeout_s: float) -> None:
        pass

    def elapsed_ms(self, a, b) -> float:
        return 0.005

    def reset_persisting_l2(self) -> None:
        pass


class Harness:
    def __init__(self, device: Device) -> None:
        self.d = device

    def flush_l2(self) -> None:
        pass

    def delay_us(self, us: float) -> None:
        pass

    def count_diff(self, a: DeviceBuffer, b: DeviceBuffer, timeout_s: float) -> int:
        n = min(a.nbytes, b.nbytes)
        return int(np.count_nonzero(self.d.heap[a.ptr : a.ptr + n] != self.d.heap[b.ptr : b.ptr + n]))

    def compare(self, got, dtype, count, expected, scale, tol, rms, timeout_s) -> DeviceComparison:
        with np.errstate(invalid="ignore"):  # the poison is a NaN
            have = self.d.f32(got.ptr, count).astype(np.float64)
        want = self.d.heap[expected.ptr : expected.ptr + 8 * count].view(np.float64)
        wrong = int(np.count_nonzero(~np.isclose(have, want, rtol=1e-6)))
        return DeviceComparison(wrong, int(np.count_nonzero(np.isnan(have))), 0.0, 0)


def device_and_task(budget: int = 64 * 2**20):
    device = Device(budget)
    base = TaskLibrary().get("vector_add")
    task = dataclasses.replace(base, timing=SizeCase(f"n={N}", (("n", N),), 1, is_timing=True))
    return device, task


def kernel(kind: str, calls: list[str], target: list[int] | None = None):
    """vector_add as a Python kernel: honest, or computing only when c[0] holds the poison, or
    computing only on the first replay of each graph launch (what hidden memory would allow), or
    also writing -1 into `target[0]`'s first floats."""
    state = {"replay": 0}

    def run(device: Device, a: int, b: int, c: int, n: int) -> None:
        out = device.f32(c, n)
        if kind == "poison-keyed" and not np.isnan(out[0]):
            return
        if kind == "first-replay-only":
            state["replay"] += 1
            if state["replay"] > 1:
                return
        calls.append(kind)
        out[:] = device.f32(a, n) + device.f32(b, n)
        if target:
            device.f32(target[0], 16)[:] = -1.0

    def new_launch() -> None:
        state["replay"] = 0

    return run, new_launch


def entry(device: Device, task, label: str, run) -> _Entry:
    e = _Entry(label, None, None)
    bufs = BufferSet(device, task, task.timing)  # type: ignore[arg-type]
    rng = np.random.default_rng(len(label))
    for name in ("a", "b"):
        device.upload(bufs.device[name], rng.standard_normal(N).astype(np.float32))
    poison(device, bufs.device["c"], "float32")  # type: ignore[arg-type]
    params = pack_params([("ptr", bufs.device[x].ptr) for x in "abc"] + [("int32", N)])
    launch = PreparedLaunch(0, "vector_add", run, (1, 1, 1), (1, 1, 1), 0, params)
    e.placements = [_Placement(bufs, PreparedPlan([launch], [], ()))]
    return e


def profiler(device: Device, task, independent: bool = True) -> Profiler:
    vsettings = dataclasses.replace(ValidationSettings(), independent_runs=independent)
    p = Profiler(device, None, Harness(device), None, None, ProfileSettings(), vsettings)  # type: ignore[arg-type]
    p._outputs = task.outputs
    return p


@pytest.mark.parametrize(("independent", "computed"), [(True, 5), (False, 1)])
def test_every_timed_run_finds_its_outputs_poisoned(independent, computed):
    device, task = device_and_task()
    calls: list[str] = []
    run, _ = kernel("poison-keyed", calls)
    e = entry(device, task, "cheat", run)
    prof = profiler(device, task, independent)
    for _ in range(5):
        prof._timed(e, flush=True)
    assert len(calls) == computed  # without the poison before each run, only the first computes


def test_the_slack_around_every_buffer_is_wiped_before_a_run():
    device, task = device_and_task()
    e = entry(device, task, "honest", kernel("honest", [])[0])
    c = e.placements[0].bufs.device["c"]
    device.heap[c.ptr + c.nbytes : c.ptr + c.nbytes + 64] = 7  # a result kept past the end of c
    device.heap[c.base : c.base + 8] = 7  # and before its start
    profiler(device, task)._timed(e, flush=True)
    assert not device.heap[c.ptr + c.nbytes : c.base + allocated_bytes(c.nbytes)].any()
    assert not device.heap[c.base : c.ptr].any()


def with_new_inputs(device: Device, prof: Profiler, e: _Entry):
    """The masters hold new input values; the reference case the check after timing compares with."""
    rng = np.random.default_rng(99)
    host = {name: rng.standard_normal(N).astype(np.float32) for name in ("a", "b")}
    prof._masters = {}
    for name, values in host.items():
        prof._masters[name] = device.alloc(values.nbytes)
        device.upload(prof._masters[name], values)
    expected = {"c": host["a"].astype(np.float64) + host["b"].astype(np.float64)}
    return SimpleNamespace(inputs=host, expected=expected, scale=None, rms_of=lambda name: 0.0)


def test_each_replay_of_a_graph_writes_outputs_of_its_own_and_each_is_checked():
    device, task = device_and_task()
    calls: list[str] = []
    run, _ = kernel("poison-keyed", calls)
    e = entry(device, task, "cheat", run)
    prof = profiler(device, task)
    prof._choose_mode(e, est_us=5.0)
    # 64 MiB free, half of it for placements, a quarter of that for the copies: 4 rows of 2 MiB.
    assert e.rotation is not None and e.replays == e.rotation.rows == 4
    calls.clear()
    prof._timed(e, flush=True)
    assert len(calls) == 4, "every replay found its outputs poisoned, so each computed"
    ref = with_new_inputs(device, prof, e)
    assert prof._check_one(task, e, ref) is None
    e.release(device)  # type: ignore[arg-type]
    assert e.rotation is None


def test_a_replay_that_skips_its_work_is_caught_after_timing():
    device, task = device_and_task()
    run, new_launch = kernel("first-replay-only", [])
    e = entry(device, task, "cheat", run)
    prof = profiler(device, task)
    prof._choose_mode(e, est_us=5.0)
    graph = e.placements[0].graph

    def launch() -> None:
        new_launch()
        graph()

    e.placements[0].graph = launch
    ref = with_new_inputs(device, prof, e)
    why = prof._check_one(task, e, ref)
    assert why is not None and "replay 2 of 4" in why, why


def test_without_independent_runs_a_graph_replays_into_one_output():
    device, task = device_and_task()
    calls: list[str] = []
    e = entry(device, task, "cheat", kernel("poison-keyed", calls)[0])
    prof = profiler(device, task, independent=False)
    prof._choose_mode(e, est_us=5.0)
    assert e.rotation is None and e.replays == 400
    calls.clear()
    prof._timed(e, flush=True)
    assert calls == [], "the poison came once, at set-up, and the warm-up used it"


def test_no_room_for_the_copies_times_one_run_a_sample():
    device, task = device_and_task(budget=2**20)
    e = entry(device, task, "honest", kernel("honest", [])[0])
    profiler(device, task)._choose_mode(e, est_us=5.0)
    assert e.rotation is None and e.replays == 1 and e.placements[0].graph is None


def test_the_program_that_wrote_another_s_inputs_is_found_and_nobody_else_is_blamed():
    device, task = device_and_task()
    target: list[int] = []
    victim = entry(device, task, "victim", kernel("honest", [])[0])
    attacker = entry(device, task, "attacker", kernel("honest", [], target)[0])
    baseline = entry(device, task, "baseline", kernel("honest", [])[0])
    baseline.trusted = True
    target.append(victim.placements[0].bufs.device["a"].ptr)
    entries = [baseline, victim, attacker]
    prof = profiler(device, task)
    prof._masters = {}
    for name in ("a", "b"):
        prof._masters[name] = device.alloc(4 * N)
        device.copy(prof._masters[name], victim.placements[0].bufs.device[name])
    for e in (baseline, attacker):  # every program times the same input values
        for name in ("a", "b"):
            device.copy(e.placements[0].bufs.device[name], prof._masters[name])
    inputs = {"a": None, "b": None}
    assert prof._changed_inputs(entries, inputs) == {}
    for e in entries:
        prof._timed(e, flush=True)
    changed = prof._changed_inputs(entries, inputs)
    assert changed == {"victim": ["a"]}
    prof._trace(entries, inputs, changed)
    assert prof._tampering == ("attacker",)
    assert "of another program timed with it (victim)" in (attacker.state_check or "")
    assert victim.state_check is None and baseline.state_check is None
    assert prof._changed_inputs(entries, inputs) == {}, "every input put back"


def test_a_change_no_program_makes_alone_is_reported_without_blame():
    device, task = device_and_task()
    a = entry(device, task, "c1", kernel("honest", [])[0])
    prof = profiler(device, task)
    prof._masters = {name: device.alloc(4 * N) for name in ("a", "b")}
    for name in ("a", "b"):
        device.copy(prof._masters[name], a.placements[0].bufs.device[name])
    device.f32(a.placements[0].bufs.device["b"].ptr, 1)[0] = 1e9  # changed by no program here
    changed = prof._changed_inputs([a], {"a": None, "b": None})
    prof._trace([a], {"a": None, "b": None}, changed)
    assert prof._tampering == () and a.state_check is None
    assert prof._unexplained is not None and "c1" in prof._unexplained


# ---- device_state: a module's __device__ sections copied aside and put back ---------------------


def test_device_variables_are_put_back_to_their_loaded_bytes():
    from judge_cheats import CACHED_MATMUL

    from cuda_llm.engine.compile.cubin import device_variables
    from cuda_llm.engine.compile.nvrtc import compile_in_process
    from cuda_llm.engine.gpu.device_state import DeviceState
    from tests.compile.conftest import NVRTC_PROBLEM

    if NVRTC_PROBLEM:
        pytest.skip(f"NVRTC unavailable: {NVRTC_PROBLEM}")
    cubin = compile_in_process(CACHED_MATMUL, "sm_90").cubin
    assert cubin is not None
    device, _task = device_and_task()
    sections = {}
    for v in device_variables(cubin):
        reach = sections.get(v.section, 0)
        sections[v.section] = max(reach, v.offset + v.size_bytes)
    bases = {name: device.alloc(size).ptr for name, size in sections.items()}
    where = {v.name: (bases[v.section] + v.offset, v.size_bytes) for v in device_variables(cubin)}
    device.module_global = lambda module, name: where.get(name)
    stored = where["stored"][0]
    device.heap[stored : stored + 8] = 3  # as loaded: a value of the program's own
    state = DeviceState.capture(device, "module", cubin)  # type: ignore[arg-type]
    assert state.writable
    device.heap[stored : stored + 32] = 9  # a run keeps a fingerprint there
    state.restore()
    assert (device.heap[stored : stored + 8] == 3).all() and not device.heap[stored + 8 : stored + 32].any()
    # A section the driver cannot place is refused: it could not be put back.
    device.module_global = lambda module, name: None
    with pytest.raises(PlanError, match="cannot be located"):
        DeviceState.capture(device, "module", cubin)  # type: ignore[arg-type]


def test_each_validation_case_starts_from_the_loaded_device_state():
    """validate.run_case puts the module's variables back before a case's first run, not between
    its two runs: the second sees what the first left, as a second call of the program would."""
    from cuda_llm.engine.gpu.validate import run_case

    device, task = device_and_task()
    case = SizeCase(f"n={N}", (("n", N),), 1)
    restores: list[int] = []
    calls: list[str] = []
    run, _ = kernel("honest", calls)

    def binder(case, buffers):
        params = pack_params([("ptr", buffers[x].ptr) for x in "abc"] + [("int32", N)])
        return PreparedPlan([PreparedLaunch(0, "vector_add", run, (1, 1, 1), (1, 1, 1), 0, params)], [], ())

    rng = np.random.default_rng(5)
    host = {name: rng.standard_normal(N).astype(np.float32) for name in ("a", "b")}
    ref = SimpleNamespace(
        inputs=host,
        expected={"c": host["a"].astype(np.float64) + host["b"].astype(np.float64)},
        scale=None,
        rms_of=lambda name: 0.0,
    )
    harness = Harness(device)
    harness.scrub_shared = lambda pattern: None  # type: ignore[attr-defined]
    state = SimpleNamespace(restore=lambda: restores.append(1))
    for settings, expected in (
        (ValidationSettings(), 1),
        (dataclasses.replace(ValidationSettings(), independent_runs=False), 0),
    ):
        restores.clear()
        outcome = run_case(
            device,
            None,
            harness,
            None,
            task,
            None,
            case,
            ref,
            "case",
            settings,
            binder=binder,
            device_state=state,  # type: ignore[arg-type]
        )
        assert outcome.report.passed, outcome.report
        assert len(restores) == expected


class Logged(Device):
    """The simulated device, noting the order of what reaches the stream."""

    def __init__(self, budget: int) -> None:
        super().__init__(budget)
        self.log: list[str] = []

    def fill32(self, buf: DeviceBuffer, word: int, nbytes: int | None = None) -> None:
        self.log.append(f"poison {buf.ptr}")
        super().fill32(buf, word, nbytes)

    def record(self, event) -> None:
        self.log.append("record")


class LoggedHarness(Harness):
    # Smaller than the output (4 kB): a rule that skipped the flush where the poison already wrote
    # as many bytes would skip it here.
    flush_buffer = DeviceBuffer(0, 1024)

    def flush_l2(self) -> None:
        self.d.log.append("flush")

    def delay_us(self, us: float) -> None:
        self.d.log.append("delay")


def test_every_sample_is_poisoned_then_flushed_before_its_timed_region():
    """The poison writes the outputs through the L2, leaving its lines dirty there: the flush after
    it writes them back and displaces them (evict_last lines too) before the timed region, however
    many bytes the poison wrote. Skipping it would put that write-back into the first kernel's time,
    and hand the lines to a kernel that writes its output in the order the poison left cached."""
    device = Logged(64 * 2**20)
    _, task = device_and_task()
    e = entry(device, task, "honest", kernel("honest", [])[0])
    c = e.placements[0].bufs.device["c"]
    prof = profiler(device, task)
    prof.harness = LoggedHarness(device)
    prof.s = dataclasses.replace(prof.s, min_samples=6, max_samples=6)
    device.log.clear()
    prof._sample([e])
    runs = "|".join(device.log).split("|record|record")[:-1]
    assert len(runs) == 6
    for run in runs:
        steps = [s for s in run.split("|") if s]
        assert steps[-3:] == [f"poison {c.ptr}", "flush", "delay"], steps
