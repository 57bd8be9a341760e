"""Builders for the contract tests: small tasks made in code, so each test shows what it needs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cuda_llm.engine.task.model import BufferSpec, Roofline, ScalarSpec, SizeCase, Task, Tolerance
from cuda_llm.engine.task.plan import parse_plan

TaskFactory = Callable[..., Task]


def build_task(
    scalars: dict[str, tuple[str, int | float | None]] | None = None,
    buffers: dict[str, tuple[str, tuple[str, ...], str]] | None = None,
) -> Task:
    """A task from {name: (type, value)} scalars and {name: (dtype, shape, role)} buffers."""
    scalars = scalars if scalars is not None else {"n": ("int32", None)}
    buffers = (
        buffers
        if buffers is not None
        else {
            "a": ("float32", ("n",), "input"),
            "b": ("float32", ("n",), "input"),
            "c": ("float32", ("n",), "output"),
        }
    )
    specs = tuple(ScalarSpec(name, t, v) for name, (t, v) in scalars.items())
    sizes = tuple((s.name, 7) for s in specs if s.value is None)
    timing = SizeCase("timing", sizes, 1, True)
    return Task(
        name="test_task",
        summary="a task built by a test",
        category="memory",
        dtype_contract="fp32",
        description="built in code",
        scalars=specs,
        buffers=tuple(BufferSpec(n, d, shape, role) for n, (d, shape, role) in buffers.items()),
        timing=timing,
        validation=(timing,),
        tolerance=Tolerance("abs", 1e-6, 0.0),
        roofline=Roofline("n", "n", "fp32"),
        baseline_source="",
        baseline_plan=parse_plan({"launches": [{"kernel": "k", "grid": [1], "block": [1], "args": []}]}),
        folder=Path("."),
        fingerprint="test",
    )


@pytest.fixture
def make_task() -> TaskFactory:
    return build_task
