"""Inputs and reference outputs per (task, size, seed), computed once per worker and reused by every
candidate of a session (the reference at the timing size can take seconds)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from engine.judge.compare import output_rms
from engine.task.model import SizeCase, Task
from engine.task.reference import Reference, load_reference

# Host memory the cache may hold: the timing-size case of the largest task (inputs plus a float64
# expected output) is about 1.5 GB; keep a few tasks' worth without threatening a 16 GB workstation.
CACHE_BUDGET_BYTES = 6 * 2**30


@dataclass(frozen=True)
class ReferenceCase:
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray] | None  # None when only inputs were asked for
    scale: dict[str, np.ndarray] | None
    # Each output's RMS under the "rms" tolerance rule (0.0 otherwise): a pass over the whole output,
    # made once here rather than in every comparison.
    rms: dict[str, float] = field(default_factory=dict)

    def rms_of(self, name: str) -> float:
        return self.rms.get(name, 0.0)

    @property
    def nbytes(self) -> int:
        arrays = [*self.inputs.values(), *(self.expected or {}).values(), *(self.scale or {}).values()]
        return sum(a.nbytes for a in arrays)


class ReferenceCache:
    def __init__(self, budget_bytes: int = CACHE_BUDGET_BYTES) -> None:
        self.budget = budget_bytes
        self._refs: dict[str, Reference] = {}
        self._cases: OrderedDict[tuple[str, str, int, bool], ReferenceCase] = OrderedDict()
        self._bytes = 0

    def reference(self, task: Task) -> Reference:
        if task.fingerprint not in self._refs:
            self._refs[task.fingerprint] = load_reference(task)
        return self._refs[task.fingerprint]

    def get(self, task: Task, case: SizeCase, seed: int, with_expected: bool = True) -> ReferenceCase:
        key = (task.fingerprint, case.label, seed, with_expected)
        hit = self._cases.get(key)
        if hit is not None:
            self._cases.move_to_end(key)
            return hit
        ref = self.reference(task)
        inputs = ref.inputs(case, seed)
        for arr in inputs.values():
            arr.setflags(write=False)  # cached inputs are shared by candidates: never mutated
        expected = None
        if with_expected:
            # Stored as the comparisons read them (contiguous float64), so no candidate pays the
            # conversion again: for a float32 reference of 64 M elements it is a tenth of a second.
            expected = {
                name: np.ascontiguousarray(arr, dtype=np.float64) for name, arr in ref.outputs(inputs, case).items()
            }
            for arr in expected.values():
                arr.setflags(write=False)
        scale = ref.error_scale(inputs, case) if with_expected else None
        rms = {}
        if task.tolerance.scale == "rms":
            rms = {name: output_rms(arr.reshape(-1)) for name, arr in (expected or {}).items()}
        entry = ReferenceCase(inputs, expected, scale, rms)
        self._cases[key] = entry
        self._bytes += entry.nbytes
        while self._bytes > self.budget and len(self._cases) > 1:
            _, old = self._cases.popitem(last=False)
            self._bytes -= old.nbytes
        return entry
