"""The Performance Profiler, worker side (DESIGN.md section 5, "Profile").

The baseline and the candidates of a round are timed in one session, interleaved sample by sample:
CUDA events on the harness stream around the whole launch plan, the L2 flushed before every sample,
warm-up by time, adaptive repetition (median and IQR), CUDA graphs of K replays for short plans,
samples under a throttled SM clock discarded. After timing, the same buffers get new input values
and each program must still produce the right answer (catches results cached between runs).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.gpu.device_compare import compare_on_device
from engine.gpu.driver import Context, CudaError, is_fatal
from engine.gpu.harness import Harness
from engine.gpu.phases import PhaseClock
from engine.gpu.protocol import DeviceInfo, Fault, ProfileReport, Timing
from engine.gpu.reference_cache import ReferenceCache
from engine.gpu.runner import ModuleFunctions, PlanError, PreparedPlan, prepare
from engine.gpu.telemetry import Nvml
from engine.gpu.validate import BufferSet, poison, task_bytes
from engine.settings import ProfileSettings, ValidationSettings
from engine.task.model import Task
from engine.task.reference import case_seed

# Host-side cost of enqueuing one launch from Python (measured 3.5-5.4 us on H100/H200); the delay
# kernel in front of a timed region covers this many microseconds per launch, plus a fixed margin.
_ENQUEUE_US_PER_LAUNCH = 12.0
_ENQUEUE_MARGIN_US = 30.0
# Graph replays per sample are capped: more adds nothing once launch latency is amortised.
_MAX_GRAPH_REPLAYS = 1000


@dataclass
class _Entry:
    label: str
    funcs: ModuleFunctions
    plan: Any
    trusted: bool = False
    bufs: BufferSet | None = None
    prepared: PreparedPlan | None = None
    graph: Any = None
    replays: int = 1
    samples: list[float] = field(default_factory=list)
    clocks: list[float] = field(default_factory=list)
    discarded: int = 0
    gpu_s: float = 0.0
    done: bool = False
    fault: Fault | None = None
    state_check: str | None = None

    def enqueue(self, ctx: Context) -> None:
        assert self.prepared is not None
        if self.graph is not None:
            ctx.launch_graph(self.graph)
        else:
            self.prepared.run(ctx)

    @property
    def launches(self) -> int:
        return 1 if self.graph is not None else len(self.prepared.launches) if self.prepared else 1


def _rel_iqr(xs: list[float]) -> float:
    q1, med, q3 = np.percentile(xs, [25, 50, 75])
    return float((q3 - q1) / med) if med > 0 else float("inf")


class Profiler:
    def __init__(
        self,
        ctx: Context,
        info: DeviceInfo,
        harness: Harness,
        refs: ReferenceCache,
        nvml: Nvml | None,
        settings: ProfileSettings,
        vsettings: ValidationSettings,
    ) -> None:
        self.ctx = ctx
        self.info = info
        self.harness = harness
        self.refs = refs
        self.nvml = nvml
        self.s = settings
        self.vs = vsettings
        self.ev0 = ctx.event()
        self.ev1 = ctx.event()
        self._masters: dict[str, Any] = {}

    # ---- one sample ----------------------------------------------------------------------
    def _timed(self, entry: _Entry, flush: bool) -> float:
        """Run the entry once between events; return GPU milliseconds. A fault names the entry."""
        try:
            return self._timed_unchecked(entry, flush)
        except Exception as exc:
            exc.case = entry.label  # type: ignore[attr-defined]  # which program took the worker down
            raise

    def _timed_unchecked(self, entry: _Entry, flush: bool) -> float:
        if flush:
            self.harness.flush_l2()
        self.harness.delay_us(_ENQUEUE_MARGIN_US + _ENQUEUE_US_PER_LAUNCH * entry.launches)
        self.ctx.record(self.ev0)
        entry.enqueue(self.ctx)
        self.ctx.record(self.ev1)
        self.ctx.wait(self.vs.launch_timeout_s)
        return self.ctx.elapsed_ms(self.ev0, self.ev1)

    def _throttled(self) -> tuple[bool, float | None]:
        if self.nvml is None:
            return False, None
        clock = self.nvml.sm_clock()
        top = self.nvml.max_sm_clock
        if clock is None or not top:
            return False, clock
        return clock < self.s.throttle_clock_fraction * top, float(clock)

    def _clock_is_up(self) -> bool:
        if self.nvml is None:
            return False
        clock, top = self.nvml.sm_clock(), self.nvml.max_sm_clock
        return bool(clock and top and clock >= self.s.warm_clock_fraction * top)

    # ---- phases ----------------------------------------------------------------------------
    def _warm_up(self, entries: list[_Entry]) -> dict[str, float]:
        """Run every entry round-robin for warmup_ms of wall time (two rounds when the clock is already
        up); return each one's fastest run."""
        best: dict[str, float] = {e.label: float("inf") for e in entries}
        deadline = time.monotonic() + (0.0 if self._clock_is_up() else self.s.warmup_ms / 1000)
        rounds = 0
        while rounds < 2 or time.monotonic() < deadline:
            for e in entries:
                if e.fault is None:
                    best[e.label] = min(best[e.label], self._timed(e, flush=True) * 1000)
            rounds += 1
            if rounds > 10_000:
                break
        return best

    def _choose_mode(self, entry: _Entry, est_us: float) -> None:
        if est_us >= self.s.graph_threshold_us:
            return
        k = int(min(_MAX_GRAPH_REPLAYS, max(2, np.ceil(self.s.graph_target_us / max(est_us, 0.5)))))
        assert entry.prepared is not None
        prepared = entry.prepared

        def body() -> None:
            for _ in range(k):
                prepared.run(self.ctx)

        entry.graph = self.ctx.capture_graph(body)
        entry.replays = k
        self._timed(entry, flush=True)  # the first graph launch uploads it: keep that out

    def _sample(self, entries: list[_Entry]) -> None:
        start = time.monotonic()
        wall_cap = (self.s.max_gpu_time_s * 3 + 2.0) * len(entries)
        rnd = 0
        while not all(e.done for e in entries):
            order = entries[rnd % len(entries) :] + entries[: rnd % len(entries)]
            rnd += 1
            for e in order:
                if e.done:
                    continue
                ms = self._timed(e, flush=True)
                throttled, clock = self._throttled()
                e.gpu_s += ms / 1000
                if throttled:
                    e.discarded += 1
                else:
                    e.samples.append(ms * 1000 / e.replays)
                    if clock is not None:
                        e.clocks.append(clock)
                n = len(e.samples)
                if (
                    (n >= self.s.min_samples and _rel_iqr(e.samples) <= self.s.stop_rel_iqr)
                    or e.gpu_s >= self.s.max_gpu_time_s
                    or n + e.discarded >= self.s.max_samples
                ):
                    e.done = True
            if time.monotonic() - start > wall_cap:
                break

    def _state_check(self, task: Task, entries: list[_Entry], inputs: dict[str, Any]) -> None:
        """New input values in the very buffers that were timed; every program must still be right."""
        case = task.timing
        ref = self.refs.get(task, case, case_seed(task, case, 0))
        checked = [
            e for e in entries if e.fault is None and e.bufs is not None and e.prepared is not None and not e.trusted
        ]
        for e in checked:
            bufs = e.bufs
            assert bufs is not None
            try:
                # While the masters still hold the timed values: did the program write its inputs?
                for name in inputs:
                    if self.harness.count_diff(bufs.device[name], self._masters[name], self.vs.launch_timeout_s):
                        e.state_check = f"the kernel changed input {name!r} while being timed"
                        break
            except Exception as exc:
                exc.case = e.label  # type: ignore[attr-defined]
                raise
        # The new values go up once, into the masters (no program reads them any more).
        for name, host in ref.inputs.items():
            self.ctx.upload(self._masters[name], host)
        for e in checked:
            if e.state_check is not None:
                continue
            try:
                e.state_check = self._check_one(task, e, ref)
            except Exception as exc:
                exc.case = e.label  # type: ignore[attr-defined]
                raise

    def _check_one(self, task: Task, e: _Entry, ref: Any) -> str | None:
        assert e.bufs is not None and e.prepared is not None and ref.expected is not None
        for name in ref.inputs:
            self.ctx.copy(e.bufs.device[name], self._masters[name])
        for b in task.outputs:
            poison(self.ctx, e.bufs.device[b.name], b.dtype)
        e.prepared.run(self.ctx)
        self.ctx.wait(self.vs.launch_timeout_s)
        for b in task.outputs:
            scale = ref.scale[b.name] if ref.scale else None
            wrong, _ = compare_on_device(
                self.ctx,
                self.harness,
                e.bufs.device[b.name],
                b,
                ref.expected[b.name],
                scale,
                task.tolerance,
                ref.rms_of(b.name),
                self.vs.launch_timeout_s,
            )
            if wrong:
                return (
                    f"after timing, new input values in the same buffers gave {wrong} wrong "
                    f"element(s) of {b.name!r}: the kernel returns results cached from earlier runs"
                )
        return None

    def _set_up(self, task: Task, e: _Entry, timed_inputs: dict[str, Any]) -> None:
        """The entry's own buffers, filled from the masters on the device, and its plan prepared. A
        plan that cannot run here marks the entry faulty; a sticky CUDA error propagates."""
        case = task.timing
        try:
            e.bufs = BufferSet(self.ctx, task, case)
            for name in timed_inputs:
                self.ctx.copy(e.bufs.device[name], self._masters[name])
            e.prepared = prepare(
                self.ctx,
                self.info,
                e.funcs,
                e.plan,
                task.env(case),
                task.params(case),
                e.bufs.device,
                task_bytes(task, case),
            )
            for b in task.outputs:
                poison(self.ctx, e.bufs.device[b.name], b.dtype)
        except PlanError as exc:
            e.fault, e.done = Fault("launch_error", "plan", str(exc)), True
        except CudaError as exc:
            if exc.sticky:
                raise
            e.fault = Fault("launch_error", exc.name, f"could not set up the timing run: {exc}")
            e.done = True

    # ---- the job ---------------------------------------------------------------------------
    def profile(self, task: Task, programs: list[tuple[str, Any, Any, bool]]) -> ProfileReport:
        """Time (label, loaded module, bound plan, trusted) programs interleaved at the timing size."""
        start = time.monotonic()
        phase = PhaseClock()
        case = task.timing
        with phase("reference"):
            timed_inputs = self.refs.get(task, case, case_seed(task, case, 0, "profile"), with_expected=False).inputs
        busy = self.nvml.other_processes() if self.nvml else None
        entries = [
            _Entry(label, ModuleFunctions(self.ctx, module), plan, trusted) for label, module, plan, trusted in programs
        ]
        # The inputs go up once; every program's own buffers are filled from them on the device.
        with phase("upload"):
            self._masters = {name: self.ctx.alloc(host.nbytes) for name, host in timed_inputs.items()}
            for name, host in timed_inputs.items():
                self.ctx.upload(self._masters[name], host)
        try:
            with phase("set-up"):
                for e in entries:
                    self._set_up(task, e, timed_inputs)
            live = [e for e in entries if e.fault is None]
            with phase("warm-up"):
                best = self._warm_up(live)
                for e in live:
                    self._choose_mode(e, best[e.label])
            with phase("sample"):
                self._sample(live)
            with phase("state check"):
                self._state_check(task, live, timed_inputs)
        except BaseException as exc:
            if is_fatal(exc):
                entries = []  # the context is gone or busy with a hung kernel: free nothing
                self._masters = {}
            raise
        finally:
            with phase("free"):
                for buf in self._masters.values():
                    self.ctx.free(buf)
                self._masters = {}
                for e in entries:
                    if e.graph is not None:
                        self.ctx.destroy_graph(e.graph)
                    if e.prepared is not None:
                        e.prepared.release(self.ctx)
                    if e.bufs is not None:
                        e.bufs.free()

        timings = []
        throttled = sum(e.discarded for e in entries)
        for e in entries:
            if e.samples:
                q1, med, q3 = np.percentile(e.samples, [25, 50, 75])
                timings.append(
                    Timing(
                        label=e.label,
                        median_us=float(med),
                        q1_us=float(q1),
                        q3_us=float(q3),
                        min_us=float(min(e.samples)),
                        samples=len(e.samples),
                        discarded=e.discarded,
                        mode="graph" if e.graph is not None else "events",
                        replays=e.replays,
                        sm_clock_mhz=float(np.median(e.clocks)) if e.clocks else None,
                        state_check=e.state_check,
                        resources=e.prepared.resources if e.prepared else (),
                    )
                )
            else:
                fault = e.fault or Fault("launch_error", "throttled", "every sample was taken under a throttled clock")
                timings.append(Timing(e.label, 0.0, 0.0, 0.0, 0.0, 0, e.discarded, "events", 1, None, fault=fault))
        return ProfileReport(
            device=self.info.name,
            size_label=case.label,
            timings=tuple(timings),
            throttle_note=(
                f"{throttled} sample(s) discarded: SM clock under {self.s.throttle_clock_fraction:.0%} of its maximum"
            )
            if throttled
            else None,
            busy_note=(f"{busy} other process(es) were using this GPU while it was timed; figures may be noisy")
            if busy
            else None,
            elapsed_s=time.monotonic() - start,
            phases_s=phase.totals,
        )
