"""The profiler's stop rule (engine/gpu/stop_rule.py): sampling stops on the spread pooled over the
buffer placements, after whole turns, or at a cap; the spread within placements and each
placement's median are reported beside it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cuda_llm.engine.core.settings import ProfileSettings
from cuda_llm.engine.gpu.stop_rule import (
    MIN_SAMPLES_PER_PLACEMENT,
    placement_medians,
    rel_iqr,
    should_stop,
    spread_within_placements,
)

SETTINGS = ProfileSettings()


def turns(offsets: list[float], rounds: int, noise: float, seed: int = 0) -> tuple[list[float], list[int]]:
    """`rounds` whole turns over placements whose medians sit at 100 us times (1 + offset), each
    sample with relative noise `noise`: the samples and the placement of each, in turn order."""
    rng = np.random.default_rng(seed)
    samples, where = [], []
    for _ in range(rounds):
        for p, off in enumerate(offsets):
            samples.append(100.0 * (1 + off) * (1 + noise * rng.standard_normal()))
            where.append(p)
    return samples, where


def stop(samples, where=None, *, discarded=0, placements=4, gpu_s=0.01, settings=SETTINGS) -> bool:
    """`where` (each sample's placement) is not the stop rule's business: it judges the pooled spread."""
    return should_stop(samples, discarded=discarded, placement_count=placements, gpu_s=gpu_s, settings=settings)


def test_placements_with_fixed_offsets_keep_it_sampling_and_both_spreads_are_told():
    # Layernorm on an H100: placements' medians about 1.1% apart, little noise within each. Pooled,
    # the spread is over the threshold, so it samples on (the stop rule's docstring says why).
    samples, where = turns([0.0, 0.011, 0.022, -0.005], rounds=3, noise=0.0005)
    assert rel_iqr(samples) > SETTINGS.stop_rel_iqr
    assert not stop(samples)
    assert spread_within_placements(samples, where) < 0.002
    medians = placement_medians(samples, where)
    assert [round(m / 100 - 1, 3) for m in medians] == [0.0, 0.011, 0.022, -0.005]
    # The same placements without the offsets stop at once.
    flat, _ = turns([0.0, 0.0, 0.0, 0.0], rounds=3, noise=0.0005)
    assert stop(flat)


def test_noise_within_placements_keeps_sampling():
    samples, where = turns([0.0, 0.0, 0.0, 0.0], rounds=3, noise=0.03)
    assert spread_within_placements(samples, where) > SETTINGS.stop_rel_iqr
    assert not stop(samples, where)


def test_one_placement_is_the_plain_relative_iqr():
    samples, where = turns([0.0], rounds=15, noise=0.01, seed=3)
    assert spread_within_placements(samples, where) == pytest.approx(rel_iqr(samples), rel=0, abs=0.004)
    # Exactly: the median of x / m is 1, and the quartiles scale by 1/m.
    m = float(np.median(samples))
    assert spread_within_placements(samples, where) == pytest.approx(rel_iqr(np.asarray(samples) / m), rel=1e-12)


def test_the_spread_at_the_threshold_stops_and_just_above_does_not():
    samples, where = turns([0.0, 0.01, 0.02, 0.0], rounds=4, noise=0.004, seed=7)
    spread = rel_iqr(samples)
    at = dataclasses.replace(SETTINGS, stop_rel_iqr=spread)
    under = dataclasses.replace(SETTINGS, stop_rel_iqr=spread * (1 - 1e-9))
    assert stop(samples, where, settings=at)
    assert not stop(samples, where, settings=under)


def test_a_placement_with_too_few_samples_cannot_stop_it():
    samples, where = turns([0.0, 0.0, 0.0, 0.0], rounds=3, noise=0.0001)
    # Placement 3 ran at samples 3, 7 and 11; say the first two were placement 0's.
    one = [0 if i in (3, 7) else p for i, p in enumerate(where)]
    assert one.count(3) == 1 < MIN_SAMPLES_PER_PLACEMENT
    assert spread_within_placements(samples, one) == float("inf")
    two = [0 if i == 3 else p for i, p in enumerate(where)]
    assert two.count(3) == MIN_SAMPLES_PER_PLACEMENT
    assert spread_within_placements(samples, two) < 0.01


def test_not_before_min_samples_nor_between_whole_turns():
    samples, where = turns([0.0, 0.0], rounds=6, noise=0.0001)  # 12 samples over 2 placements
    assert stop(samples, where, placements=2)
    few = dataclasses.replace(SETTINGS, min_samples=13)
    assert not stop(samples, where, placements=2, settings=few)
    exactly = dataclasses.replace(SETTINGS, min_samples=12)
    assert stop(samples, where, placements=2, settings=exactly)
    # One more sample is half a turn: no stop until the turn is whole, discarded runs counted in it.
    assert not stop([*samples, 100.0], [*where, 0], placements=2)
    assert stop([*samples, 100.0], [*where, 0], placements=2, discarded=1)


def test_the_caps_stop_it_whatever_the_spread():
    samples, where = turns([0.0, 0.0, 0.0, 0.0], rounds=3, noise=0.05)
    assert not stop(samples, where)
    assert stop(samples, where, gpu_s=SETTINGS.max_gpu_time_s)
    assert not stop(samples, where, gpu_s=SETTINGS.max_gpu_time_s * 0.999)
    cap = SETTINGS.max_samples
    assert stop(samples, where, discarded=cap - len(samples))
    assert not stop(samples, where, discarded=cap - len(samples) - 1)
    # Every run discarded (a throttled clock): the cap still ends it.
    assert stop([], [], discarded=cap)
    assert not stop([], [], discarded=cap - 1)


def test_no_samples_and_bad_input():
    assert spread_within_placements([], []) == float("inf")
    with pytest.raises(ValueError, match="3 samples but 2 placements"):
        spread_within_placements([1.0, 2.0, 3.0], [0, 1])
    assert rel_iqr([0.0, 0.0, 0.0]) == float("inf")
    assert spread_within_placements([0.0, 0.0, 1.0, 1.0], [0, 0, 1, 1]) == float("inf")


def test_the_relative_iqr_is_the_quartiles_over_the_median():
    assert rel_iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx((4.0 - 2.0) / 3.0, rel=1e-12)
    assert rel_iqr([10.0, 10.0, 10.0]) == 0.0


def test_whole_samples_and_sub_microsecond_medians():
    # Integer samples (whole microseconds) are spread as floats, not truncated to integers.
    assert spread_within_placements([100, 101, 102, 103], [0, 0, 1, 1]) == pytest.approx(
        rel_iqr([100 / 100.5, 101 / 100.5, 102 / 102.5, 103 / 102.5]), rel=1e-12
    )
    # A program of half a microsecond has a spread like any other.
    samples = [0.5, 0.501, 0.502, 0.5, 0.501, 0.502]
    assert spread_within_placements(samples, [0, 0, 0, 1, 1, 1]) == pytest.approx(
        spread_within_placements([s * 1000 for s in samples], [0, 0, 0, 1, 1, 1]), rel=1e-9
    )
    assert spread_within_placements(samples, [0, 0, 0, 1, 1, 1]) < 0.01


def test_whole_turns_count_discarded_runs_and_one_placement_is_always_a_whole_turn():
    samples = [100.0] * 11
    # 11 kept and 1 discarded: three whole turns over 4 placements.
    assert stop(samples, discarded=1, placements=4)
    assert not stop(samples, discarded=0, placements=4)
    # One placement: every run ends a turn, an odd count included.
    assert stop(samples, placements=1)
