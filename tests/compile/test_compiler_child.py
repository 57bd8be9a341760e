"""An exception inside the compiler child comes back as one line (engine/core/errors.py describe):
the candidate's compile fails with it, and the child is replaced."""

from __future__ import annotations

import multiprocessing

import pytest

from cuda_llm.engine.compile.compiler_process import CompilerProcess
from cuda_llm.engine.core.settings import CompileSettings


@pytest.mark.parametrize(
    ("source", "line"),
    [
        # Sent past the parent's own check of the source: the child's check refuses it, in the words
        # addressed to a person (a UserError's line, no type name).
        ("int x;\0\n", "the source contains a NUL byte (line 1)"),
        # An internal error keeps its type's name.
        (None, "TypeError: cannot convert 'NoneType' object to bytes"),
    ],
)
def test_an_exception_in_the_child_is_one_described_line(source, line):
    child = CompilerProcess(multiprocessing.get_context("spawn"), CompileSettings(sandbox=()))
    try:
        child.wait_ready(120)
        result = child.compile(source, "sm_90", 120)
    finally:
        child.kill()
        child.close()
    assert not result.ok and not child.healthy
    assert result.log == f"the compiler failed: {line}"
