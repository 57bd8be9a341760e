"""A task's reference.py: the seeded input generator and the NumPy reference, loaded and checked.

Contract of reference.py:

    def generate(sizes: dict[str, int], rng: numpy.random.Generator) -> dict[str, ndarray]
        # every input buffer, with exactly the declared dtype and shape; realistic, never all zero
    def reference(inputs: dict[str, ndarray], params: dict[str, int | float],
                  dtype=numpy.float64) -> dict[str, ndarray]
        # every output buffer, computed in `dtype` (float64 by default; tests also call it with
        # float32 and float16 to show the tolerance separates correct fp32 code from shortcuts)
    def error_scale(inputs, params) -> dict[str, ndarray]          # only if tolerance.scale = "custom"
        # a non-negative per-element magnitude the error is measured against, e.g. cumsum(|x|)

Imports NumPy: only the GPU worker and the tests load references.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from cuda_llm.engine.core.errors import TaskFileError
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.model import SizeCase, Task


def case_seed(task: Task, case: SizeCase, index: int, purpose: str = "validate") -> int:
    """A stable 63-bit seed for (task, size case, seed index, purpose): reproducible across
    processes and machines, different for validation and for timing."""
    key = f"{task.name}|{case.label}|{index}|{purpose}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "little") >> 1


@dataclass(frozen=True)
class Reference:
    task: Task
    module: ModuleType

    def inputs(self, case: SizeCase, seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        try:
            made = self.module.generate(case.as_dict(), rng)
        except Exception as exc:
            raise TaskFileError(self.task.reference_file, "generate()", f"raised {exc!r} for {case.label}") from exc
        env = self.task.env(case)
        out: dict[str, np.ndarray] = {}
        for b in self.task.inputs:
            if b.name not in made:
                raise TaskFileError(self.task.reference_file, "generate()", f"did not return input {b.name!r}")
            arr = np.asarray(made[b.name], order="C")  # ascontiguousarray would make a 0-d input 1-d
            want_shape = b.shape_for(env)
            want_dtype = np.dtype(DTYPES[b.dtype].numpy)
            if arr.dtype != want_dtype or arr.shape != want_shape:
                raise TaskFileError(
                    self.task.reference_file,
                    "generate()",
                    f"input {b.name!r} is {arr.dtype}{list(arr.shape)}, the task declares "
                    f"{want_dtype}{list(want_shape)} at {case.label}",
                )
            out[b.name] = arr
        return out

    def outputs(self, inputs: dict[str, np.ndarray], case: SizeCase, dtype: type = np.float64) -> dict[str, np.ndarray]:
        try:
            made = self.module.reference(inputs, self.task.params(case), dtype=dtype)
        except Exception as exc:
            raise TaskFileError(self.task.reference_file, "reference()", f"raised {exc!r} for {case.label}") from exc
        env = self.task.env(case)
        out: dict[str, np.ndarray] = {}
        for b in self.task.outputs:
            if b.name not in made:
                raise TaskFileError(self.task.reference_file, "reference()", f"did not return output {b.name!r}")
            arr = np.asarray(made[b.name])
            if arr.size != b.count_for(env):
                raise TaskFileError(
                    self.task.reference_file,
                    "reference()",
                    f"output {b.name!r} has {arr.size} elements, the task declares "
                    f"{list(b.shape_for(env))} at {case.label}",
                )
            out[b.name] = arr.reshape(b.shape_for(env))
        return out

    def error_scale(self, inputs: dict[str, np.ndarray], case: SizeCase) -> dict[str, np.ndarray] | None:
        if self.task.tolerance.scale != "custom":
            return None
        made = self.module.error_scale(inputs, self.task.params(case))
        env = self.task.env(case)
        return {b.name: np.asarray(made[b.name], dtype=np.float64).reshape(b.shape_for(env)) for b in self.task.outputs}


def load_module_from(path: Path, name: str) -> ModuleType:
    """Import a task's Python file (reference.py, library.py) as a module of its own."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskFileError(path, None, "cannot be imported")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise TaskFileError(path, None, f"fails to import: {exc!r}") from exc
    return module


def load_reference(task: Task) -> Reference:
    path = task.reference_file
    module = load_module_from(path, f"cuda_llm_task_{task.name}_{task.fingerprint}")
    for fn in ("generate", "reference"):
        if not callable(getattr(module, fn, None)):
            raise TaskFileError(path, f"{fn}()", "missing")
    if task.tolerance.scale == "custom" and not callable(getattr(module, "error_scale", None)):
        raise TaskFileError(path, "error_scale()", 'missing (tolerance.scale is "custom")')
    return Reference(task, module)
