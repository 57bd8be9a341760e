"""Validation stops at the first failing case before the large cases (engine/gpu/validate.py): cases run
smallest first, the small ones after a failure still run (their pattern helps the model), the larger
ones do not, and the verdict says how many were not run. The GPU work of each case is replaced by a
scripted outcome; the loop that decides what runs is the real one."""

from __future__ import annotations

import dataclasses

import pytest

from cuda_llm.engine.core.settings import ValidationSettings
from cuda_llm.engine.gpu import validate as v
from cuda_llm.engine.gpu.protocol import CaseReport
from cuda_llm.engine.task import TaskLibrary


class Refs:
    def get(self, task, case, seed):
        return object()


def run(monkeypatch, failing: set[str], settings: ValidationSettings):
    task = TaskLibrary().get("vector_add")  # n = 1, 3, 1000, 65537, 1048579 (3 seeds each), timing 2^25
    ran: list[str] = []

    def run_case(ctx, info, harness, funcs, task, plan, case, ref, label, *rest):
        ran.append(label)
        wrong = 1 if case.label in failing else 0
        return v.CaseOutcome(CaseReport(label, not wrong, 10, wrong, 0, 0.1), [], [], ())

    monkeypatch.setattr(v, "run_case", run_case)
    binder = lambda case, device: None  # noqa: E731  (no module: the eager path's shape)
    report = v.validate(None, None, None, Refs(), task, None, None, settings, binder)  # type: ignore[arg-type]
    return report, ran


def test_a_kernel_wrong_at_the_smallest_case_runs_no_large_case(monkeypatch):
    settings = dataclasses.replace(ValidationSettings(), after_failure_max_bytes=1 << 20)
    report, ran = run(monkeypatch, {"n=1"}, settings)
    # n=1048579 (12 MB of buffers) and the timing size are over 1 MB: 3 + 1 cases not run.
    assert ran == [f"n={n} seed {s}" for n in (1, 3, 1000, 65537) for s in range(3)]
    assert report.not_run == 4 and report.verdict == "wrong"
    assert report.summary == "wrong in 3 of 12 cases; first: n=1 seed 0: 1 of 10 elements wrong; 4 larger cases not run"


def test_a_kernel_wrong_only_at_the_timing_size_ran_everything(monkeypatch):
    report, ran = run(monkeypatch, {"timing n=33554432"}, ValidationSettings())
    assert ran[-1] == "timing n=33554432 seed 0" and len(ran) == 16 and report.not_run == 0
    assert report.summary.endswith("1 of 10 elements wrong"), "nothing was left out"


@pytest.mark.parametrize("limit", [0, 64 * 2**20])
def test_the_timing_size_is_never_run_after_a_failure(monkeypatch, limit):
    settings = dataclasses.replace(ValidationSettings(), after_failure_max_bytes=limit)
    report, ran = run(monkeypatch, {"n=3"}, settings)
    assert "timing n=33554432 seed 0" not in ran
    assert report.summary.endswith(f"; {report.not_run} larger case{'s' if report.not_run != 1 else ''} not run")
    assert len(ran) + report.not_run == 16
