"""An imported task's cases made on the GPU and kept there (worker side).

The host path (engine/gpu/reference_cache.py) makes a case's inputs with NumPy or on the CPU and brings
the float64 reference back to host memory. At the field's sizes that is most of the cost and all of the
host memory: a ReLU over 4096 x 393216 floats took 38 GB of RAM and two minutes a candidate, the
reference alone 12.9 GB a case. For a task imported from a PyTorch module the worker instead calls
get_inputs() under the GPU device (the file's own distributions, seeded per case), runs the module in
float64 there, and keeps both on the device: nothing of the problem's size passes through host memory.

What a case keeps, and the checks that make keeping it safe:

- the inputs as masters, copied into each candidate's buffers, and a witness copy of each; both are
  compared on the device before every use, and a difference (a stray write by some kernel) drops the
  case, which is made again;
- the float64 outputs Sealed (engine/gpu/expected_vault.py): device memory with no address except
  while a comparison reads it, so no kernel can ever find them;
- whatever PyTorch's allocator kept while making them is wiped before any candidate runs
  (EagerProgram.scrub), so no kernel finds the answer in memory freed after the reference.

Cases are kept within a budget (a share of the GPU's memory) in the order they were first made, and
a case that does not fit is made for its use and dropped after it. Validation asks for the same cases
in the same order for every candidate; evicting the least recently used would drop exactly the case
asked for next, every time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from cuda_llm.engine.gpu.driver import DeviceBuffer, allocated_bytes
from cuda_llm.engine.gpu.harness import Harness
from cuda_llm.engine.task.model import SizeCase, Task

Key = tuple[str, str, int, bool]  # (task fingerprint, case label, seed, with the expected values)

# Device memory the kept cases may take, as a share of the GPU's: the field's largest elementwise
# problems take 26 GB a case (6.4 GB of inputs, their witness, 12.9 GB of float64 outputs), so an H200
# keeps the timing case and the small ones, and the rest of its memory holds what a round runs on
# (a case being made, the candidates' buffers, the timing's placements).
DEVICE_CASES_SHARE = 0.35

# ...and only while twice a case's size stays free beside it: making another case of its size takes
# about that much at its peak (PyTorch's tensors, then the copies kept), and a candidate's buffers fit
# in what that leaves.
KEEP_ROOM = 2


class Sealable(Protocol):
    """Float64 values made on the device, kept with no address between comparisons (expected_vault.Sealed)."""

    count: int
    nbytes: int

    def lend(self) -> DeviceBuffer: ...

    def give_back(self) -> None: ...

    def drop(self) -> None: ...


@dataclass
class MadeCase:
    """A case as its maker left it: buffers in PyTorch's memory, valid until done() is called."""

    inputs: dict[str, DeviceBuffer]
    outputs: dict[str, tuple[DeviceBuffer, int]]  # float64 values and their element count
    rms: dict[str, float]  # each output's RMS, for the "rms" tolerance rule
    done: Callable[[], None]  # frees the tensors and wipes what PyTorch's allocator kept


class DeviceLike(Protocol):
    """The Context and Harness calls the cases make (a fake device in the CPU tests)."""

    def alloc(self, nbytes: int) -> DeviceBuffer: ...

    def free(self, buf: DeviceBuffer) -> None: ...

    def copy(self, dst: DeviceBuffer, src: DeviceBuffer) -> None: ...


@dataclass
class DeviceCase:
    masters: dict[str, DeviceBuffer]  # only to be read: copied into a candidate's buffers
    witnesses: dict[str, DeviceBuffer]
    expected: dict[str, Sealable] = field(default_factory=dict)
    rms: dict[str, float] = field(default_factory=dict)
    kept: bool = False  # held by DeviceCases; otherwise released after its one use
    scale: None = None  # an imported task's tolerance has no custom scale (as ReferenceCase.scale)

    def rms_of(self, name: str) -> float:
        return self.rms.get(name, 0.0)

    @property
    def nbytes(self) -> int:
        held = [*self.masters.values(), *self.witnesses.values()]
        return sum(allocated_bytes(b.nbytes) for b in held) + sum(e.nbytes for e in self.expected.values())


class DeviceCases:
    """Cases made on the device, kept within `budget_bytes` in the order first made."""

    def __init__(
        self,
        dev: DeviceLike,
        seal: Callable[[DeviceBuffer, int], Sealable],
        budget_bytes: int,
        free_memory: Callable[[], int] | None = None,
    ) -> None:
        """`free_memory`: the device's free memory now (Context.free_memory); a case is kept only while
        KEEP_ROOM of its own size stays free beside it (making the next one and running a candidate
        on it need about that), so keeping never makes the next case fail for want of memory."""
        self.dev = dev
        self.seal = seal
        self.budget_bytes = budget_bytes
        self.free_memory = free_memory
        self._kept: dict[Key, DeviceCase] = {}
        self.made = 0  # cases made (first use, again after a corruption, or not kept)
        self.corrupted = 0  # kept cases found changed since they were made

    @property
    def held_bytes(self) -> int:
        return sum(c.nbytes for c in self._kept.values())

    def get(self, key: Key, make: Callable[[], MadeCase], harness: Harness, timeout_s: float) -> DeviceCase:
        """The case of `key`, its inputs checked unchanged: the kept one, or made now (kept if it fits).
        Give it back with release() after its use."""
        kept = self._kept.get(key)
        if kept is not None:
            if all(harness.count_diff(kept.masters[n], kept.witnesses[n], timeout_s) == 0 for n in kept.masters):
                return kept
            self.corrupted += 1
            self._drop(self._kept.pop(key))
        case = self._make(make)
        room = self.free_memory() if self.free_memory is not None else None
        fits = room is None or room >= KEEP_ROOM * case.nbytes
        if fits and self.held_bytes + case.nbytes <= self.budget_bytes:
            case.kept = True
            self._kept[key] = case
        return case

    def release(self, case: DeviceCase) -> None:
        """After a case's use: one not kept goes (wiped); a kept one stays."""
        if not case.kept:
            self._drop(case)

    def clear(self) -> None:
        for case in self._kept.values():
            self._drop(case)
        self._kept.clear()

    def _make(self, make: Callable[[], MadeCase]) -> DeviceCase:
        made = make()
        case = DeviceCase({}, {}, rms=dict(made.rms))
        try:
            for name, src in made.inputs.items():
                case.masters[name] = self.dev.alloc(src.nbytes)
                case.witnesses[name] = self.dev.alloc(src.nbytes)
                self.dev.copy(case.masters[name], src)
                self.dev.copy(case.witnesses[name], src)
            for name, (src, count) in made.outputs.items():
                case.expected[name] = self.seal(src, count)
        except BaseException:
            made.done()
            self._drop(case)
            raise
        made.done()  # PyTorch's copies go, wiped, before any candidate runs
        self.made += 1
        return case

    def _drop(self, case: DeviceCase) -> None:
        for buf in [*case.masters.values(), *case.witnesses.values()]:
            self.dev.free(buf)
        for sealed in case.expected.values():
            sealed.drop()
        case.masters, case.witnesses, case.expected = {}, {}, {}


class CaseMaker(Protocol):
    """Makes an imported task's case on the device (engine/gpu/eager.py's EagerProgram)."""

    def make_case(self, task: Task, case: SizeCase, seed: int, with_expected: bool = True) -> MadeCase: ...


class TaskCases:
    """One task's cases on the device, as validate() and the profiler ask for them."""

    def __init__(self, cases: DeviceCases, maker: CaseMaker, task: Task, harness: Harness, timeout_s: float) -> None:
        self.cases = cases
        self.maker = maker
        self.task = task
        self.harness = harness
        self.timeout_s = timeout_s

    def get(self, case: SizeCase, seed: int, with_expected: bool = True) -> DeviceCase:
        key = (self.task.fingerprint, case.label, seed, with_expected)
        return self.cases.get(
            key, lambda: self.maker.make_case(self.task, case, seed, with_expected), self.harness, self.timeout_s
        )

    def release(self, case: DeviceCase) -> None:
        self.cases.release(case)
