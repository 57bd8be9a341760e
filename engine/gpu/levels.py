"""Does a program run at one latency or at two? Splitting a profile's samples into levels.

A program whose samples fall into two separate groups (a tiled matmul was seen at 763 us and at
833 us within one profile) has a median that depends on how many samples landed in each group: it
flips between the two from profile to profile and cannot rank candidates. Such a profile is reported
as its two levels, each with its share of the samples and the SM clock NVML read after them (a
power or clock state shows as a lower clock on the slower level; the same clock on both points at
the placement or the scheduling instead). The ranking is protected already: a winner must beat the
best by more than the sum of both relative IQRs, and two levels make a wide IQR.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuda_llm.engine.gpu.protocol import LatencyLevel

# Fewer samples than this say nothing about levels.
MIN_SAMPLES = 8


def _rel_iqr(xs: np.ndarray) -> float:
    q1, med, q3 = np.percentile(xs, [25, 50, 75])
    return float((q3 - q1) / med) if med > 0 else float("inf")


def _level(times: np.ndarray, clocks: list[float], total: int) -> LatencyLevel:
    return LatencyLevel(
        median_us=float(np.median(times)),
        share=len(times) / total,
        sm_clock_mhz=float(np.median(clocks)) if clocks else None,
    )


def split_levels(
    samples_us: Sequence[float], clocks_mhz: Sequence[float | None], min_gap: float, min_share: float
) -> tuple[LatencyLevel, ...]:
    """Two levels (faster first) when the largest gap between sorted samples is at least `min_gap`
    of the lower one, leaves at least `min_share` of the samples on each side, and is more than
    twice as wide as either side's own relative IQR; else () for a single level."""
    n = len(samples_us)
    if n < MIN_SAMPLES:
        return ()
    order = np.argsort(samples_us)
    xs = np.asarray(samples_us, dtype=float)[order]
    least = max(2, int(np.ceil(min_share * n)))
    if n - least < least:
        return ()
    cut_range = np.arange(least, n - least + 1)  # the high level starts at index `cut`
    gaps = (xs[cut_range] - xs[cut_range - 1]) / xs[cut_range - 1]
    best = int(np.argmax(gaps))
    gap, cut = float(gaps[best]), int(cut_range[best])
    low, high = xs[:cut], xs[cut:]
    if gap < min_gap or max(_rel_iqr(low), _rel_iqr(high)) * 2 > gap:
        return ()
    clocks = [clocks_mhz[i] for i in order]
    return (
        _level(low, [c for c in clocks[:cut] if c is not None], n),
        _level(high, [c for c in clocks[cut:] if c is not None], n),
    )
