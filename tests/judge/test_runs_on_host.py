"""How the validator describes a failed case on the host (engine/gpu/validate.py's
judge_runs_on_host): both runs of one output against the reference, with the reference's own scale
and the settings' cap on mismatches, and a problem line only where the two runs really differ.

It runs in the GPU worker, which the CPU mutation run cannot see; these tests pin the three mutants
of it that the GPU mutation run left alive (docs/testing.md): the scale not passed on, the output's
name dropped, and NaN compared as unequal to NaN."""

from __future__ import annotations

import numpy as np
import pytest

from cuda_llm.engine.core.settings import ValidationSettings
from cuda_llm.engine.gpu.compare import compare_output
from cuda_llm.engine.gpu.reference_cache import ReferenceCase
from cuda_llm.engine.gpu.validate import judge_runs_on_host
from cuda_llm.engine.task import TaskLibrary


@pytest.fixture(scope="module")
def conv1d():
    """A task whose tolerance is measured against a per-element scale the reference computes."""
    task = TaskLibrary().get("conv1d")
    assert task.tolerance.scale == "custom"
    return task


def _case(expected: np.ndarray, scale: np.ndarray) -> ReferenceCase:
    return ReferenceCase(inputs={}, expected={"y": expected}, scale={"y": scale})


def test_the_reference_s_scale_decides_what_is_wrong(conv1d):
    rng = np.random.default_rng(0)
    expected = rng.standard_normal(4096)
    scale = np.full(expected.shape, 1e3)  # a large scale: a large error is within the tolerance
    got = expected + 1e3 * conv1d.tolerance.atol * 0.5
    got[:5] += 1e3  # wrong at any scale
    settings = ValidationSettings(mismatches_reported=3)
    comparison, problem = judge_runs_on_host("y", _case(expected, scale), got, got, conv1d, settings)
    assert problem is None  # one run, nothing to tell apart
    assert comparison == compare_output("y", expected, got, conv1d.tolerance, scale, 3)
    assert comparison.wrong == 5, "with the reference's scale only the five far-off elements are wrong"
    assert len(comparison.mismatches) == 3, "the settings' cap on the mismatches described"


def test_two_runs_with_nan_in_the_same_places_do_not_differ(conv1d):
    expected = np.linspace(-1.0, 1.0, 1024)
    scale = np.ones_like(expected)
    first = expected.copy()
    first[[3, 500]] = np.nan  # wrong, the same way in both runs
    second = first.copy()
    settings = ValidationSettings()
    comparison, problem = judge_runs_on_host("y", _case(expected, scale), first, second, conv1d, settings)
    assert comparison.wrong == 2
    assert problem is None, "bit for bit the same runs (NaN where NaN) are not a race"
    # And where the runs really differ, that is said.
    third = first.copy()
    third[7] = 5.0
    _, problem = judge_runs_on_host("y", _case(expected, scale), first, third, conv1d, settings)
    assert problem is not None and problem.startswith("results also differ between two runs")
