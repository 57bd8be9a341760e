"""engine/gpu/levels.py: a profile whose samples fall into two levels is reported as both."""

from __future__ import annotations

import numpy as np

from cuda_llm.engine.gpu.levels import split_levels

GAP, SHARE = 0.02, 0.2


def noisy(center: float, n: int, spread: float, seed: int) -> list[float]:
    return list(center * (1 + spread * np.random.default_rng(seed).standard_normal(n)))


def test_a_bimodal_profile_is_two_levels_with_their_clocks():
    fast, slow = noisy(763.0, 30, 0.002, 1), noisy(833.0, 34, 0.002, 2)
    samples = [x for pair in zip(fast, slow, strict=False) for x in pair] + slow[30:]
    clocks = [c for _ in range(30) for c in (1980.0, 1755.0)] + [1755.0] * 4
    low, high = split_levels(samples, clocks, GAP, SHARE)
    assert abs(low.median_us - 763.0) < 2 and abs(high.median_us - 833.0) < 2
    assert (low.share, high.share) == (30 / 64, 34 / 64)
    assert (low.sm_clock_mhz, high.sm_clock_mhz) == (1980.0, 1755.0)


def test_a_steady_profile_is_one_level():
    assert split_levels(noisy(128.0, 60, 0.003, 3), [1980.0] * 60, GAP, SHARE) == ()


def test_a_few_outliers_are_not_a_level():
    samples = [*noisy(500.0, 50, 0.002, 4), 560.0, 561.0, 562.0]  # 3 of 53: under a fifth
    assert split_levels(samples, [None] * 53, GAP, SHARE) == ()


def test_one_wide_distribution_is_not_two_levels():
    """Uniform over 10%: the biggest gap between neighbours is small next to each side's spread."""
    samples = list(np.linspace(700.0, 770.0, 40))
    assert split_levels(samples, [None] * 40, GAP, SHARE) == ()


def test_too_few_samples_say_nothing():
    assert split_levels([100.0, 100.0, 110.0, 110.0], [None] * 4, GAP, SHARE) == ()


def test_unknown_clocks_leave_the_level_clock_unknown():
    low, high = split_levels([100.0] * 10 + [110.0] * 10, [None] * 20, GAP, SHARE)
    assert low.sm_clock_mhz is None and high.sm_clock_mhz is None
