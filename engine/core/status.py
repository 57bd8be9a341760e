"""A candidate's status, the one table every layer reads: the GPU worker's verdicts, the judgement, the
prompt's order of failures, the headless progress lines, the TUI's marks and colours, bench's counts.
tests/test_layers.py fails if a second table of statuses appears.

A consumer's own states (the TUI's phases before a verdict, its "best") are the consumer's, beside
this table, never copies of its rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Status = Literal[
    "format_error",  # the reply breaks the contract (no code, bad plan, unknown kernel...)
    "compile_error",
    "compiled",  # compile-only mode: compiled and bound, not run
    "launch_error",  # the device refused the launch (limits, resources)
    "crashed",
    "timed_out",
    "wrong",
    "correct",
    "suspect",  # correct, but its timing cannot be trusted (faster than the roofline, ...)
]
# What a GPU worker's validation answers: the statuses decided on the device.
Verdict = Literal["correct", "wrong", "launch_error", "crashed", "timed_out"]
# How a fault that ends a GPU worker's job (a sticky CUDA error, a hang, a refused launch) is recorded.
FaultKind = Literal["crashed", "timed_out", "launch_error"]

# The step of judging that gave a candidate its status (engine/fsr/events.py CandidateJudged). A stage
# is named for the step, a status for the outcome, and no name is both: "compiled" is only ever a
# status (compile-only mode's verdict), so a stage can never be shown as a verdict nor a verdict read
# as a step on the way to the GPU (tests/fsr/test_stages.py fails on an overlap).
Stage = Literal[
    "parse",  # the reply broke the contract (format_error)
    "compile",  # NVRTC or binding the plan refused it (compile_error, launch_error)
    "validate",  # the GPU's verdict, or compile-only mode's "compiled", or a repeat's first's verdict
    "profile",  # timed: correct or suspect, with figures
    "restore",  # read back from the store (a resumed or opened session), not judged again
]
STAGES: tuple[Stage, ...] = get_args(Stage)


@dataclass(frozen=True)
class StatusInfo:
    word: str  # as a person reads it: "compile error"
    mark: str  # one terminal cell (no emoji: they are two cells in many terminals)
    color: str  # the theme variable that colours it (themes/)
    # The order in which a failure is worth the model's attention, nearly-right code first (the
    # prompt lists failures so); None for a status that is no failure.
    rank: int | None
    compiled: bool  # the source compiled and its plan bound (bench counts these)
    timed: bool = False  # it was profiled: its figures are a latency and shares of the ceilings
    # The program's own verdict, which judging it again in the session would repeat: a reply that
    # repeats a judged program keeps it (engine/fsr/repeats.py). A crash or a time-out may be the
    # machine's, and is judged again.
    repeatable: bool = True

    @property
    def failure(self) -> bool:
        return self.rank is not None


STATUSES: dict[str, StatusInfo] = {
    "format_error": StatusInfo("format error", "?", "status-wrong", 5, compiled=False),
    "compile_error": StatusInfo("compile error", "✗", "status-wrong", 4, compiled=False),
    "compiled": StatusInfo("compiled", "○", "status-compiled", None, compiled=True),
    "launch_error": StatusInfo("launch error", "!", "status-crashed", 1, compiled=False),
    "crashed": StatusInfo("crashed", "!", "status-crashed", 3, compiled=True, repeatable=False),
    "timed_out": StatusInfo("timed out", "∞", "status-crashed", 2, compiled=True, repeatable=False),
    "wrong": StatusInfo("wrong", "✗", "status-wrong", 0, compiled=True),
    "correct": StatusInfo("correct", "✓", "status-correct", None, compiled=True, timed=True),
    # Decided by its timing, which a repeat does not have.
    "suspect": StatusInfo("suspect", "?", "status-crashed", None, compiled=True, timed=True, repeatable=False),
}
assert tuple(STATUSES) == get_args(Status) and set(get_args(Verdict)) | set(get_args(FaultKind)) <= set(STATUSES)
assert not set(STAGES) & set(STATUSES), "a stage named as a status"

FAILED = frozenset(s for s, info in STATUSES.items() if info.failure)
TIMED = frozenset(s for s, info in STATUSES.items() if info.timed)
REPEATABLE = frozenset(s for s, info in STATUSES.items() if info.repeatable)
