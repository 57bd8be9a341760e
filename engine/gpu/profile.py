"""The Performance Profiler, worker side (docs/architecture.md, "Judging").

The baseline and the candidates of a round are timed in one session, interleaved sample by sample:
CUDA events on the harness stream around the whole launch plan, the L2 flushed before every sample,
warm-up by time, adaptive repetition (median and IQR), CUDA graphs of K replays for short plans,
samples under a throttled SM clock discarded. Each program runs on several copies of its buffers in
turn (placements), so where the memory happens to lie is averaged over rather than drawn once.
After timing, the same buffers get new input values and each program must still produce the right
answer (catches results cached between runs).

No run can lean on an earlier one: before every run, timed or not, the outputs are poisoned, the
slack around the buffers wiped and the module's `__device__` variables put back to their loaded
values (engine/gpu/device_state.py), all outside the timed region; a program with such variables is
never replayed in a graph, whose replays are not separate runs. After timing, every program's inputs
are checked, trusted ones too; when some changed, each untrusted program is run alone to find which
did it, and the report names it, so the judge can time the others again without it instead of
blaming whoever was written to.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuda_llm.engine.core.settings import ProfileSettings, ValidationSettings
from cuda_llm.engine.gpu.device_cases import DeviceCase, TaskCases
from cuda_llm.engine.gpu.device_compare import compare_on_device
from cuda_llm.engine.gpu.device_state import DeviceState, reset_for_run
from cuda_llm.engine.gpu.driver import BUFFER_ALIGNMENT, Context, CudaError, DeviceBuffer, is_fatal
from cuda_llm.engine.gpu.eager import EAGER_LABEL
from cuda_llm.engine.gpu.expected_vault import ExpectedVault
from cuda_llm.engine.gpu.harness import Harness
from cuda_llm.engine.gpu.input_masters import InputMasters
from cuda_llm.engine.gpu.levels import split_levels
from cuda_llm.engine.gpu.library import LIBRARY_LABEL, BoundLibrary, Library, LibraryError
from cuda_llm.engine.gpu.phases import PhaseClock
from cuda_llm.engine.gpu.protocol import DeviceInfo, Fault, ProfileReport, Timing
from cuda_llm.engine.gpu.reference_cache import ReferenceCache, ReferenceCase
from cuda_llm.engine.gpu.runner import ModuleFunctions, PlanError, PreparedPlan, prepare
from cuda_llm.engine.gpu.stop_rule import placement_medians, should_stop, spread_within_placements
from cuda_llm.engine.gpu.telemetry import Nvml
from cuda_llm.engine.gpu.torch_compile import TORCH_COMPILE_LABEL
from cuda_llm.engine.gpu.validate import BufferSet, poison, poison_rows, task_bytes
from cuda_llm.engine.task.model import Task
from cuda_llm.engine.task.reference import case_seed

# Host-side cost of enqueuing one launch from Python (measured 3.5-5.4 us on H100/H200); the delay
# kernel in front of a timed region covers this many microseconds per launch, plus a fixed margin.
_ENQUEUE_US_PER_LAUNCH = 12.0
_ENQUEUE_MARGIN_US = 30.0
# A library call queues its kernels from Python (CuPy, cuBLAS): until its own enqueue time has been
# measured, the delay kernel assumes this much.
_LIBRARY_ENQUEUE_GUESS_US = 200.0
# ...and never delays a sample longer than this (a library slower to queue than that would count its
# host time, and a timeout would end the profile).
_LIBRARY_ENQUEUE_CAP_US = 20_000.0
# Graph replays per sample are capped: more adds nothing once launch latency is amortised.
_MAX_GRAPH_REPLAYS = 1000
# Each replay of a graph writes outputs of its own (_Rotation); all of a program's copies may take at
# most this share of the placements' memory allowance, so a graph of short replays with large
# outputs gets fewer replays rather than crowding the other programs' buffers out.
_ROTATION_MEMORY_SHARE = 0.25


@dataclass
class _Placement:
    """One copy of a program's buffers, with the plan bound to it (and its graph, when replayed)."""

    bufs: BufferSet
    prepared: PreparedPlan | BoundLibrary | None = None  # the library's program duck-types the plan
    graph: Any = None


@dataclass
class _Rotation:
    """Where each replay of a graph writes its outputs: `rows` copies of every output, `pitch` bytes
    apart, each poisoned before every sample, so no replay finds an earlier one's result in its
    outputs, and each one's result is there to check."""

    pools: dict[str, DeviceBuffer]  # output name -> `rows` rows of `pitch` bytes
    pitch: dict[str, int]
    rows: int

    def row(self, name: str, i: int, nbytes: int) -> DeviceBuffer:
        return DeviceBuffer(self.pools[name].ptr + i * self.pitch[name], nbytes)


@dataclass
class _Entry:
    label: str
    funcs: ModuleFunctions | None  # None for the library's program
    plan: Any
    trusted: bool = False
    library: Library | None = None  # the vendor library's program, bound per placement
    placements: list[_Placement] = field(default_factory=list)
    turn: int = 0  # runs so far: which placement the next one uses
    replays: int = 1  # K plan runs per sample in graph mode (at least 2); 1 in events mode
    samples: list[float] = field(default_factory=list)
    sample_placements: list[int] = field(default_factory=list)  # which placement each kept sample ran on
    clocks: list[float | None] = field(default_factory=list)  # NVML's SM clock after each kept sample
    discarded: int = 0
    gpu_s: float = 0.0
    done: bool = False
    fault: Fault | None = None
    state_check: str | None = None
    state: DeviceState | None = None  # its module's __device__ variables as loaded
    rotation: _Rotation | None = None  # graph mode: each replay's own outputs

    @property
    def first(self) -> _Placement | None:
        """The placement the state check re-runs, and whose plan describes the resources."""
        return self.placements[0] if self.placements else None

    def next_placement(self) -> _Placement:
        """The placement the next run uses (each in turn)."""
        p = self.placements[self.turn % len(self.placements)]
        self.turn += 1
        return p

    @staticmethod
    def enqueue_on(ctx: Context, p: _Placement) -> None:
        """Queue one run on placement `p`: its graph of replays, or one run of the plan."""
        assert p.prepared is not None
        if p.graph is not None:
            ctx.launch_graph(p.graph)
        else:
            p.prepared.run(ctx)

    @property
    def graphed(self) -> bool:
        return self.replays > 1

    @property
    def launches(self) -> int:
        p = self.first
        if p is None or p.prepared is None:
            return 1
        return 1 if p.graph is not None else len(p.prepared.launches)

    def enqueue_us(self) -> float:
        """How long the host takes to queue one run; the delay kernel in front must outlast it."""
        if self.library is not None:
            known = [
                us
                for p in self.placements
                if isinstance(p.prepared, BoundLibrary) and (us := p.prepared.enqueue_us) is not None
            ]
            usual = max(known) if known else _LIBRARY_ENQUEUE_GUESS_US
            return _ENQUEUE_MARGIN_US + min(2 * usual, _LIBRARY_ENQUEUE_CAP_US)
        return _ENQUEUE_MARGIN_US + _ENQUEUE_US_PER_LAUNCH * self.launches

    def release(self, ctx: Context) -> None:
        """Free every placement's device memory and graph (what the report needs stays)."""
        for p in self.placements:
            if p.graph is not None:
                ctx.destroy_graph(p.graph)
                p.graph = None
            if p.prepared is not None:
                p.prepared.release(ctx)
            p.bufs.free()
        if self.rotation is not None:
            for buf in self.rotation.pools.values():
                ctx.free(buf)
            self.rotation = None


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
        inputs: InputMasters | None = None,
        vault: ExpectedVault | None = None,
    ) -> None:
        """`inputs`: the worker's device copies of the inputs (engine/gpu/input_masters.py), copied
        from instead of uploading the timing size's inputs for every job; without them, uploaded.
        `vault`: its copies of the expected values, for the state check (engine/gpu/expected_vault.py)."""
        self.ctx = ctx
        self.inputs = inputs
        self.vault = vault
        self.info = info
        self.harness = harness
        self.refs = refs
        self.nvml = nvml
        self.s = settings
        self.vs = vsettings
        self.ev0 = ctx.event()
        self.ev1 = ctx.event()
        self._masters: dict[str, Any] = {}
        self._outputs: tuple[Any, ...] = ()
        self._tampering: tuple[str, ...] = ()  # this profile's culprits (see _trace)
        self._unexplained: str | None = None
        self._cases: TaskCases | None = None  # the job's imported task's cases on the device, if any

    # ---- one sample ----------------------------------------------------------------------
    def _timed(self, entry: _Entry, flush: bool) -> float:
        """Run the entry once between events; return GPU milliseconds. A fault names the entry."""
        try:
            return self._timed_unchecked(entry, flush)
        except Exception as exc:
            exc.case = entry.label  # type: ignore[attr-defined]  # which program took the worker down
            raise

    def _timed_unchecked(self, entry: _Entry, flush: bool) -> float:
        p = entry.next_placement()
        if self.vs.independent_runs:
            self._fresh(entry, p)
        # The flush comes after the poison, and stays however many bytes the poison wrote: the
        # poison's writes leave dirty lines in the L2 and need not displace evict_last ones. Without
        # the flush their write-back would land in the timed region (5-10 us a run on an H100,
        # bench.timing_methods), unequally: a kernel that writes its output's end first finds those
        # lines (the poison's last) cached; and lines kept evict_last would outlive the run
        # (bench.l2_residency). The judge would no longer treat baseline and candidate alike.
        if flush:
            self.harness.flush_l2()
        self.harness.delay_us(entry.enqueue_us())
        self.ctx.record(self.ev0)
        entry.enqueue_on(self.ctx, p)
        self.ctx.record(self.ev1)
        self.ctx.wait(self.vs.launch_timeout_s)
        return self.ctx.elapsed_ms(self.ev0, self.ev1)

    def _fresh(self, entry: _Entry, p: _Placement) -> None:
        """Before a run, outside any timed region: outputs poisoned, so a program that returns at once
        when they hold a number leaves the poison for the check after timing to find; the slack
        around its buffers wiped and its module's variables put back, so nothing of an earlier run
        is left for it to find."""
        for b in self._outputs:
            poison(self.ctx, p.bufs.device[b.name], b.dtype)
        if entry.rotation is not None:
            r = entry.rotation
            for b in self._outputs:
                poison_rows(
                    self.ctx, r.pools[b.name].ptr, r.pitch[b.name], r.rows, p.bufs.device[b.name].nbytes, b.dtype
                )
        scratch = [b for b in getattr(p.prepared, "scratch", ()) if isinstance(b, DeviceBuffer)]
        reset_for_run(self.ctx, [*p.bufs.device.values(), *scratch], entry.state)

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
        """Run every entry round-robin for warmup_ms of wall time, or until NVML reads the SM clock up
        (at least two rounds, or one on each placement if more); return each one's fastest run. Each
        GPU of a round times its own group after a gap, so each would otherwise pay the whole
        warmup_ms for a clock that is up after a few rounds."""
        best: dict[str, float] = {e.label: float("inf") for e in entries}
        deadline = time.monotonic() + (0.0 if self._clock_is_up() else self.s.warmup_ms / 1000)
        least = max([2, *(len(e.placements) for e in entries)])
        rounds = 0
        while rounds < least or (time.monotonic() < deadline and not self._clock_is_up()):
            for e in entries:
                if e.fault is None:
                    try:
                        best[e.label] = min(best[e.label], self._timed(e, flush=True) * 1000)
                    except LibraryError as exc:  # the library call itself failed: no library figure
                        e.fault, e.done = Fault("launch_error", "library", str(exc)), True
            rounds += 1
            if rounds > 10_000:
                break
        return best

    def _choose_mode(self, entry: _Entry, est_us: float) -> None:
        # A library call may allocate or synchronise while queuing: it is never captured in a graph.
        if est_us >= self.s.graph_threshold_us or entry.library is not None or entry.fault is not None:
            return
        # Its __device__ variables are put back before every run; a graph's replays follow each other
        # with nothing between them, so the second could find what the first left.
        if self.vs.independent_runs and entry.state is not None and entry.state.writable:
            return
        k = int(min(_MAX_GRAPH_REPLAYS, max(2, np.ceil(self.s.graph_target_us / max(est_us, 0.5)))))
        if self.vs.independent_runs:
            rotation = self._rotation(entry, k)
            if rotation is None:
                return  # no room for each replay's own outputs: one run a sample, as a long plan
            entry.rotation, k = rotation, rotation.rows
        for p in entry.placements:
            prepared = p.prepared
            assert prepared is not None
            runs: list[PreparedPlan | BoundLibrary] = [prepared] * k
            if entry.rotation is not None and isinstance(prepared, PreparedPlan):
                rot = entry.rotation
                runs = [
                    prepared.retargeted(
                        {
                            p.bufs.device[b.name].ptr: rot.row(b.name, i, p.bufs.device[b.name].nbytes).ptr
                            for b in self._outputs
                        }
                    )
                    for i in range(k)
                ]

            def body(runs: list[PreparedPlan | BoundLibrary] = runs) -> None:
                for run in runs:
                    run.run(self.ctx)

            p.graph = self.ctx.capture_graph(body)
        entry.replays = k
        for _ in entry.placements:
            self._timed(entry, flush=True)  # the first launch of a graph uploads it: keep that out

    def _rotation(self, entry: _Entry, k: int) -> _Rotation | None:
        """Room for `k` copies of the outputs (fewer, at least 2, where the device has less to spare:
        a shorter graph), each on its own 2 MiB boundary like every buffer; None where not even 2 fit."""
        first = entry.first
        assert first is not None
        pitch = {
            b.name: -(-max(first.bufs.device[b.name].nbytes, 1) // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT
            for b in self._outputs
        }
        row_bytes = sum(pitch.values())
        room = int(self.ctx.free_memory() * self.s.placement_memory_share * _ROTATION_MEMORY_SHARE)
        rows = min(k, room // max(1, row_bytes))
        if rows < 2:
            return None
        pools: dict[str, DeviceBuffer] = {}
        try:
            for name, step in pitch.items():
                pools[name] = self.ctx.alloc(rows * step)
        except CudaError as exc:
            for buf in pools.values():
                self.ctx.free(buf)
            if exc.sticky:
                raise
            return None
        return _Rotation(pools, pitch, rows)

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
                try:
                    ms = self._timed(e, flush=True)
                except LibraryError as exc:
                    e.fault, e.done = Fault("launch_error", "library", str(exc)), True
                    continue
                throttled, clock = self._throttled()
                e.gpu_s += ms / 1000
                if throttled:
                    e.discarded += 1
                else:
                    e.samples.append(ms * 1000 / e.replays)
                    e.sample_placements.append((e.turn - 1) % len(e.placements))  # the run just timed
                    e.clocks.append(clock)
                e.done = should_stop(
                    e.samples,
                    discarded=e.discarded,
                    placement_count=len(e.placements),
                    gpu_s=e.gpu_s,
                    settings=self.s,
                )
            if time.monotonic() - start > wall_cap:
                break

    def _state_check(self, task: Task, entries: list[_Entry]) -> None:
        """New input values in the very buffers that were timed; every program must still be right.
        Before that, while the masters still hold the timed values, every program's inputs are
        checked unchanged (trusted ones too: a candidate that wrote the baseline's inputs would
        change the yardstick), and a change is traced to the program that made it."""
        case = task.timing
        inputs = [b.name for b in task.inputs]
        seed = case_seed(task, case, 0)
        ref: ReferenceCase | DeviceCase
        if self._cases is not None:
            ref = self._cases.get(case, seed)
            try:
                self._check_all(task, entries, inputs, seed, ref)
            except BaseException as exc:
                if not is_fatal(exc):
                    self._cases.release(ref)
                raise
            self._cases.release(ref)
        else:
            ref = self.refs.get(task, case, seed)
            self._check_all(task, entries, inputs, seed, ref)

    def _check_all(
        self, task: Task, entries: list[_Entry], inputs: list[str], seed: int, ref: ReferenceCase | DeviceCase
    ) -> None:
        timed = [e for e in entries if e.fault is None and e.placements]
        if self.vs.independent_runs:
            changed = self._changed_inputs(timed, inputs)
            if changed:
                self._trace(timed, inputs, changed)
        else:
            for e in timed:
                if e.trusted:
                    continue
                own = self._changed_inputs([e], inputs).get(e.label)
                if own:
                    e.state_check = f"the kernel changed input {own[0]!r} while being timed"
        # The new values go up once, into the masters (no program reads them any more).
        if isinstance(ref, DeviceCase):
            for name in inputs:
                self.ctx.copy(self._masters[name], ref.masters[name])
        else:
            self._fill_masters(task, seed, ref.inputs)
        for e in timed:
            if e.trusted or e.state_check is not None:
                continue
            try:
                e.state_check = self._check_one(task, e, ref)
            except LibraryError as exc:
                e.state_check = str(exc)
            except Exception as exc:
                exc.case = e.label  # type: ignore[attr-defined]  # the worker names the culprit
                raise

    def _changed_inputs(self, entries: list[_Entry], inputs: list[str]) -> dict[str, list[str]]:
        """{label: the inputs that differ from the masters on some placement} of `entries`."""
        changed: dict[str, list[str]] = {}
        for e in entries:
            try:
                names = [
                    name
                    for name in inputs
                    if any(
                        self.harness.count_diff(p.bufs.device[name], self._masters[name], self.vs.launch_timeout_s)
                        for p in e.placements
                    )
                ]
            except Exception as exc:
                exc.case = e.label  # type: ignore[attr-defined]  # the worker names the culprit
                raise
            if names:
                changed[e.label] = names
        return changed

    def _restore_inputs(self, entries: list[_Entry], inputs: list[str]) -> None:
        for e in entries:
            for p in e.placements:
                for name in inputs:
                    self.ctx.copy(p.bufs.device[name], self._masters[name])

    def _trace(self, entries: list[_Entry], inputs: list[str], changed: dict[str, list[str]]) -> None:
        """Some inputs changed while the group was timed: run each untrusted program alone, on every
        placement, with every input put back first, and see whose run changes any. Those are the
        culprits (their state check says what they wrote); nobody else is blamed. Recorded for the
        report: the judge times the others again without the culprits."""
        culprits: list[str] = []
        for suspect in entries:
            if suspect.trusted:
                continue
            self._restore_inputs(entries, inputs)
            try:
                for _ in suspect.placements:
                    self._timed(suspect, flush=False)
            except LibraryError:
                continue  # the library call failed: it ran nothing to blame (nor to time)
            hit = self._changed_inputs(entries, inputs)
            if not hit:
                continue
            culprits.append(suspect.label)
            own = hit.pop(suspect.label, None)
            if own and not hit:
                suspect.state_check = f"the kernel changed input {own[0]!r} while being timed"
            else:
                victim, names = next(iter(hit.items()))
                suspect.state_check = (
                    f"while being timed, the kernel wrote to input {names[0]!r} of another program timed with it "
                    f"({victim}): a kernel may write only its own outputs and scratch"
                )
        self._restore_inputs(entries, inputs)
        self._tampering = tuple(culprits)
        if not culprits:
            self._unexplained = (
                f"inputs of {', '.join(sorted(changed))} changed while the group was timed, and no program "
                "changed them when run alone"
            )

    def _fill_masters(self, task: Task, seed: int, host_inputs: dict[str, Any]) -> None:
        """The timing size's inputs of `seed` into the masters: copied from the worker's device copy
        (checked unchanged there) where it has one, else uploaded. An imported task's come from its
        cases on the device (self._cases: kept there while they fit, else made again)."""
        if self._cases is not None:
            made = self._cases.get(task.timing, seed, with_expected=False)
            try:
                for b in task.inputs:
                    self.ctx.copy(self._masters[b.name], made.masters[b.name])
            finally:
                self._cases.release(made)
            return
        resident = None
        if self.inputs is not None:
            key = (task.fingerprint, task.timing.label, seed)
            resident = self.inputs.get(key, host_inputs, self.harness, self.vs.launch_timeout_s)
        for name, host in host_inputs.items():
            if resident is not None:
                self.ctx.copy(self._masters[name], resident[name])
            else:
                self.ctx.upload(self._masters[name], host)

    def _check_one(self, task: Task, e: _Entry, ref: Any) -> str | None:
        """One run as it was timed (a graph's replays each into its own outputs) on new input values;
        every output it wrote must be right."""
        p = e.first
        assert p is not None and p.prepared is not None and ref.expected is not None
        bufs = p.bufs
        for name in (b.name for b in task.inputs):
            self.ctx.copy(bufs.device[name], self._masters[name])
        for b in task.outputs:
            poison(self.ctx, bufs.device[b.name], b.dtype)
        if self.vs.independent_runs:
            self._fresh(e, p)
        rotation = e.rotation if p.graph is not None else None
        if rotation is not None:
            self.ctx.launch_graph(p.graph)
        else:
            p.prepared.run(self.ctx)
        self.ctx.wait(self.vs.launch_timeout_s)
        for b in task.outputs:
            nbytes = bufs.device[b.name].nbytes
            written = (
                [bufs.device[b.name]]
                if rotation is None
                else [rotation.row(b.name, i, nbytes) for i in range(rotation.rows)]
            )
            wrong, replay = 0, 0
            for i, got in enumerate(written):
                wrong, _ = compare_on_device(
                    self.ctx,
                    self.harness,
                    got,
                    b,
                    ref.expected[b.name],
                    ref.scale[b.name] if ref.scale else None,
                    task.tolerance,
                    ref.rms_of(b.name),
                    self.vs.launch_timeout_s,
                    self.vault,
                )
                if wrong > 0:
                    replay = i + 1
                    break
            if wrong:
                return (
                    f"after timing, new input values in the same buffers gave {wrong} wrong "
                    f"element(s) of {b.name!r}"
                    + (
                        f" in replay {replay} of {rotation.rows} of the timed graph (each replay writes outputs "
                        "of its own, poisoned before): the kernel skips work when it finds results there"
                        if rotation is not None
                        else ": the kernel returns results cached from earlier runs"
                    )
                )
        return None

    def _placement_count(self, task: Task, entries: int) -> int:
        """As many placements as settings ask for, within their share of the free device memory."""
        one = BufferSet.device_bytes(task, task.timing)
        fits = int(self.ctx.free_memory() * self.s.placement_memory_share) // max(1, one * entries)
        return max(1, min(self.s.placements, fits))

    def _set_up(self, task: Task, e: _Entry, placements: int) -> None:
        """The entry's own buffers, `placements` copies of them, each filled from the masters on the
        device with the plan bound to it. A plan that cannot run here marks the entry faulty; a
        sticky CUDA error propagates."""
        case = task.timing
        try:
            for _ in range(placements):
                p = _Placement(BufferSet(self.ctx, task, case))
                e.placements.append(p)
                for b in task.inputs:
                    self.ctx.copy(p.bufs.device[b.name], self._masters[b.name])
                if e.library is not None:
                    p.prepared = e.library.bind(task, case, p.bufs.device)
                    for b in task.outputs:
                        poison(self.ctx, p.bufs.device[b.name], b.dtype)
                    continue
                assert e.funcs is not None  # only the library's program has none
                p.prepared = prepare(
                    self.ctx,
                    self.info,
                    e.funcs,
                    e.plan,
                    task.env(case),
                    task.params(case),
                    p.bufs.device,
                    task_bytes(task, case),
                )
                for b in task.outputs:
                    poison(self.ctx, p.bufs.device[b.name], b.dtype)
        except PlanError as exc:
            e.fault, e.done = Fault("launch_error", "plan", str(exc)), True
        except LibraryError as exc:
            e.fault, e.done = Fault("launch_error", "library", str(exc)), True
        except CudaError as exc:
            if exc.sticky:
                raise
            e.fault = Fault("launch_error", exc.name, f"could not set up the timing run: {exc}")
            e.done = True

    # ---- the job ---------------------------------------------------------------------------
    def profile(
        self,
        task: Task,
        programs: list[tuple[str, Any, Any, bool]],
        library: Library | None = None,
        eager: Any = None,
        torch_compile: Any = None,
        states: dict[str, DeviceState] | None = None,
        cases: TaskCases | None = None,
    ) -> ProfileReport:
        """Time (label, loaded module, bound plan, trusted) programs interleaved at the timing size,
        and the task's vendor-library program with them when `library` is given (checked against the
        reference afterwards like any untrusted program). `states`: each program's module variables
        as loaded (engine/gpu/device_state.py), by label, put back before each of its runs. `cases`:
        an imported task's cases made on the device (engine/gpu/device_cases.py), in place of the
        host's."""
        start = time.monotonic()
        self._outputs = task.outputs
        self._tampering, self._unexplained = (), None
        phase = PhaseClock()
        case = task.timing
        self._cases = cases
        timed_seed = case_seed(task, case, 0, "profile")
        timed_inputs: dict[str, Any] = {}
        if cases is None:
            with phase("reference"):
                timed_inputs = self.refs.get(task, case, timed_seed, with_expected=False).inputs
        busy = self.nvml.other_processes() if self.nvml else None
        entries = [
            _Entry(label, ModuleFunctions(self.ctx, module), plan, trusted, state=(states or {}).get(label))
            for label, module, plan, trusted in programs
        ]
        if eager is not None:
            # PyTorch eager as an imported task's baseline (engine/gpu/eager.py): a program
            # bound like the library's, trusted like the baseline it stands for.
            entries.insert(0, _Entry(EAGER_LABEL, None, None, trusted=True, library=eager))
        if library is not None:
            entries.append(_Entry(LIBRARY_LABEL, None, None, library=library))
        if torch_compile is not None:
            # torch.compile of the same module (engine/gpu/torch_compile.py), bound like eager; its
            # result was checked against the reference when it was compiled, so it is trusted too
            # (checking it here would need a copy into the outputs inside its timed runs).
            entries.append(_Entry(TORCH_COMPILE_LABEL, None, None, trusted=True, library=torch_compile))
        # The inputs go up once; every program's own buffers are filled from them on the device.
        with phase("upload"):
            env = task.env(case)
            self._masters = {b.name: self.ctx.alloc(b.nbytes_for(env)) for b in task.inputs}
            self._fill_masters(task, timed_seed, timed_inputs)
        try:
            with phase("set-up"):
                placements = self._placement_count(task, len(entries))
                for e in entries:
                    self._set_up(task, e, placements)
            live = [e for e in entries if e.fault is None]
            with phase("warm-up"):
                best = self._warm_up(live)
                for e in live:
                    self._choose_mode(e, best[e.label])
            with phase("sample"):
                self._sample(live)
            with phase("state check"):
                self._state_check(task, live)
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
                    e.release(self.ctx)

        timings = []
        throttled = sum(e.discarded for e in entries)
        for e in entries:
            if e.samples and e.fault is None:
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
                        mode="graph" if e.graphed else "events",
                        replays=e.replays,
                        sm_clock_mhz=float(np.median(known)) if (known := [c for c in e.clocks if c]) else None,
                        state_check=e.state_check,
                        resources=e.first.prepared.resources if e.first and e.first.prepared else (),
                        placements=len(e.placements),
                        levels=split_levels(e.samples, e.clocks, self.s.level_gap, self.s.level_min_share),
                        placement_spread=spread_within_placements(e.samples, e.sample_placements),
                        placement_medians_us=placement_medians(e.samples, e.sample_placements),
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
            tampering=self._tampering,
            tampering_unexplained=self._unexplained,
        )
