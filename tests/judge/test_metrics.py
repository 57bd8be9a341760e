"""The two roofline ceilings on the CPU (engine/judge/metrics.py): a time beyond the physical floor by
more than the named setting `suspect_physical_share` is suspect, one just inside it is not, and one
faster than our probes' achievable floor but slower than the physical one is an honest kernel (above
100% of the achievable roofline, never suspect). Peaks and timings are built by hand, as the judge's
`figures(task, timing, peaks, baseline, settings.profile.suspect_physical_share)` receives them."""

from __future__ import annotations

import pytest

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.protocol import Peaks, Timing
from cuda_llm.engine.judge.metrics import figures
from cuda_llm.engine.task import TaskLibrary

# An H100-like GPU: our probes reach 3.0 TB/s of the 3.35 TB/s the memory clock and bus allow.
PEAKS = Peaks(
    gpu_uuid="GPU-test",
    bandwidth=3.0e12,
    fp32_flops=50e12,
    fp16_tensor_flops=990e12,
    method="test",
    measured_at="2026-01-01",
    bandwidth_physical=3.35e12,
    fp32_physical=67e12,
)
SUSPECT_SHARE = Settings().profile.suspect_physical_share


def timing(median_us: float) -> Timing:
    return Timing("r1-1", median_us, median_us * 0.99, median_us * 1.01, median_us * 0.98, 50, 0, "events", 1, None)


@pytest.fixture(scope="module")
def task():
    return TaskLibrary().get("vector_add")  # memory-bound: the floors are bytes over bandwidth


def floors_us(task) -> tuple[float, float]:
    nbytes, _ = task.bytes_and_flops(task.timing)
    return nbytes / PEAKS.bandwidth * 1e6, nbytes / PEAKS.bandwidth_physical * 1e6


def test_the_setting_allows_a_little_beyond_the_physical_floor():
    assert 1.0 < SUSPECT_SHARE < 1.1, "rounded clocks leave a few percent; a kernel skipping work is still caught"


def test_faster_than_the_physical_floor_by_more_than_the_setting_is_suspect(task):
    _, physical = floors_us(task)
    f = figures(task, timing(physical / (SUSPECT_SHARE * 1.001)), PEAKS, timing(4 * physical), SUSPECT_SHARE)
    assert f.physical_share > SUSPECT_SHARE
    assert f.suspect and "below the physical floor" in f.suspect and f"{f.physical_floor_us:.1f} us" in f.suspect


def test_just_inside_the_setting_is_not_suspect(task):
    _, physical = floors_us(task)
    f = figures(task, timing(physical / (SUSPECT_SHARE * 0.999)), PEAKS, None, SUSPECT_SHARE)
    assert 1.0 < f.physical_share < SUSPECT_SHARE, "beyond the physical floor, but within the allowance"
    assert f.suspect is None


def test_faster_than_our_probes_but_not_the_hardware_is_honest(task):
    achievable, physical = floors_us(task)
    assert physical < achievable
    f = figures(task, timing((achievable + physical) / 2), PEAKS, None, SUSPECT_SHARE)
    assert f.roofline_share > 1.0 and f.roofline_pct > 100, "above 100% of the achievable roofline"
    assert f.physical_share < 1.0 and f.suspect is None
    assert f.floor_us == pytest.approx(achievable) and f.physical_floor_us == pytest.approx(physical)


def test_the_share_is_of_the_physical_floor_not_the_achievable_one(task):
    achievable, _ = floors_us(task)
    # 1.10x past the achievable floor: past the setting against our probes, still honest against the hardware.
    f = figures(task, timing(achievable / 1.10), PEAKS, None, SUSPECT_SHARE)
    assert f.roofline_share == pytest.approx(1.10) and f.physical_share < SUSPECT_SHARE and f.suspect is None


def test_without_peaks_nothing_is_suspect(task):
    f = figures(task, timing(0.001), None, None, SUSPECT_SHARE)
    assert f.suspect is None and f.roofline_share == f.physical_share == 0.0
