"""The judgement's own data (engine/judge/judgement.py): what a compiled candidate hands the GPU
worker, and the vendor library's yardstick."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_llm.engine.compile.nvrtc import compile_in_process
from cuda_llm.engine.contract.binding import bind_plan
from cuda_llm.engine.contract.signature import parse_kernels
from cuda_llm.engine.gpu.protocol import Timing
from cuda_llm.engine.judge.judgement import Candidate, Compiled, LibraryResult
from cuda_llm.engine.task import TaskLibrary


@pytest.fixture(scope="module")
def vector_add() -> Any:
    return TaskLibrary().get("vector_add")


def compiled(task, origin: str) -> Compiled:
    result = compile_in_process(task.baseline_source, "sm_90")
    assert result.ok, result.error
    bound = bind_plan(task.baseline_plan, task, parse_kernels(task.baseline_source), result.ptx_entries)
    return Compiled(Candidate(f"{origin}-one", task.baseline_source, task.baseline_plan, origin=origin), result, bound)


@pytest.mark.parametrize("origin", ["model", "user", "baseline"])
def test_only_the_harness_baseline_is_trusted_and_the_program_carries_its_own_cubin(vector_add, origin):
    # A trusted program skips the re-check after timing: only the harness's own baseline may be one.
    c = compiled(vector_add, origin)
    program = c.program()
    assert program.trusted is (origin == "baseline")
    assert program.label == f"{origin}-one"
    assert program.cubin == c.compile.cubin and program.cubin[:4] == b"\x7fELF"
    assert program.plan is c.bound


def timing(median_us: float) -> Timing:
    return Timing("library", median_us, median_us * 0.99, median_us * 1.01, median_us * 0.98, 12, 0, "events", 1, None)


def test_the_library_figure_over_a_program():
    lib = LibraryResult("cuBLAS", timing(30.0))
    assert lib.median_us == 30.0
    assert lib.of_library(10.0) == pytest.approx(3.0)  # the program is 3x faster than the library
    assert lib.of_library(60.0) == pytest.approx(0.5)
    assert lib.of_library(0.5) == pytest.approx(60.0)  # sub-microsecond programs have a figure too
    assert lib.of_library(0.0) is None  # no time, no ratio (not a ZeroDivisionError)
    assert lib.of_library(-1.0) is None


def test_no_library_figure_without_its_timing():
    lib = LibraryResult("cuBLAS", None, note="CuPy is not installed")
    assert lib.median_us is None
    assert lib.of_library(10.0) is None
    assert LibraryResult(None).of_library(10.0) is None
