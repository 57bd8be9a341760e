"""What judging a candidate produces: plain frozen data (no CUDA, no compiler) that the store, the
prompt builder, the TUI and the reports all read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from cuda_llm.engine.compile.result import CompileResult
from cuda_llm.engine.core.status import FAILED, TIMED, Status
from cuda_llm.engine.counters.model import CountersReport
from cuda_llm.engine.gpu.protocol import ProgramRef, RanOn, Timing, ValidationReport
from cuda_llm.engine.judge.metrics import Figures
from cuda_llm.engine.task.plan import BoundPlan, LaunchPlan

Origin = Literal["model", "user", "baseline", "replay"]
BASELINE_LABEL = "baseline"
# A judgement's phases, in the order they run (Judgement.phases): "inputs" is copying a case's inputs
# into place (or uploading them), "reference" making the cases (their inputs and float64 expected
# values: on the GPU for an imported task), "validation" the rest of validating, "timing" the
# profiling job the candidate was timed in (shared by the programs timed with it).
PHASES = ("compile", "inputs", "reference", "validation", "timing", "counters")


def validation_phases(report: ValidationReport) -> dict[str, float]:
    """A worker's validation report's phases (engine/gpu/phases.py) in the judgement's words."""
    reference = report.phases_s.get("reference", 0.0)
    inputs = report.phases_s.get("upload", 0.0)
    rest = max(0.0, report.elapsed_s - reference - inputs) + report.load_s
    return {"inputs": inputs, "reference": reference, "validation": rest}


def phases_text(phases: dict[str, float]) -> str:
    """'compile 0.12 s, reference 2.1 s, validation 0.31 s, timing 1.9 s'."""
    return ", ".join(
        f"{name} {seconds:.2g} s" if seconds < 1 else f"{name} {seconds:.1f} s" for name, seconds in phases.items()
    )


@dataclass(frozen=True)
class Candidate:
    label: str
    source: str
    plan: LaunchPlan
    explanation: str = ""
    origin: Origin = "model"
    based_on: str | None = None  # for a person's edit: the label of the kernel it was edited from


@dataclass(frozen=True)
class Compiled:
    candidate: Candidate
    compile: CompileResult
    bound: BoundPlan

    def program(self) -> ProgramRef:
        assert self.compile.cubin is not None
        return ProgramRef(
            self.candidate.label, self.compile.cubin, self.bound, trusted=self.candidate.origin == "baseline"
        )


@dataclass(frozen=True)
class Judgement:
    label: str
    status: Status
    message: str  # one line, for the user and the model
    detail: str = ""  # the full text behind the message (a format error, the compile log)
    candidate: Candidate | None = None
    compile: CompileResult | None = None
    validation: ValidationReport | None = None
    timing: Timing | None = None
    figures: Figures | None = None
    warnings: tuple[str, ...] = ()
    device: str | None = None
    # The machine and GPU its last GPU stage (validation, or timing) ran on; None without a GPU.
    ran_on: RanOn | None = None
    # Hardware counters at the timing size and what they say limits it (engine/counters), when read.
    counters: CountersReport | None = None
    # The label whose verdict this candidate took, being the same program (engine/fsr/repeats.py).
    repeat_of: str | None = None
    # Seconds its GPU stages took, by phase (validation_phases(), "timing"); phases() adds compile and
    # counters from their own reports.
    phases_s: dict[str, float] = field(default_factory=dict)

    def phases(self) -> dict[str, float]:
        """Where the time went, in PHASES' order: compile, inputs, reference, validation, timing,
        counters (those it went through)."""
        known = dict(self.phases_s)
        if self.compile is not None:
            known["compile"] = self.compile.elapsed_s
        if self.counters is not None:
            known["counters"] = self.counters.elapsed_s
        return {name: known[name] for name in PHASES if name in known}

    @property
    def failed(self) -> bool:
        return self.status in FAILED

    @property
    def is_correct(self) -> bool:
        return self.status in TIMED


@dataclass(frozen=True)
class RoundTiming:
    """The timings of one profiling session: the baseline and the programs timed with it."""

    device: str
    baseline: Timing | None
    judgements: tuple[Judgement, ...]
    notes: tuple[str, ...] = ()
    # The anchor (the current best) as timed on each program's own GPU, by the program's label:
    # what a program must beat, measured in the same session on the same GPU.
    anchors: dict[str, Timing] = field(default_factory=dict)
    anchor: Judgement | None = None  # the anchor's judgement from the first GPU's session
    # Where each GPU's profiling job spent its time (ProfileReport.phases_s), one entry per GPU.
    profile_phases_s: tuple[dict[str, float], ...] = ()
    ran_on: RanOn | None = None  # where the first GPU's session (the one `baseline` comes from) ran


@dataclass(frozen=True)
class LibraryResult:
    """The vendor library's figure for a task on one GPU (engine/gpu/library.py): a second yardstick
    beside the baseline, timed with it, checked against the same reference."""

    name: str | None  # what was timed ("cuBLAS SGEMM (through CuPy)"); None: the task has no library.py
    timing: Timing | None = None
    figures: Figures | None = None  # its speedup is over the baseline timed in the same session
    note: str | None = None  # why there is no figure, when there is none
    device: str | None = None

    @property
    def median_us(self) -> float | None:
        return self.timing.median_us if self.timing is not None else None

    def of_library(self, median_us: float) -> float | None:
        """How a program of `median_us` compares: the library's time over it (above 1: faster)."""
        return self.timing.median_us / median_us if self.timing is not None and median_us > 0 else None
