"""Run probe.py on a user's module file in a child process with a time limit (importing the file
runs the user's code: a hang, a crash or a sys.exit there must not take `tasks import` with it)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.secrets import without_secrets
from cuda_llm.engine.torchtask import INSTALL_HINT
from cuda_llm.engine.torchtask.child import ChildRun, run_bounded

# Importing PyTorch alone takes seconds on a busy machine; the probes run on the meta device and
# one small real run. A whole model (DenseNet201: 600 tensors, about ten probes) took over 120 s on
# the 2-core machine under a load of 12: five minutes is a file that hangs.
PROBE_TIMEOUT_S = 300.0


class ImportRefused(UserError):
    """The module file cannot become a task; `str()` is the one line saying why."""


def torch_missing() -> str | None:
    if importlib.util.find_spec("torch") is None:
        return f"PyTorch is not installed: {INSTALL_HINT} adds it (tasks import runs the module with it)"
    return None


def module_file_problem(path: Path) -> str | None:
    """What is wrong with a path as a module file, before anything runs it (PyTorch or not)."""
    if not path.is_file():
        return f"{path}: no such file"
    if path.suffix != ".py":
        return f"{path}: not a Python file (a module file defines Model, get_inputs, get_init_inputs)"
    return None


@dataclass(frozen=True)
class TensorFacts:
    name: str
    dtype: str
    shape: tuple[str, ...]  # expressions of the size constants
    path: str = ""  # a parameter's or buffer's name inside the module (conv.weight)


@dataclass(frozen=True)
class NumberFacts:
    """A Python number among get_inputs(): a task scalar, constant or given per size case."""

    name: str
    position: int  # in get_inputs()
    type: str  # int32 | int64 | float64 for a constant; "size" when it follows the sizes
    value: int | float | None = None  # a constant's value
    per_case: tuple[int, ...] = ()  # the validation cases' values, then the timing size's


@dataclass(frozen=True)
class ModuleFacts:
    """What the child found: every tensor's name, dtype and shape, the size constants and cases."""

    source: Path
    sizes: dict[str, int]  # the constants that set shapes, at the file's values
    fixed: dict[str, int]  # integer constants kept at the file's value
    validation: tuple[dict[str, int], ...]  # smaller cases whose shapes follow the fits
    inputs: tuple[TensorFacts, ...]
    params: tuple[TensorFacts, ...]
    outputs: tuple[TensorFacts, ...]
    flops: str
    returns_tuple: bool = False  # forward returns a tuple (of one tensor, perhaps)
    gpu_free_bytes: int | None = None  # the GPU's free memory where the child saw one
    # Tuple constants holding sizes (`shape = (batch, dim)`): each position a size's name or a number.
    tuples: dict[str, tuple[str | int, ...]] = field(default_factory=dict)
    numbers: tuple[NumberFacts, ...] = ()
    forward_inputs: tuple[str, ...] = ()  # forward's arguments in order: buffer and scalar names
    batch_statistics: tuple[str, ...] = ()  # layers normalising with the batch's statistics (training.py)

    @classmethod
    def from_json(cls, source: Path, data: dict[str, Any]) -> ModuleFacts:
        def tensors(key: str) -> tuple[TensorFacts, ...]:
            return tuple(TensorFacts(t["name"], t["dtype"], tuple(t["shape"]), t.get("path", "")) for t in data[key])

        return cls(
            source=source,
            sizes=dict(data["sizes"]),
            fixed=dict(data["fixed"]),
            validation=tuple(dict(c) for c in data["validation"]),
            inputs=tensors("inputs"),
            params=tensors("params"),
            outputs=tensors("outputs"),
            flops=str(data["flops"]),
            returns_tuple=bool(data.get("returns_tuple", False)),
            gpu_free_bytes=data.get("gpu_free_bytes"),
            tuples={k: tuple(v) for k, v in data.get("tuples", {}).items()},
            numbers=tuple(
                NumberFacts(n["name"], n["position"], n["type"], n.get("value"), tuple(n.get("per_case", ())))
                for n in data.get("numbers", [])
            ),
            forward_inputs=tuple(data.get("forward_inputs", ())),
            batch_statistics=tuple(data.get("batch_statistics", ())),
        )


def naming_the_file(path: Path, line: str) -> str:
    """A refusal that starts with the file it is about (the child's lines often say "forward raised ...")."""
    return line if line.startswith(path.name) else f"{path.name}: {line}"


def inspect_module(path: Path, timeout_s: float = PROBE_TIMEOUT_S) -> ModuleFacts:
    """The facts of a module file, or ImportRefused with one line."""
    problem = module_file_problem(path)
    if problem:
        raise ImportRefused(problem)
    missing = torch_missing()
    if missing:
        raise ImportRefused(missing)
    run = run_bounded(
        [sys.executable, "-m", "cuda_llm.engine.torchtask.probe", str(path.resolve())],
        cwd=path.resolve().parent,
        env=without_secrets(os.environ),  # it runs a module file: it needs no key
        timeout_s=timeout_s,
    )
    if run.timed_out:
        raise ImportRefused(
            f"{path.name} did not finish loading within {timeout_s:.0f} s (does importing it or get_inputs() hang?)"
        )
    try:
        data = json.loads(run.result) if run.result else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise ImportRefused(_ended_early(path, run))
    if "error" in data:
        raise ImportRefused(naming_the_file(path, str(data["error"])))
    return ModuleFacts.from_json(path, data)


def _ended_early(path: Path, run: ChildRun) -> str:
    """The one line for a child that ended without an answer."""
    tail = (run.stderr_tail.strip().splitlines() or ["no output"])[-1]
    if "MemoryError" in tail or "can't allocate memory" in tail:
        return (
            f"{path.name} needed more than {run.memory_limit / 2**30:.0f} GiB of memory while loading (the importer's "
            "limit): make what importing it, Model(...) or get_inputs() allocate smaller"
        )
    how = f"signal {-run.returncode}" if run.returncode < 0 else f"exit {run.returncode}"
    return f"{path.name}: loading it ended the process ({how}): {tail}"
