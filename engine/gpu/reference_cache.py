"""Inputs and reference outputs per (task, size, seed), computed once per worker and reused by every
candidate of a session (the reference at the timing size can take seconds)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from cuda_llm.engine.gpu.compare import output_rms
from cuda_llm.engine.task.model import RMS_SCALES, SizeCase, Task
from cuda_llm.engine.task.reference import Reference, load_reference

# Host memory the cache may hold: the timing-size case of the largest task (inputs plus a float64
# expected output) is about 1.5 GB; keep a few tasks' worth without threatening a 16 GB workstation.
CACHE_BUDGET_BYTES = 6 * 2**30
# Page-locked memory cannot be swapped out, so only this much of the cache is pinned (the timing-size
# cases of two or three of the largest tasks, most recent first); the rest copies at pageable speed.
PINNED_BUDGET_BYTES = 4 * 2**30
# Smaller arrays copy in well under a millisecond either way, and may share their pages with other
# allocations (the driver refuses to register a page twice).
PIN_MIN_BYTES = 8 * 2**20


class HostPinner(Protocol):
    """Page-locks host arrays for faster copies (engine.gpu.driver.Context)."""

    def pin(self, host: np.ndarray) -> bool: ...

    def unpin(self, host: np.ndarray) -> None: ...


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
    def arrays(self) -> list[np.ndarray]:
        return [*self.inputs.values(), *(self.expected or {}).values(), *(self.scale or {}).values()]

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays)


class ReferenceCache:
    """Least recently used out, within `budget_bytes`; with a `pinner`, the large arrays of the most
    recent cases are page-locked (within `pinned_budget_bytes`) and unlocked when they leave.

    A cache with a pinner must be unpinned (unpin_all) before it is dropped, unless the process is
    ending: memory freed while still registered leaves the driver a stale registration, and a later
    cuMemAlloc in the same process failed with CUDA_ERROR_ALREADY_MAPPED."""

    def __init__(
        self,
        budget_bytes: int = CACHE_BUDGET_BYTES,
        pinner: HostPinner | None = None,
        pinned_budget_bytes: int = PINNED_BUDGET_BYTES,
    ) -> None:
        self.budget = budget_bytes
        self.pinner = pinner
        self.pinned_budget = pinned_budget_bytes
        self._refs: dict[str, Reference] = {}
        self._cases: OrderedDict[tuple[str, str, int, bool], ReferenceCase] = OrderedDict()
        self._pinned: dict[tuple[str, str, int, bool], list[np.ndarray]] = {}
        self._bytes = 0
        self._pinned_bytes = 0

    @property
    def pinned_bytes(self) -> int:
        return self._pinned_bytes

    def reference(self, task: Task) -> Reference:
        if task.fingerprint not in self._refs:
            self._refs[task.fingerprint] = load_reference(task)
        return self._refs[task.fingerprint]

    def get(self, task: Task, case: SizeCase, seed: int, with_expected: bool = True) -> ReferenceCase:
        key = (task.fingerprint, case.label, seed, with_expected)
        hit = self._cases.get(key)
        if hit is not None:
            self._cases.move_to_end(key)
            if key not in self._pinned:
                self._pin(key, hit, make_room=False)
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
        for arr in (scale or {}).values():
            arr.setflags(write=False)  # like the expected values: the GPU worker may hold a copy by identity
        rms = {}
        if task.tolerance.scale in RMS_SCALES:
            rms = {name: output_rms(arr.reshape(-1)) for name, arr in (expected or {}).items()}
        entry = ReferenceCase(inputs, expected, scale, rms)
        self._cases[key] = entry
        self._bytes += entry.nbytes
        while self._bytes > self.budget and len(self._cases) > 1:
            old_key, old = self._cases.popitem(last=False)
            self._bytes -= old.nbytes
            self._unpin(old_key)
        self._pin(key, entry)
        return entry

    def _pin(self, key: tuple[str, str, int, bool], entry: ReferenceCase, make_room: bool = True) -> None:
        """Pin a new case's large arrays, unpinning the least recently used cases to make room (they
        stay cached). A case used again is pinned only if there is room: unpinning and pinning a
        gigabyte on every switch between tasks would cost more than it saves."""
        if self.pinner is None:
            return
        large = [a for a in entry.arrays if a.nbytes >= PIN_MIN_BYTES]
        want = sum(a.nbytes for a in large)
        if not large or want > self.pinned_budget:
            return
        # Least recently used first: the cache's own order.
        for old_key in [k for k in self._cases if k in self._pinned] if make_room else []:
            if self._pinned_bytes + want <= self.pinned_budget:
                break
            self._unpin(old_key)
        if self._pinned_bytes + want > self.pinned_budget:
            return
        done = [a for a in large if self.pinner.pin(a)]
        self._pinned[key] = done
        self._pinned_bytes += sum(a.nbytes for a in done)

    def _unpin(self, key: tuple[str, str, int, bool]) -> None:
        arrays = self._pinned.pop(key, None)
        if arrays is None or self.pinner is None:
            return
        for a in arrays:
            self.pinner.unpin(a)
        self._pinned_bytes -= sum(a.nbytes for a in arrays)

    def unpin_all(self) -> None:
        """Unlock every pinned array (the cases stay cached): before the arrays may be freed."""
        for key in list(self._pinned):
            self._unpin(key)
