"""When the profiler stops sampling a program (engine/gpu/profile.py), and the spreads it reports.

A program is timed on several copies of its buffers in turn (placements). Where in DRAM a copy lies
moves some kernels' latency by 1-3% (matrix_transpose up to 6% on an H100), and that offset holds for
as long as the buffers live. The stop rule judges the spread of all samples pooled over the
placements: a program whose placements differ by more than the threshold is sampled on, to the cap.

Judging the spread within each placement instead (every sample over its own placement's median) was
tried on 4 x H100 on 2026-11-28 (docs/performance.md (b)): it stopped every program at 12 samples
(layernorm's rounds no longer waited for a GPU that drew a program to the cap), but five profiles of
matrix_transpose then agreed within 3.9% instead of 1.4%: the long sampling the pooled rule buys
averages over what the GPU does from one moment to the next, which 12 samples do not. The spread
within placements is still computed and reported (Timing.placement_spread), beside each
placement's median.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuda_llm.engine.core.settings import ProfileSettings

# A placement's median from a single sample is that sample, which would put a deviation of exactly
# zero into the spread within placements: each placement needs this many for it to be a figure.
MIN_SAMPLES_PER_PLACEMENT = 2


def rel_iqr(xs: Sequence[float] | np.ndarray) -> float:
    """The interquartile range over the median; infinite for a median of zero or less."""
    q1, med, q3 = np.percentile(xs, [25, 50, 75])
    return float((q3 - q1) / med) if med > 0 else float("inf")


def _by_placement(samples: Sequence[float], placements: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each placement, in placement order: the mask of its samples and the samples as floats."""
    if len(samples) != len(placements):
        raise ValueError(f"{len(samples)} samples but {len(placements)} placements")
    xs, where = np.asarray(samples, dtype=float), np.asarray(placements)
    return [(where == p, xs[where == p]) for p in np.unique(where)]


def spread_within_placements(samples: Sequence[float], placements: Sequence[int]) -> float:
    """The IQR over the median of the samples, each divided by the median of its own placement
    (`placements[i]` is sample i's). Infinite while a placement has fewer than
    MIN_SAMPLES_PER_PLACEMENT samples. With one placement this is the plain relative IQR."""
    groups = _by_placement(samples, placements)
    if not groups:
        return float("inf")
    scaled = np.empty(len(samples))
    for mine, xs in groups:
        if xs.size < MIN_SAMPLES_PER_PLACEMENT:
            return float("inf")
        med = float(np.median(xs))
        if med <= 0:
            return float("inf")
        scaled[mine] = xs / med
    return rel_iqr(scaled)


def placement_medians(samples: Sequence[float], placements: Sequence[int]) -> tuple[float, ...]:
    """Each placement's median over its own samples, in placement order."""
    return tuple(float(np.median(xs)) for _mine, xs in _by_placement(samples, placements))


def should_stop(
    samples: Sequence[float],
    *,
    discarded: int,
    placement_count: int,
    gpu_s: float,
    settings: ProfileSettings,
) -> bool:
    """Whether sampling of one program ends after its latest run: the spread of its samples, pooled
    over the placements, has settled (only after whole turns over its `placement_count`
    placements, so every placement weighs the same in the median), or it reached the GPU-time or
    sample cap."""
    n = len(samples)
    if gpu_s >= settings.max_gpu_time_s or n + discarded >= settings.max_samples:
        return True
    whole_turns = (n + discarded) % max(1, placement_count) == 0
    return n >= settings.min_samples and whole_turns and rel_iqr(samples) <= settings.stop_rel_iqr
