"""The Function Validator, worker side (docs/architecture.md, "Judging").

For every validation size and seed: fresh inputs, outputs poisoned, shared memory scrubbed, the plan
run twice, every element compared with the float64 reference, inputs checked unchanged.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuda_llm.engine.core.settings import ValidationSettings
from cuda_llm.engine.gpu.compare import HALF_POISON, INT_POISON, Mismatch, OutputComparison, compare_output
from cuda_llm.engine.gpu.device_cases import DeviceCase, TaskCases
from cuda_llm.engine.gpu.device_compare import device_comparison
from cuda_llm.engine.gpu.device_state import DeviceState, reset_for_run
from cuda_llm.engine.gpu.driver import Context, CuModule, DeviceBuffer, allocated_bytes, is_fatal
from cuda_llm.engine.gpu.expected_vault import ExpectedVault
from cuda_llm.engine.gpu.failure_window import describe_from_window
from cuda_llm.engine.gpu.harness import DeviceComparison, Harness
from cuda_llm.engine.gpu.input_masters import InputMasters
from cuda_llm.engine.gpu.phases import PhaseClock
from cuda_llm.engine.gpu.protocol import CaseReport, DeviceInfo, LaunchResources, ValidationReport
from cuda_llm.engine.gpu.reference_cache import ReferenceCache, ReferenceCase
from cuda_llm.engine.gpu.runner import ModuleFunctions, prepare
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.model import BufferSpec, SizeCase, Task
from cuda_llm.engine.task.plan import BoundPlan
from cuda_llm.engine.task.reference import case_seed

# Binds a program that is not a launch plan (PyTorch eager, engine/gpu/eager.py) to one
# case's buffers: (case, device buffers) -> an object with run(ctx), resources and release(ctx).
Binder = Callable[[SizeCase, dict[str, DeviceBuffer]], Any]


@dataclass
class CaseOutcome:
    report: CaseReport
    mismatches: list[Mismatch]
    patterns: list[str]
    resources: tuple[LaunchResources, ...]


def poison(ctx: Context, buf: DeviceBuffer, dtype: str) -> None:
    """Fill an output with its dtype's poison (byte outputs get garbage that is never checked)."""
    d = DTYPES[dtype]
    if d.itemsize == 2:
        ctx.fill16(buf, d.poison or HALF_POISON)
    else:
        ctx.fill32(buf, _poison_word(dtype))


def poison_rows(ctx: Context, ptr: int, pitch: int, rows: int, nbytes: int, dtype: str) -> None:
    """poison() for `rows` copies of an output of `nbytes`, `pitch` bytes apart (one call, however many:
    the profiler's rotating outputs); the last word of a row may spill into the gap after it."""
    d = DTYPES[dtype]
    if d.itemsize == 2:
        ctx.fill_rows16(ptr, pitch, d.poison or HALF_POISON, -(-nbytes // 2), rows)
    else:
        ctx.fill_rows32(ptr, pitch, _poison_word(dtype), -(-nbytes // 4), rows)


def _poison_word(dtype: str) -> int:
    """The 32-bit word a 1-, 4- or 8-byte output is filled with: an 8-byte poison is one word twice,
    a byte's (bool's) four times."""
    d = DTYPES[dtype]
    if d.itemsize == 1 and d.poison is not None:
        return d.poison * 0x01010101
    return (d.poison or INT_POISON) & 0xFFFFFFFF


def task_bytes(task: Task, case: SizeCase) -> int:
    return task.buffer_bytes(case)


class BufferSet:
    """Device buffers for one case: allocated together, freed together."""

    @staticmethod
    def device_bytes(task: Task, case: SizeCase) -> int:
        """Device memory one set takes, alignment slack included."""
        env = task.env(case)
        return sum(allocated_bytes(b.nbytes_for(env)) for b in task.buffers)

    def __init__(self, ctx: Context, task: Task, case: SizeCase) -> None:
        self.ctx = ctx
        env = task.env(case)
        self.specs: dict[str, BufferSpec] = {b.name: b for b in task.buffers}
        self.shapes = {b.name: b.shape_for(env) for b in task.buffers}
        self.device: dict[str, DeviceBuffer] = {}
        self.copies: dict[str, DeviceBuffer] = {}
        try:
            for b in task.buffers:
                self.device[b.name] = ctx.alloc(b.nbytes_for(env))
        except BaseException:
            self.free()
            raise

    def host_empty(self, name: str) -> np.ndarray:
        return np.empty(self.shapes[name], dtype=DTYPES[self.specs[name].dtype].numpy)

    def download(self, name: str, timeout_s: float, snapshot: bool = False) -> np.ndarray:
        """Buffer `name` on the host (its snapshot() copy with snapshot=True)."""
        host = self.host_empty(name)
        self.ctx.download((self.copies if snapshot else self.device)[name], host, timeout_s)
        return host

    def snapshot(self, name: str) -> DeviceBuffer:
        """A device-side copy of buffer `name` as it is now (stream-ordered), freed with the set."""
        if name not in self.copies:
            self.copies[name] = self.ctx.alloc(self.device[name].nbytes)
        self.ctx.copy(self.copies[name], self.device[name])
        return self.copies[name]

    def free(self) -> None:
        for buf in [*self.device.values(), *self.copies.values()]:
            self.ctx.free(buf)
        self.device.clear()
        self.copies.clear()


def run_case(
    ctx: Context,
    info: DeviceInfo,
    harness: Harness,
    funcs: ModuleFunctions | None,  # None for a program a binder runs (no module of its own)
    task: Task,
    plan: BoundPlan,
    case: SizeCase,
    ref: ReferenceCase | DeviceCase,
    label: str,
    settings: ValidationSettings,
    phase: PhaseClock | None = None,
    binder: Binder | None = None,
    masters: dict[str, DeviceBuffer] | None = None,
    vault: ExpectedVault | None = None,
    device_state: DeviceState | None = None,
) -> CaseOutcome:
    """Run one validation case twice and judge it. Raises PlanError, CudaError or KernelTimeout.

    Everything a correct kernel needs is checked on the device: its inputs against a copy made
    there, the second run's outputs against the first's, and the first run's outputs against the
    reference (engine/gpu/device_compare.py). Only a failure brings outputs to the host, to be
    described element by element. `masters`: the case's inputs already on the device (checked
    unchanged: engine/gpu/input_masters.py), copied into the candidate's buffers and serving as the
    copy its inputs are checked against; without them the inputs are uploaded and copied. `vault`:
    the worker's device copies of the expected values (engine/gpu/expected_vault.py).
    `device_state`: the module's `__device__` variables as loaded, put back before the case's first
    run (with the slack around its buffers wiped), so no case sees what an earlier one left; the
    second run sees what the first left, as a second call of the program would. `ref` may be a
    DeviceCase (an imported task's, made on the device: engine/gpu/device_cases.py), whose masters
    must be given and whose expected values are Sealed."""
    phase = phase or PhaseClock()
    input_names = [b.name for b in task.inputs]
    with phase("allocate"):
        bufs = BufferSet(ctx, task, case)
    prepared = None
    clean_up = True
    try:
        with phase("upload"):
            for name in input_names:
                if masters is not None:
                    ctx.copy(bufs.device[name], masters[name])
                else:
                    assert not isinstance(ref, DeviceCase)  # a DeviceCase comes with its masters
                    ctx.upload(bufs.device[name], ref.inputs[name])
        with phase("allocate"):
            if binder is not None:
                prepared = binder(case, bufs.device)
            else:
                assert funcs is not None  # a program without a binder has its module
                prepared = prepare(
                    ctx, info, funcs, plan, task.env(case), task.params(case), bufs.device, task_bytes(task, case)
                )
            pristine = masters if masters is not None else {name: bufs.snapshot(name) for name in input_names}
        timeout = settings.launch_timeout_s
        first_run: dict[str, DeviceBuffer] = {}
        same: dict[str, bool] = {}
        for i, pattern in enumerate(settings.scrub_patterns):
            with phase("run"):
                for b in task.outputs:
                    poison(ctx, bufs.device[b.name], b.dtype)
                if i == 0 and settings.independent_runs:
                    scratch = [b for b in getattr(prepared, "scratch", ()) if isinstance(b, DeviceBuffer)]
                    reset_for_run(ctx, [*bufs.device.values(), *scratch], device_state)
                harness.scrub_shared(pattern)
                prepared.run(ctx)
                ctx.wait(timeout)
            with phase("device checks"):
                if i == 0:
                    first_run = {b.name: bufs.snapshot(b.name) for b in task.outputs}
                else:
                    for b in task.outputs:
                        differ = harness.count_diff(bufs.device[b.name], first_run[b.name], timeout)
                        same[b.name] = same.get(b.name, True) and differ == 0

        problem = None
        with phase("device checks"):
            for name in input_names:
                changed = harness.count_diff(bufs.device[name], pristine[name], timeout)
                if changed:
                    problem = f"the kernel wrote to input {name!r} ({changed} bytes changed); inputs are read-only"
                    break

        comparisons: list[OutputComparison] = []
        assert ref.expected is not None
        for b in task.outputs:
            scale = ref.scale[b.name] if ref.scale else None
            with phase("compare"):
                result, passed = device_comparison(
                    ctx,
                    harness,
                    first_run[b.name],
                    b,
                    ref.expected[b.name],
                    scale,
                    task.tolerance,
                    ref.rms_of(b.name),
                    timeout,
                    vault,
                )
            if passed is not None and same.get(b.name, True):
                comparisons.append(passed)
                continue
            if bufs.device[b.name].nbytes > settings.describe_whole_max_bytes:
                with phase("compare"):
                    comparison, why = judge_runs_on_device(
                        ctx, harness, bufs, b, ref, task, settings, (result, passed), same.get(b.name, True), vault
                    )
                comparisons.append(comparison)
                problem = problem or why
                continue
            # A failure: both runs come to the host to be described.
            with phase("download"):
                first = bufs.download(b.name, timeout, snapshot=True)
                second = first if same.get(b.name, True) else bufs.download(b.name, timeout)
            with phase("download"):
                on_host = host_reference(ctx, ref, b, first.shape, timeout)
            with phase("compare"):
                comparison, why = judge_runs_on_host(b.name, on_host, first, second, task, settings)
            comparisons.append(comparison)
            problem = problem or why

        wrong = sum(c.wrong for c in comparisons)
        report = CaseReport(
            label=label,
            passed=wrong == 0 and problem is None,
            checked=sum(c.checked for c in comparisons),
            wrong=wrong,
            unwritten=sum(c.unwritten for c in comparisons),
            worst_ratio=max((c.worst_ratio for c in comparisons), default=0.0),
            problem=problem,
        )
        mismatches = [dataclasses.replace(m, case=label) for c in comparisons for m in c.mismatches]
        patterns = [f"{c.output}: {c.pattern}" if len(comparisons) > 1 else c.pattern for c in comparisons if c.pattern]
        return CaseOutcome(report, mismatches, patterns, prepared.resources)
    except BaseException as exc:
        clean_up = not is_fatal(exc)
        raise
    finally:
        if clean_up:
            if prepared is not None:
                prepared.release(ctx)
            bufs.free()


def host_reference(
    ctx: Context, ref: ReferenceCase | DeviceCase, spec: BufferSpec, shape: tuple[int, ...], timeout_s: float
) -> ReferenceCase:
    """`ref` with output `spec`'s expected values on the host, to describe a failure element by element:
    a DeviceCase's are brought down from the device (only a failing output's, only then)."""
    if not isinstance(ref, DeviceCase):
        return ref
    sealed = ref.expected[spec.name]
    values = np.empty(shape, dtype=np.float64)
    buf = sealed.lend()
    try:
        ctx.download(buf, values, timeout_s)
    finally:
        sealed.give_back()
    values.setflags(write=False)
    return ReferenceCase({}, {spec.name: values}, None, {spec.name: ref.rms_of(spec.name)})


def judge_runs_on_host(
    name: str,
    ref: ReferenceCase,
    first: np.ndarray,
    second: np.ndarray,
    task: Task,
    settings: ValidationSettings,
) -> tuple[OutputComparison, str | None]:
    """Compare both runs of one output with the reference on the host: the comparison to report
    (the second run's when only it is wrong) and a problem line when the runs disagree."""
    assert ref.expected is not None
    expected = ref.expected
    scale = ref.scale[name] if ref.scale else None

    def compare(got: np.ndarray) -> OutputComparison:
        spec = task.buffer(name)
        dtype = spec.dtype if spec is not None else None
        return compare_output(name, expected[name], got, task.tolerance, scale, settings.mismatches_reported, dtype)

    result = compare(first)
    if second is first:
        return result, None
    if result.passed:
        again = compare(second)
        if again.passed:
            return result, None  # not bit-identical, yet both right (say, float atomics in another order)
        return again, _second_run_wrong(name, again.wrong)
    if not np.array_equal(first, second, equal_nan=True):
        return result, _runs_differ(name)
    return result, None


def _second_run_wrong(name: str, wrong: int) -> str:
    return (
        f"two runs on the same inputs differ: the second run leaves {wrong} "
        f"element(s) of {name!r} wrong (a race, or a read of memory nothing "
        "wrote, e.g. uninitialised shared memory)"
    )


def _runs_differ(name: str) -> str:
    return (
        f"results also differ between two runs on the same inputs ({name!r}): a race or a read of uninitialised memory"
    )


def judge_runs_on_device(
    ctx: Context,
    harness: Harness,
    bufs: BufferSet,
    spec: BufferSpec,
    ref: ReferenceCase | DeviceCase,
    task: Task,
    settings: ValidationSettings,
    first: tuple[DeviceComparison, OutputComparison | None],
    same: bool,
    vault: ExpectedVault | None,
) -> tuple[OutputComparison, str | None]:
    """judge_runs_on_host() for an output too large to bring to the host whole: `first` is the device
    comparison of the first run (its snapshot); the second run, where it differs from the first, is
    compared on the device too; a failing run is described from a window (engine/gpu/failure_window.py)."""
    assert ref.expected is not None
    expected = ref.expected[spec.name]
    scale = ref.scale[spec.name] if ref.scale else None
    rms = ref.rms_of(spec.name)
    timeout = settings.launch_timeout_s

    def describe(got: DeviceBuffer, result: DeviceComparison) -> OutputComparison:
        return describe_from_window(
            ctx,
            spec.name,
            spec.dtype,
            bufs.shapes[spec.name],
            got,
            expected,
            scale,
            task.tolerance,
            rms,
            result,
            settings.failure_window_elements,
            settings.mismatches_reported,
            timeout,
        )

    result, passed = first
    if passed is None:
        return describe(bufs.copies[spec.name], result), None if same else _runs_differ(spec.name)
    assert not same, "a passing first run the second run matches needs no description"
    again, passed_again = device_comparison(
        ctx, harness, bufs.device[spec.name], spec, expected, scale, task.tolerance, rms, timeout, vault
    )
    if passed_again is not None:
        return passed, None  # not bit-identical, yet both right (say, float atomics in another order)
    return describe(bufs.device[spec.name], again), _second_run_wrong(spec.name, again.wrong)


def summarize(task: Task, cases: list[CaseReport], not_run: int = 0) -> str:
    failed = [c for c in cases if not c.passed]
    if not failed:
        worst = max((c.worst_ratio for c in cases), default=0.0)
        return (
            f"correct on all {len(cases)} cases ({len(task.validation)} sizes); worst error "
            f"{worst:.2g} of the tolerance"
        )
    first = failed[0]
    what = first.problem or (
        f"{first.wrong} of {first.checked} elements wrong"
        + (f" ({first.unwritten} never written)" if first.unwritten else "")
    )
    tail = f"; {not_run} larger case{'s' if not_run != 1 else ''} not run" if not_run else ""
    return f"wrong in {len(failed)} of {len(cases)} cases; first: {first.label}: {what}{tail}"


def case_order(task: Task) -> list[SizeCase]:
    """The validation cases smallest first (by the bytes of their buffers; the task's order among equals),
    so a kernel wrong anywhere is usually refused before a large case is ever made."""
    return sorted(task.validation, key=task.buffer_bytes)


def validate(
    ctx: Context,
    info: DeviceInfo,
    harness: Harness,
    refs: ReferenceCache,
    task: Task,
    module: CuModule,
    plan: BoundPlan,
    settings: ValidationSettings,
    binder: Binder | None = None,
    inputs: InputMasters | None = None,
    vault: ExpectedVault | None = None,
    device_state: DeviceState | None = None,
    device_cases: TaskCases | None = None,
) -> ValidationReport:
    """Judge one loaded module. PlanError/CudaError/KernelTimeout propagate to the worker, which
    turns them into a verdict (and restarts itself after a sticky error or a hang). `inputs` and
    `vault`: the worker's device copies of the cases' inputs and expected values, reused by every
    candidate. `device_cases`: an imported task's cases made on the device (engine/gpu/device_cases.py), in
    place of `refs` and `inputs`: nothing of the case's size passes through host memory."""
    start = time.monotonic()
    phase = PhaseClock()
    funcs = ModuleFunctions(ctx, module) if binder is None else None
    cases: list[CaseReport] = []
    mismatches: list[Mismatch] = []
    patterns: list[str] = []
    resources: tuple[LaunchResources, ...] = ()
    not_run = 0
    for case in case_order(task):
        if task.buffer_bytes(case) > settings.after_failure_max_bytes and any(not c.passed for c in cases):
            not_run += case.seeds  # a large case costs seconds and cannot change the verdict
            continue
        for s in range(case.seeds):
            label = f"{case.label} seed {s}"
            seed = case_seed(task, case, s)
            made: DeviceCase | None = None
            try:
                ref: ReferenceCase | DeviceCase
                masters = None
                if device_cases is not None:
                    with phase("reference"):
                        ref = made = device_cases.get(case, seed)
                    masters = made.masters
                else:
                    with phase("reference"):
                        ref = refs.get(task, case, seed)
                    if inputs is not None:
                        with phase("upload"):
                            key = (task.fingerprint, case.label, seed)
                            masters = inputs.get(key, ref.inputs, harness, settings.launch_timeout_s)
                outcome = run_case(
                    ctx,
                    info,
                    harness,
                    funcs,
                    task,
                    plan,
                    case,
                    ref,
                    label,
                    settings,
                    phase,
                    binder,
                    masters,
                    vault,
                    device_state,
                )
            except Exception as exc:
                exc.case = label  # type: ignore[attr-defined]  # the worker names the case in its report
                if made is not None and device_cases is not None and not is_fatal(exc):
                    device_cases.release(made)
                raise
            if made is not None and device_cases is not None:
                device_cases.release(made)
            cases.append(outcome.report)
            resources = outcome.resources
            if len(mismatches) < settings.mismatches_reported:
                mismatches.extend(outcome.mismatches[: settings.mismatches_reported - len(mismatches)])
            for p in outcome.patterns:
                tagged = f"{p} at {label}"
                if tagged not in patterns and len(patterns) < 4:
                    patterns.append(tagged)
    passed = all(c.passed for c in cases)
    return ValidationReport(
        verdict="correct" if passed else "wrong",
        summary=summarize(task, cases, not_run),
        cases=tuple(cases),
        mismatches=tuple(mismatches),
        patterns=tuple(patterns),
        resources=resources,
        elapsed_s=time.monotonic() - start,
        phases_s=phase.totals,
        not_run=not_run,
    )
