"""Graph mode in the profiler (engine/gpu/profile.py) with a simulated device whose every plan run
takes a known time: a plan under graph_threshold_us is captured as a graph of K replays, a sample
times the K runs, and the figure kept is one run's. A plan over the threshold is timed run by run.
(On a GPU, against an independent timer: tests/gpu/test_routine_checks.py.)"""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pytest

from cuda_llm.engine.core.settings import ProfileSettings, ValidationSettings
from cuda_llm.engine.gpu.profile import Profiler, _Entry, _Placement


class Device:
    """The Context and Harness calls of timed runs: the time between two events is the plan runs
    queued between them, `run_us` each."""

    def __init__(self, run_us: float) -> None:
        self.run_us = run_us
        self.runs = 0
        self.marks: dict[object, int] = {}

    def run(self, ctx) -> None:
        self.runs += 1

    def event(self) -> object:
        return object()

    def record(self, event: object) -> None:
        self.marks[event] = self.runs

    def wait(self, timeout_s: float) -> None:
        pass

    def elapsed_ms(self, a: object, b: object) -> float:
        return (self.marks[b] - self.marks[a]) * self.run_us / 1000

    def capture_graph(self, body) -> int:
        """The graph is the runs the body queues (captured, not run): their count stands for it."""
        before = self.runs
        body()
        replays, self.runs = self.runs - before, before
        return replays

    def launch_graph(self, replays: int) -> None:
        self.runs += replays

    def flush_l2(self) -> None:
        pass

    def delay_us(self, us: float) -> None:
        pass


@pytest.mark.parametrize("run_us", [8.0, 30.0, 200.0])
def test_each_sample_is_one_run_s_time_in_either_mode(run_us):
    device = Device(run_us)
    settings = ProfileSettings()
    # Runs as one another's repeats (no poison, no rotation of each replay's outputs: those are
    # tests/gpu_side/test_independent_runs.py's); the division by the replays is the same line either way.
    vsettings = dataclasses.replace(ValidationSettings(), independent_runs=False)
    profiler = Profiler(device, None, device, None, None, settings, vsettings)  # type: ignore[arg-type]
    entry = _Entry("candidate", None, None)
    prepared = SimpleNamespace(launches=[object()], run=device.run, enqueue_us=None)
    entry.placements = [_Placement(bufs=None, prepared=prepared) for _ in range(2)]  # type: ignore[arg-type]
    profiler._choose_mode(entry, run_us)
    profiler._sample([entry])
    graphed = run_us < settings.graph_threshold_us
    replays = math.ceil(settings.graph_target_us / run_us) if graphed else 1
    assert (entry.graphed, entry.replays) == (graphed, replays)
    assert len(entry.samples) >= settings.min_samples
    assert entry.samples == pytest.approx([run_us] * len(entry.samples))
