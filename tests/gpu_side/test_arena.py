"""The device arena (engine/gpu/arena.py) over a simulated device memory: buffers of a size come back
to the next request of that size, wiped; the budget holds; out of memory gives the idle ones back."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from cuda_llm.engine.gpu.arena import DeviceArena

POISONED = b"\xab"


class OutOfMemory(Exception):
    pass


@dataclass(eq=False)
class Buf:
    nbytes: int
    data: bytearray = field(default_factory=bytearray)


@dataclass
class Memory:
    """A device with `capacity` bytes; what each buffer holds is kept, as a GPU's memory does."""

    capacity: int
    used: int = 0
    allocs: int = 0
    frees: int = 0

    def alloc(self, nbytes: int) -> Buf:
        if self.used + nbytes > self.capacity:
            raise OutOfMemory
        self.used += nbytes
        self.allocs += 1
        return Buf(nbytes, bytearray(POISONED * nbytes))  # a fresh allocation holds whatever was there

    def free(self, buf: Buf) -> None:
        self.used -= buf.nbytes
        self.frees += 1

    @staticmethod
    def wipe(buf: Buf) -> None:
        buf.data[:] = bytes(buf.nbytes)


def arena(memory: Memory, budget: int) -> DeviceArena[Buf]:
    return DeviceArena(
        memory.alloc, memory.free, memory.wipe, lambda n: n, budget, lambda e: isinstance(e, OutOfMemory)
    )


def test_a_buffer_comes_back_wiped_to_the_next_request_of_its_size() -> None:
    mem = Memory(capacity=1000)
    a = arena(mem, budget=500)
    first = a.take(100)
    first.data[:] = b"\x42" * 100  # one candidate's output
    a.give(first)
    again = a.take(100)
    assert again is first and mem.allocs == 1
    assert bytes(again.data) == bytes(100), "a reused buffer must hold nothing of its last user"
    other = a.take(60)  # another size: a buffer of its own
    assert other is not first and mem.allocs == 2
    assert a.stats.reused == 1 and a.stats.allocated == 2


def test_idle_buffers_hold_nothing_of_their_last_user_while_others_run() -> None:
    mem = Memory(capacity=1000)
    a = arena(mem, budget=500)
    buf = a.take(10)
    buf.data[:] = b"secret-ok!"
    a.give(buf)
    # Any program running now could read this buffer: it must already be wiped, not at the next take.
    assert bytes(buf.data) == bytes(10)


def test_the_idle_buffers_stay_within_the_budget_oldest_out_first() -> None:
    mem = Memory(capacity=10_000)
    a = arena(mem, budget=250)
    bufs = [a.take(100) for _ in range(3)]
    for b in bufs:
        a.give(b)
    assert a.idle_bytes == 200 and mem.frees == 1
    assert a.take(100) is bufs[1]  # the first given back was the first freed
    big = a.take(400)
    a.give(big)  # larger than the whole budget: straight back to the driver
    assert mem.frees == 2 and a.idle_bytes == 100


def test_out_of_memory_gives_the_idle_buffers_back_and_tries_again() -> None:
    mem = Memory(capacity=300)
    a = arena(mem, budget=300)
    for b in [a.take(100), a.take(100), a.take(100)]:
        a.give(b)
    assert mem.used == 300
    got = a.take(250)  # no idle buffer of this size, and no room until the idle ones go
    assert got.nbytes == 250 and a.idle_bytes == 0 and mem.frees == 3


def test_out_of_memory_with_nothing_idle_is_raised() -> None:
    mem = Memory(capacity=100)
    a = arena(mem, budget=100)
    held = a.take(100)
    with pytest.raises(OutOfMemory):
        a.take(50)
    assert held.nbytes == 100
