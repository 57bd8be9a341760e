"""Which GPU times which candidates of a round: by expected cost, longest first, each to the GPU with
the least work so far (LPT), so a slow candidate does not hold one GPU while another idles.

A candidate's timing costs about a fixed set-up (its placements, warm-up, the state check afterwards)
plus its samples, each as long as one run of its plan at the timing size. Its validation ran that plan
twice at the timing size (and at the small sizes, which take microseconds), so the validation's
"run" phase predicts the samples' length before any timing exists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from cuda_llm.engine.core.settings import ProfileSettings
from cuda_llm.engine.judge.judgement import Judgement

T = TypeVar("T")

# A program's timing costs at least this much besides its samples (placements set up, the warm-up's
# rounds, the state check): a few milliseconds on an H100 for a memory-bound task of 400 MB.
PROGRAM_OVERHEAD_S = 0.005
# Samples a program typically takes before its spread is small enough (min_samples is 10).
EXPECTED_SAMPLES = 30


def expected_cost_s(judgement: Judgement, settings: ProfileSettings) -> float:
    """Seconds the profiler is expected to spend on this candidate (PROGRAM_OVERHEAD_S when its
    validation says nothing of its speed)."""
    report = judgement.validation
    run_s = report.phases_s.get("run") if report is not None and report.phases_s else None
    if not run_s:
        return PROGRAM_OVERHEAD_S
    per_run = run_s / 2  # validation runs the plan twice per case; the timing size dominates
    return PROGRAM_OVERHEAD_S + min(settings.max_gpu_time_s, EXPECTED_SAMPLES * per_run)


def split_by_cost(items: Sequence[T], gpus: int, cost: Callable[[T], float]) -> list[list[T]]:
    """`items` into min(gpus, len(items)) groups (one empty group when there are none): longest
    first, each to the group with the least expected work (the lowest index on a tie). Each group
    keeps the items' own order."""
    count = max(1, min(gpus, len(items)))
    costs = [cost(item) for item in items]
    load = [0.0] * count
    owner = [0] * len(items)
    for i in sorted(range(len(items)), key=lambda i: (-costs[i], i)):
        g = min(range(count), key=lambda g: (load[g], g))
        owner[i] = g
        load[g] += costs[i]
    return [[item for i, item in enumerate(items) if owner[i] == g] for g in range(count)]
