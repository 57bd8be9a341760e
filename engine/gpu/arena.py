"""Device memory kept for reuse inside one GPU worker (worker side).

Every candidate of a round asks for the same buffers (each validation case's inputs, outputs and
snapshots, the expected values of the comparison, the timing size's placements), and cuMemAlloc /
cuMemFree of large buffers go through the kernel driver, which serialises them across the GPUs of a
host: on two H200s allocation took 67 ms for a round of 8 on one GPU and 106 ms summed on two
(docs/performance.md). So a freed buffer is kept, wiped, and handed out again to the next request of
exactly its size.

What a candidate may find in memory does not change: a buffer is wiped (filled with a constant) when
it is given back, before any other program can run, so an idle buffer holds nothing of the program
that used it, and every user overwrites what it reads anyway (inputs uploaded or copied, outputs
poisoned before every run, scratch zeroed by the plan's run). Memory the driver hands out fresh is
not wiped at all.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar


class Sized(Protocol):
    nbytes: int


B = TypeVar("B", bound=Sized)


@dataclass
class ArenaStats:
    allocated: int = 0  # buffers the driver allocated
    reused: int = 0  # requests served from the idle buffers
    freed: int = 0  # buffers given back to the driver (over the budget, or to make room)


class DeviceArena(Generic[B]):
    """Idle buffers by size, least recently given back first out, within `budget_bytes` (counted as
    `footprint(nbytes)`, the device memory a buffer really takes)."""

    def __init__(
        self,
        alloc: Callable[[int], B],
        free: Callable[[B], None],
        wipe: Callable[[B], None],
        footprint: Callable[[int], int],
        budget_bytes: int,
        is_out_of_memory: Callable[[BaseException], bool],
    ) -> None:
        self._alloc = alloc
        self._free = free
        self._wipe = wipe
        self._footprint = footprint
        self.budget_bytes = budget_bytes
        self._is_oom = is_out_of_memory
        self._idle: OrderedDict[int, B] = OrderedDict()  # id(buf) -> buf, oldest first
        self._idle_bytes = 0
        self.stats = ArenaStats()

    @property
    def idle_bytes(self) -> int:
        """Device memory held by idle buffers (free for this worker's next requests)."""
        return self._idle_bytes

    def take(self, nbytes: int) -> B:
        """An idle buffer of exactly `nbytes` (wiped), else a new one; when the device is out of
        memory, the idle buffers go back to the driver and the allocation is tried once more."""
        for key, buf in self._idle.items():
            if buf.nbytes == nbytes:
                del self._idle[key]
                self._idle_bytes -= self._footprint(nbytes)
                self.stats.reused += 1
                return buf
        try:
            buf = self._alloc(nbytes)
        except Exception as exc:
            if not self._is_oom(exc) or not self._idle:
                raise
            self.release_idle()
            buf = self._alloc(nbytes)
        self.stats.allocated += 1
        return buf

    def give(self, buf: B) -> None:
        """Wipe a buffer its user is done with and keep it for the next request of its size (the
        oldest idle ones go back to the driver to stay within the budget)."""
        self._wipe(buf)
        size = self._footprint(buf.nbytes)
        if size > self.budget_bytes:
            self._release(buf)
            return
        self._idle[id(buf)] = buf
        self._idle_bytes += size
        while self._idle_bytes > self.budget_bytes:
            _key, old = self._idle.popitem(last=False)
            self._idle_bytes -= self._footprint(old.nbytes)
            self._release(old)

    def release_idle(self) -> None:
        """Every idle buffer back to the driver."""
        while self._idle:
            _key, old = self._idle.popitem(last=False)
            self._idle_bytes -= self._footprint(old.nbytes)
            self._release(old)

    def _release(self, buf: B) -> None:
        self._free(buf)
        self.stats.freed += 1
