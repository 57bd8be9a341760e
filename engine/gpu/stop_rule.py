"""When the profiler stops sampling a program (engine/gpu/profile.py).

A program is timed on several copies of its buffers in turn (placements). Where in DRAM a copy lies
moves some kernels' latency by 1-3%, and that offset holds for as long as the buffers live: more
samples never shrink it. So the spread that decides whether the median has settled is measured
within each placement (every sample over its own placement's median), while the reported median and
quartiles stay pooled over the placements. Judged on the pooled samples instead, a kernel whose
placements differ by about the stop threshold (layernorm: 1.1% against 1%) ran to the sample cap on
some GPUs and stopped at 12 samples on others, and a round waited for the GPU that drew it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuda_llm.engine.core.settings import ProfileSettings

# A placement's median from a single sample is that sample, which would put a deviation of exactly
# zero into the spread: each placement needs this many before the spread may stop the program.
MIN_SAMPLES_PER_PLACEMENT = 2


def rel_iqr(xs: Sequence[float] | np.ndarray) -> float:
    """The interquartile range over the median; infinite for a median of zero or less."""
    q1, med, q3 = np.percentile(xs, [25, 50, 75])
    return float((q3 - q1) / med) if med > 0 else float("inf")


def spread_within_placements(samples: Sequence[float], placements: Sequence[int]) -> float:
    """The IQR over the median of the samples, each divided by the median of its own placement
    (`placements[i]` is sample i's). Infinite while a placement has fewer than
    MIN_SAMPLES_PER_PLACEMENT samples. With one placement this is the plain relative IQR."""
    if len(samples) != len(placements):
        raise ValueError(f"{len(samples)} samples but {len(placements)} placements")
    xs = np.asarray(samples, dtype=float)
    where = np.asarray(placements)
    if xs.size == 0:
        return float("inf")
    scaled = np.empty_like(xs)
    for p in np.unique(where):
        mine = where == p
        if int(mine.sum()) < MIN_SAMPLES_PER_PLACEMENT:
            return float("inf")
        med = float(np.median(xs[mine]))
        if med <= 0:
            return float("inf")
        scaled[mine] = xs[mine] / med
    return rel_iqr(scaled)


def placement_medians(samples: Sequence[float], placements: Sequence[int]) -> tuple[float, ...]:
    """Each placement's median over its own samples, in placement order."""
    xs, where = np.asarray(samples, dtype=float), np.asarray(placements)
    return tuple(float(np.median(xs[where == p])) for p in np.unique(where))


def should_stop(
    samples: Sequence[float],
    placements: Sequence[int],
    *,
    discarded: int,
    placement_count: int,
    gpu_s: float,
    settings: ProfileSettings,
) -> bool:
    """Whether sampling of one program ends after its latest run: its spread within placements has
    settled (only after whole turns over its `placement_count` placements, so every placement
    weighs the same in the pooled median), or it reached the GPU-time or sample cap."""
    n = len(samples)
    if gpu_s >= settings.max_gpu_time_s or n + discarded >= settings.max_samples:
        return True
    whole_turns = (n + discarded) % max(1, placement_count) == 0
    return (
        n >= settings.min_samples
        and whole_turns
        and spread_within_placements(samples, placements) <= settings.stop_rel_iqr
    )
