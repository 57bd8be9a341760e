"""The profiler's warm-up (engine/gpu/profile.py) with a simulated device and clock: it ends as soon
as NVML reads the SM clock up (after its least rounds), and runs on while the clock stays down.
Counts of rounds only; the time limit is set far out of reach."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from cuda_llm.engine.core.settings import ProfileSettings, ValidationSettings
from cuda_llm.engine.gpu.profile import Profiler, _Entry, _Placement


class Device:
    """The Context and Harness calls of one timed run, counted."""

    def __init__(self) -> None:
        self.runs = 0

    def event(self):
        return object()

    def record(self, event) -> None:
        pass

    def wait(self, timeout_s: float) -> None:
        pass

    def elapsed_ms(self, a, b) -> float:
        return 0.1

    def flush_l2(self) -> None:
        pass

    def delay_us(self, us: float) -> None:
        pass


class Clock:
    """NVML's SM clock: at `low` MHz for the first `reads_before_up` reads, then at its maximum."""

    max_sm_clock = 1980

    def __init__(self, reads_before_up: int | None) -> None:
        self.reads = 0
        self.reads_before_up = reads_before_up

    def sm_clock(self) -> int:
        self.reads += 1
        up = self.reads_before_up is not None and self.reads > self.reads_before_up
        return self.max_sm_clock if up else 345


def entries(device: Device, placements: int = 4) -> list[_Entry]:
    def run(ctx) -> None:
        device.runs += 1

    out = []
    for label in ("baseline", "c1", "c2"):
        e = _Entry(label, None, None)
        prepared = SimpleNamespace(launches=[object()], run=run, enqueue_us=None)
        e.placements = [_Placement(bufs=None, prepared=prepared) for _ in range(placements)]  # type: ignore[arg-type]
        out.append(e)
    return out


def profiler(device: Device, clock: Clock) -> Profiler:
    # A time limit no test reaches: only the clock decides when the warm-up ends.
    settings = dataclasses.replace(ProfileSettings(), warmup_ms=600_000.0)
    # Runs counted only: what is put back before each run is tests/gpu_side/test_independent_runs.py's.
    vsettings = dataclasses.replace(ValidationSettings(), independent_runs=False)
    return Profiler(device, None, device, None, clock, settings, vsettings)  # type: ignore[arg-type]


def test_the_warm_up_ends_once_the_clock_is_up() -> None:
    device = Device()
    clock = Clock(reads_before_up=6)  # down at the start, up after a few more rounds
    best = profiler(device, clock)._warm_up(entries(device))
    # 4 rounds (one per placement) without a look at the clock, then one round per read until it is up.
    assert device.runs == 3 * (4 + 5)
    assert set(best) == {"baseline", "c1", "c2"}


def test_a_clock_already_up_takes_the_least_rounds() -> None:
    device = Device()
    profiler(device, Clock(reads_before_up=0))._warm_up(entries(device))
    assert device.runs == 3 * 4


def test_a_clock_that_stays_down_keeps_the_warm_up_going() -> None:
    device = Device()
    clock = Clock(reads_before_up=40)
    profiler(device, clock)._warm_up(entries(device))
    assert device.runs == 3 * (4 + 39), "every round while the clock was down, up to the time limit"
