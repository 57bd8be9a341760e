"""The three feature functions in order: Compilation Verifier, Function Validator, Performance Profiler.

`Judge` holds what a task's judging needs (the compiler pool, the GPU worker, the baseline) and
exposes each stage, so the FSR loop can emit an event between stages, and `judge()` for one-shot use
(`cuda-llm eval`). Every failure becomes a `Judgement` with a status and a one-line message; nothing
a candidate does raises out of here.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cuda_llm.engine.compile.cubin import CubinError, module_memory
from cuda_llm.engine.compile.result import CompileResult
from cuda_llm.engine.compile.source import CheckedSource, check_source
from cuda_llm.engine.contract.binding import bind_plan
from cuda_llm.engine.contract.limits import LaunchLimits, PlanError, arch_limits, check_every_size, device_limits
from cuda_llm.engine.contract.reply import parse_reply
from cuda_llm.engine.contract.signature import KernelScan, parse_kernels
from cuda_llm.engine.core.concurrency import gather_or_cancel
from cuda_llm.engine.core.errors import FormatError, UserError, headline
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.library import LIBRARY_LABEL, library_name
from cuda_llm.engine.gpu.protocol import DeviceInfo, Peaks, ProfileReport, RanOn, Timing
from cuda_llm.engine.gpu.torch_compile import TORCH_COMPILE_LABEL, TORCH_COMPILE_NAME
from cuda_llm.engine.judge.judgement import (
    BASELINE_LABEL,
    Candidate,
    Compiled,
    Judgement,
    LibraryResult,
    Origin,
    RoundTiming,
    Status,
    validation_phases,
)
from cuda_llm.engine.judge.metrics import (
    PHYSICAL_NAME,
    Figures,
    describe_levels,
    figures,
    roofline_text,
    share_text,
    speedup_text,
)
from cuda_llm.engine.judge.output_caps import capped_compile
from cuda_llm.engine.judge.pools import Compilers, Gpus, LocalGpus
from cuda_llm.engine.judge.schedule import expected_cost_s, split_by_cost
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.model import Task

# The baseline's file in a task folder (engine/task/loader.py's default name).
BASELINE_SOURCE = "baseline.cu"

if TYPE_CHECKING:  # the pool and the worker are passed in; importing them here would pull in NVRTC
    from cuda_llm.engine.counters.model import CountersReport
    from cuda_llm.engine.counters.runner import NcuCounters


# A profiling session interrupted by something no candidate did (the worker was killed, the GPU
# was reset under us) is run again this many times before the round goes on without timings.
PROFILE_RETRIES = 2


def compile_warnings(task: Task, result: CompileResult) -> tuple[str, ...]:
    warnings: list[str] = []
    # A task with half-precision buffers (fp16, bf16) converts to and from them by design.
    halves = any(DTYPES[b.dtype].is_float and DTYPES[b.dtype].itemsize < 4 for b in task.buffers)
    if task.roofline.peak == "fp32" and not halves and result.precision_hints:
        warnings.append("uses reduced precision on an fp32 task: " + ", ".join(result.precision_hints))
    if result.writes_device_globals:
        names = ", ".join(g.name for g in result.device_globals if g.written)
        warnings.append(f"writes __device__ global variables ({names}): results must not be kept between runs")
    for k in result.kernels:
        if k.spill_store_bytes or k.spill_load_bytes:
            warnings.append(
                f"kernel {k.name} spills registers ({k.spill_store_bytes} bytes stored, {k.spill_load_bytes} loaded)"
            )
    return tuple(warnings)


class Judge:
    """Judges the candidates of one task on one device (or compile-only without a GPU)."""

    def __init__(
        self,
        task: Task,
        compiler: Compilers,
        gpu: Gpus | None,
        arch: str,
        settings: Settings,
        device: DeviceInfo | None = None,
        peaks: Peaks | None = None,
        counters: NcuCounters | None = None,
    ) -> None:
        self.task = task
        self.compiler = compiler
        self.gpu = gpu
        self.arch = arch
        self.settings = settings
        self.device = device
        self.peaks = peaks
        self.counters = counters  # reads hardware counters on this machine's GPU; None: not here
        self._baseline: Compiled | None = None
        self._library: LibraryResult | None = None
        self._torch_compile: LibraryResult | None = None
        # What a launch may ask for: the GPU's own limits, or the target arch's in compile-only mode.
        self.limits: LaunchLimits = device_limits(device) if device is not None else arch_limits(arch)

    @property
    def compile_only(self) -> bool:
        return self.gpu is None

    # ---- stage 0: the reply's format -------------------------------------------------------
    def parse(self, label: str, reply: str, origin: Origin = "model") -> Candidate | Judgement:
        try:
            parsed = parse_reply(reply)
        except FormatError as exc:
            return Judgement(label, "format_error", headline(str(exc)), detail=str(exc))
        return Candidate(label, parsed.source, parsed.plan, parsed.explanation, origin)

    # ---- stage 1: Compilation Verifier -------------------------------------------------------
    def _precheck(self, cand: Candidate) -> tuple[CheckedSource, KernelScan]:
        # The checks that cost least first (size, NUL, UTF-8, includes): a 5 MB source is refused
        # at once, not after seconds of signature parsing.
        checked = check_source(cand.source, self.settings.compile)
        kernels = parse_kernels(cand.source)
        # Plan errors that need no compiler are found first: a cheaper, clearer message.
        bind_plan(cand.plan, self.task, kernels)
        return checked, kernels

    async def compile(self, cand: Candidate) -> Compiled | Judgement:
        try:
            # Off the event loop: a hostile source makes even linear checks take a noticeable while,
            # and the UI (and Ctrl-C) must not wait for them.
            checked, kernels = await asyncio.to_thread(self._precheck, cand)
            result = await self.compiler.compile(checked, self.arch)
            # What the candidate adds to every record and output, within bounds (output_caps.py).
            compile_settings = self.settings.compile
            result = capped_compile(result, compile_settings.max_ptx_bytes, compile_settings.max_log_bytes)
        except FormatError as exc:
            return Judgement(cand.label, "format_error", headline(str(exc)), detail=str(exc), candidate=cand)
        if not result.ok:
            errors = [d for d in result.diagnostics if d.severity == "error"]
            if errors:
                d = errors[0]
                where = f"line {d.line}: " if d.line else ""
                message = f"compile error at {where}{d.message}" + (
                    f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
                )
            else:
                message = result.error or "compile failed"
            return Judgement(cand.label, "compile_error", message, detail=result.log, candidate=cand, compile=result)
        try:
            bound = bind_plan(cand.plan, self.task, kernels, result.ptx_entries)
        except FormatError as exc:
            return Judgement(
                cand.label,
                "format_error",
                headline(str(exc)),
                detail=str(exc),
                candidate=cand,
                compile=result,
            )
        try:
            # Every validation and timing size against the limits, before anything runs: compile-only
            # mode refuses what no GPU of the arch could launch, as the GPU worker would.
            static = {k.name: k.shared_bytes for k in result.kernels}
            # The module's own __device__ variables are working memory too: counted with the scratch
            # before anything is loaded (a 64 GiB array compiles, and would bind).
            module = module_memory(result.cubin) if result.cubin is not None else None
            check_every_size(bound, self.task, self.limits, static, module)
        except CubinError as exc:
            message = f"the compiled module could not be read to count its __device__ variables: {exc}"
            return Judgement(cand.label, "launch_error", message, candidate=cand, compile=result)
        except PlanError as exc:
            return Judgement(
                cand.label, "launch_error", headline(str(exc)), detail=str(exc), candidate=cand, compile=result
            )
        return Compiled(cand, result, bound)

    # ---- stage 2: Function Validator ---------------------------------------------------------
    async def validate(self, compiled: Compiled) -> Judgement:
        cand = compiled.candidate
        warnings = compile_warnings(self.task, compiled.compile)
        if self.gpu is None:
            return Judgement(
                cand.label,
                "compiled",
                "compiled and bound (no GPU: not run)",
                candidate=cand,
                compile=compiled.compile,
                warnings=warnings,
            )
        report = await self.gpu.validate(self.task, compiled.program())
        status: Status = "correct" if report.verdict == "correct" else report.verdict
        if report.printf_bytes:
            warnings += (f"the kernel printed {report.printf_bytes} bytes (printf slows kernels down)",)
        return Judgement(
            cand.label,
            status,
            report.summary,
            candidate=cand,
            compile=compiled.compile,
            validation=report,
            warnings=warnings,
            device=self.device.name if self.device else None,
            ran_on=report.ran_on,
            phases_s=validation_phases(report),
        )

    # ---- stage 3: Performance Profiler -------------------------------------------------------
    async def baseline(self) -> Compiled:
        """The task's baseline, compiled once; it is timed again in every profiling session."""
        if self._baseline is None:
            cand = Candidate(BASELINE_LABEL, self.task.baseline_source, self.task.baseline_plan, origin="baseline")
            compiled = await self.compile(cand)
            if isinstance(compiled, Judgement):
                raise UserError(baseline_problem(self.task, compiled))
            self._baseline = compiled
        return self._baseline

    async def baseline_judgement(self) -> Judgement:
        """The baseline validated and (with a GPU) timed alone: the first 'best' of a session."""
        baseline = await self.baseline()
        verdict = await self.validate(baseline)
        if verdict.status not in ("correct", "compiled") or self.gpu is None:
            return verdict
        rt = await self.profile([])
        if rt.baseline is None:
            return verdict
        fig = figures(
            self.task,
            rt.baseline,
            self.peaks,
            rt.baseline,
            self.settings.profile.suspect_physical_share,
            self.torch_compile_timing,
        )
        return dataclasses.replace(
            verdict,
            timing=rt.baseline,
            figures=fig,
            message=describe_timing(fig),
            device=rt.device,
            ran_on=rt.ran_on or verdict.ran_on,
            phases_s={**verdict.phases_s, "timing": sum(sum(p.values()) for p in rt.profile_phases_s)},
        )

    async def profile(
        self, entries: Sequence[tuple[Compiled, Judgement]], anchor: tuple[Compiled, Judgement] | None = None
    ) -> RoundTiming:
        """Time these correct programs, interleaved with the baseline (and `anchor`, the current best),
        and attach figures. With several GPUs the programs are split across them and each GPU times
        the baseline and the anchor next to its share, so a program is only ever compared with
        programs timed on its own GPU (RoundTiming.anchors holds the anchor's timing per program).

        A program that crashes the worker while being timed is marked crashed and the rest are timed
        again without it. An interruption no program caused (the worker was killed, the machine
        hiccuped) is retried; if it persists, the programs keep their verdicts without a timing."""
        assert self.gpu is not None
        workers = max(1, getattr(self.gpu, "size", 1))
        # By expected cost, longest first (engine/judge/schedule.py): a slow candidate gets a GPU of its own.
        groups = split_by_cost(entries, workers, lambda e: expected_cost_s(e[1], self.settings.profile))
        parts = await gather_or_cancel(
            self._profile_group(g, anchor, i if workers > 1 else None) for i, g in enumerate(groups)
        )
        judged = tuple(j for part in parts for j in part.judgements)
        anchors = {k: v for part in parts for k, v in part.anchors.items()}
        notes = tuple(n for part in parts for n in part.notes)
        # GPUs a cluster lost or got back since the last round (engine/cluster/cluster_pool.py).
        take_events = getattr(self.gpu, "take_events", None)
        if take_events is not None:
            notes += tuple(take_events())
        first = parts[0]
        phases = tuple(p for part in parts for p in part.profile_phases_s)
        return RoundTiming(first.device, first.baseline, judged, notes, anchors, first.anchor, phases, first.ran_on)

    async def _profile_group(
        self,
        entries: Sequence[tuple[Compiled, Judgement]],
        anchor: tuple[Compiled, Judgement] | None,
        worker: int | None,
        alone: bool = False,
    ) -> RoundTiming:
        """Time one group on one GPU. A program that changed inputs while being timed (the worker ran
        each alone to find it) is wrong, and the others are timed again without it: their figures
        were taken on changed inputs. When no program did it alone, each candidate is timed again in
        a group of its own (`alone`); if inputs still change there, it gets no figure and no blame."""
        assert self.gpu is not None  # profile() is only called with a GPU
        gpu = self.gpu
        baseline = await self.baseline()
        pending = {c.candidate.label: (c, j) for c, j in entries}
        fixed = [baseline.program()] + ([anchor[0].program()] if anchor else [])
        crashed: dict[str, Judgement] = {}
        notes: list[str] = []
        interruptions = 0
        while True:
            programs = fixed + [c.program() for c, _ in pending.values()]
            if worker is None:
                outcome = await gpu.profile(self.task, programs)
            else:
                outcome = await gpu.profile(self.task, programs, worker=worker)
            if isinstance(outcome, ProfileReport):
                known = [
                    label for label in outcome.tampering if label in pending or (anchor and label == anchor[1].label)
                ]
                if known:
                    by_label = {t.label: t for t in outcome.timings}
                    for label in known:
                        why = by_label[label].state_check if label in by_label else None
                        message = f"while being timed: {why or 'it changed inputs'}"
                        notes.append(f"{label} changed inputs while being timed; the others were timed again")
                        if label in pending:
                            _c, j = pending.pop(label)
                            crashed[label] = dataclasses.replace(j, status="wrong", message=message)
                        elif anchor is not None and label == anchor[1].label:
                            fixed, anchor = fixed[:1], None  # the best so far did it: no longer a yardstick
                    continue
                unexplained = outcome.tampering_unexplained or (
                    f"{', '.join(outcome.tampering)} changed inputs while being timed" if outcome.tampering else None
                )
                if unexplained and not alone and len(pending) > 1:
                    notes.append(f"{unexplained}: each candidate was timed again on its own")
                    return await self._profile_alone(list(pending.values()), anchor, worker, crashed, notes)
                if unexplained:
                    untimed = tuple(
                        dataclasses.replace(j, warnings=(*j.warnings, f"could not be timed: {unexplained}"))
                        for _c, j in pending.values()
                    )
                    return RoundTiming(outcome.device, None, untimed + tuple(crashed.values()), tuple(notes))
                break
            culprit = outcome.fault.case
            if culprit is None or culprit not in pending:
                interruptions += 1
                notes.append(f"timing was interrupted ({outcome.fault.message}); timed again")
                if interruptions <= PROFILE_RETRIES:
                    continue
                untimed = tuple(
                    dataclasses.replace(j, warnings=(*j.warnings, f"could not be timed: {outcome.fault.message}"))
                    for _c, j in pending.values()
                )
                return RoundTiming(
                    self.device.name if self.device else "?", None, untimed + tuple(crashed.values()), tuple(notes)
                )
            _c, j = pending.pop(culprit)
            crashed[culprit] = dataclasses.replace(
                j,
                status=outcome.fault.kind if outcome.fault.kind != "launch_error" else "crashed",
                message=f"while being timed: {outcome.fault.message}",
            )
        by_label = {t.label: t for t in outcome.timings}
        base_t = by_label.get(BASELINE_LABEL)
        if outcome.throttle_note:
            notes.append(outcome.throttle_note)
        if outcome.busy_note:
            notes.append(outcome.busy_note)
        ran_on = outcome.ran_on
        if ran_on is not None and ran_on.node_id is not None:
            where = ran_on.describe()  # on a cluster: the GPU and its node, wherever the group ended up
        else:
            where = outcome.device if worker is None else f"{outcome.device} #{worker}"
        took = outcome.elapsed_s
        judged = [
            self._with_timing(j, by_label.get(label), base_t, where, ran_on, took) for label, (_c, j) in pending.items()
        ]
        anchor_j = None
        if anchor is not None:
            anchor_j = self._with_timing(anchor[1], by_label.get(anchor[1].label), base_t, where, ran_on, took)
        anchors = {j.label: anchor_j.timing for j in judged if anchor_j is not None and anchor_j.timing is not None}
        judged.extend(crashed.values())
        return RoundTiming(
            outcome.device, base_t, tuple(judged), tuple(notes), anchors, anchor_j, (outcome.phases_s,), ran_on
        )

    async def _profile_alone(
        self,
        entries: list[tuple[Compiled, Judgement]],
        anchor: tuple[Compiled, Judgement] | None,
        worker: int | None,
        crashed: dict[str, Judgement],
        notes: list[str],
    ) -> RoundTiming:
        """Each candidate in a group of its own with the baseline (and the anchor), one after the
        other on the same GPU: whatever changes inputs there is the candidate's or the anchor's."""
        parts = [await self._profile_group([e], anchor, worker, alone=True) for e in entries]
        first = next((p for p in parts if p.baseline is not None), parts[0])
        judged = tuple(j for part in parts for j in part.judgements) + tuple(crashed.values())
        anchors = {k: v for part in parts for k, v in part.anchors.items()}
        all_notes = tuple(notes) + tuple(n for part in parts for n in part.notes)
        phases = tuple(ph for part in parts for ph in part.profile_phases_s)
        return RoundTiming(first.device, first.baseline, judged, all_notes, anchors, first.anchor, phases, first.ran_on)

    def _with_timing(
        self,
        j: Judgement,
        t: Timing | None,
        base_t: Timing | None,
        where: str,
        ran_on: RanOn | None = None,
        took_s: float = 0.0,
    ) -> Judgement:
        """`took_s`: the profiling job's seconds, its "timing" phase (shared with the programs timed beside it)."""
        j = dataclasses.replace(j, phases_s={**j.phases_s, "timing": took_s})
        if t is None or t.fault is not None:
            msg = t.fault.message if t and t.fault else "no timing"
            return dataclasses.replace(
                j, status="launch_error", message=f"timing failed: {msg}", ran_on=ran_on or j.ran_on
            )
        fig = figures(
            self.task, t, self.peaks, base_t, self.settings.profile.suspect_physical_share, self.torch_compile_timing
        )
        status: Status = j.status if j.status != "suspect" else "correct"
        warnings = tuple(w for w in j.warnings if not w.startswith("measured "))
        if t.state_check:
            status, message = "wrong", t.state_check
        else:
            message = describe_timing(fig)
            if fig.suspect:
                status = "suspect"
                warnings += (fig.suspect,)
        return dataclasses.replace(
            j,
            status=status,
            message=message,
            timing=t,
            figures=fig,
            warnings=warnings,
            device=where,
            ran_on=ran_on or j.ran_on,
        )

    # ---- the vendor library, a second yardstick -------------------------------------------------
    async def library(self) -> LibraryResult:
        """The task's vendor-library program timed with the baseline on the (first) GPU and checked
        against the reference; measured once per Judge. Without a GPU, CuPy or a library.py, the
        result says why there is no figure."""
        if self._library is not None:
            return self._library
        name = library_name(self.task)
        if name is None:
            return LibraryResult(None, note=f"task {self.task.name!r} has no vendor-library reference")
        if self.gpu is None:
            return LibraryResult(name, note="compile-only: no GPU to time it on")
        baseline = await self.baseline()
        outcome = await self.gpu.profile(self.task, [baseline.program()], library=True)
        if not isinstance(outcome, ProfileReport):
            return LibraryResult(name, note=f"could not be timed: {outcome.fault.message}")
        by_label = {t.label: t for t in outcome.timings}
        t, base_t = by_label.get(LIBRARY_LABEL), by_label.get(BASELINE_LABEL)
        if t is None:
            result = LibraryResult(outcome.library_name or name, note=outcome.library_note or "not timed")
        elif t.fault is not None:
            result = LibraryResult(name, note=t.fault.message, device=outcome.device)
        elif t.state_check:
            note = f"its result failed validation against the reference: {t.state_check}"
            result = LibraryResult(name, note=note, device=outcome.device)
        else:
            fig = figures(self.task, t, self.peaks, base_t, self.settings.profile.suspect_physical_share)
            result = LibraryResult(outcome.library_name or name, t, fig, device=outcome.device)
        self._library = result
        return result

    # ---- torch.compile, an imported task's optional second yardstick -----------------------------
    @property
    def torch_compile_timing(self) -> Timing | None:
        """torch.compile's timing once torch_compile() timed it: every later figure's second speedup."""
        return self._torch_compile.timing if self._torch_compile is not None else None

    async def torch_compile(self) -> LibraryResult:
        """An imported task's module through torch.compile: compiled in a request of its own (with its
        own time limit, on the first GPU), then timed interleaved with eager like the vendor library;
        measured once per Judge. Judgements timed after it carry 'x torch.compile' beside 'x eager'
        (its time over theirs; on several GPUs, against the first GPU's figure). When there is no
        figure, the result's note says why in one line, and everything goes on with eager alone."""
        if self._torch_compile is None:
            self._torch_compile = await self._time_torch_compile()
        return self._torch_compile

    async def _time_torch_compile(self) -> LibraryResult:
        name = TORCH_COMPILE_NAME
        if self.task.pytorch_module is None:
            return LibraryResult(name, note=f"task {self.task.name!r} is not imported from a PyTorch module")
        if self.gpu is None:
            return LibraryResult(name, note="compile-only: no GPU to time it on")
        if not isinstance(self.gpu, LocalGpus):
            return LibraryResult(name, note="torch.compile is timed on this machine's own GPUs only")
        note = await self.gpu.torch_compile(self.task)
        if note is not None:
            return LibraryResult(name, note=note)
        baseline = await self.baseline()
        outcome = await self.gpu.profile(self.task, [baseline.program()], torch_compile=True)
        if not isinstance(outcome, ProfileReport):
            return LibraryResult(name, note=f"could not be timed: {outcome.fault.message}")
        by_label = {t.label: t for t in outcome.timings}
        t, base_t = by_label.get(TORCH_COMPILE_LABEL), by_label.get(BASELINE_LABEL)
        if t is None:
            return LibraryResult(name, note=outcome.torch_compile_note or "not timed")
        if t.fault is not None:
            return LibraryResult(name, note=t.fault.message, device=outcome.device)
        fig = figures(self.task, t, self.peaks, base_t, self.settings.profile.suspect_physical_share)
        return LibraryResult(name, t, fig, device=outcome.device)

    # ---- hardware counters: what limits it (engine/counters) ----------------------------------
    async def read_counters(self, compiled: Compiled) -> CountersReport:
        """The program's hardware counters at the timing size and what they say limits it, read in a
        process of its own after timing (never inside it). Without a local GPU or ncu, the report
        holds the one line that says why."""
        from cuda_llm.engine.counters.model import unavailable

        if self.gpu is None or self.device is None:
            return unavailable("compile-only: there is no GPU to read counters on")
        if self.counters is None:
            return unavailable("counters are read on this machine's own GPUs only (not on a cluster's)")
        return await self.counters.collect(self.task, compiled.program(), self.device)

    # ---- all three, for one candidate ----------------------------------------------------------
    async def judge(self, cand: Candidate, profile: bool = True) -> Judgement:
        compiled = await self.compile(cand)
        if isinstance(compiled, Judgement):
            return compiled
        verdict = await self.validate(compiled)
        if not profile or verdict.status != "correct":
            return verdict
        timing = await self.profile([(compiled, verdict)])
        return timing.judgements[0]


def describe_timing(fig: Figures) -> str:
    parts = [f"correct; {fig.median_us:.1f} us (IQR {fig.iqr_us:.1f})"]
    if (speed := speedup_text(fig)) is not None:
        parts.append(speed)
    if fig.floor_us:
        parts.append(roofline_text(fig.roofline_pct, fig.bound))
    if fig.physical_floor_us:
        parts.append(share_text(fig.physical_pct, PHYSICAL_NAME))
    if fig.levels:
        parts.append(describe_levels(fig.levels) + " (the median depends on the mix)")
    return ", ".join(parts)


def baseline_problem(task: Task, judged: Judgement) -> str:
    """A task whose own baseline is refused, as the one line its author acts on: the file, the line
    and the first error (the candidate's file name in a compiler diagnostic is the baseline's)."""
    path = task.folder / BASELINE_SOURCE
    compiled = judged.compile
    errors = [d for d in compiled.diagnostics if d.severity == "error"] if compiled is not None else []
    first = next((d for d in errors if d.line is not None), errors[0] if errors else None)
    if first is not None and first.line is not None:
        where, what = f"{path}:{first.line}", first.message
    else:
        where, what = str(path), judged.message
    return (
        f"{where}: the baseline of task {task.name!r} does not compile ({judged.status.replace('_', ' ')}: {what}); "
        f"`cuda-llm eval {task.folder} {path} --plan {task.folder / 'baseline.json'} --compile-only` shows it all"
    )
