"""An imported task's cases kept on the device (engine/gpu/device_cases.py), over a simulated device
memory: made once and reused, the inputs checked against their witness before every use and the case
made again after a stray write, PyTorch's copies let go only after the worker's copies of them, kept
within the budget in the order first made, and a case that does not fit dropped after its use."""

from __future__ import annotations

import numpy as np

from cuda_llm.engine.gpu.device_cases import DeviceCases, MadeCase
from cuda_llm.engine.gpu.driver import DeviceBuffer

from .test_input_masters import FakeDevice


class FakeSealed:
    def __init__(self, dev: FakeDevice, src: DeviceBuffer, count: int) -> None:
        self.dev, self.count, self.nbytes = dev, count, src.nbytes
        self.values = bytes(dev.memory[src.ptr])
        self.dropped = False

    def lend(self) -> DeviceBuffer:
        raise AssertionError("not lent here")

    def give_back(self) -> None:
        raise AssertionError("not lent here")

    def drop(self) -> None:
        self.dropped = True


class Maker:
    """Makes a case as EagerProgram.make_case does: buffers that stay valid until done()."""

    def __init__(self, dev: FakeDevice, n: int = 16) -> None:
        self.dev, self.n = dev, n
        self.made = 0
        self.live: list[DeviceBuffer] = []

    def __call__(self, value: float = 1.0) -> MadeCase:
        self.made += 1
        x = self.dev.alloc(4 * self.n)
        self.dev.memory[x.ptr][:] = np.full(self.n, value, dtype=np.float32).tobytes()
        out = self.dev.alloc(8 * self.n)
        self.dev.memory[out.ptr][:] = np.full(self.n, 2 * value, dtype=np.float64).tobytes()
        self.live = [x, out]

        def done() -> None:
            for buf in self.live:
                self.dev.free(buf)
            self.live = []

        return MadeCase({"x": x}, {"y": (out, self.n)}, {"y": 2 * value}, done)


def cases(dev: FakeDevice, budget: int) -> DeviceCases:
    return DeviceCases(dev, lambda src, count: FakeSealed(dev, src, count), budget)  # type: ignore[arg-type,return-value]


def test_made_once_then_reused_and_its_maker_s_buffers_let_go_after_the_copies():
    dev = FakeDevice()
    make = Maker(dev)
    kept = cases(dev, budget=2**30)
    first = kept.get(("t", "n=16", 1, True), make, dev, 1.0)
    assert make.live == [], "PyTorch's tensors went once the case was copied"
    assert bytes(dev.memory[first.masters["x"].ptr]) == np.full(16, 1.0, dtype=np.float32).tobytes()
    assert first.expected["y"].values == np.full(16, 2.0).tobytes() and first.rms_of("y") == 2.0  # type: ignore[attr-defined]
    kept.release(first)
    again = kept.get(("t", "n=16", 1, True), make, dev, 1.0)
    assert again is first and make.made == 1 and kept.made == 1


def test_a_stray_write_is_found_and_the_case_is_made_again():
    dev = FakeDevice()
    make = Maker(dev)
    kept = cases(dev, budget=2**30)
    key = ("t", "n=16", 1, True)
    first = kept.get(key, make, dev, 1.0)
    dev.memory[first.masters["x"].ptr][3] ^= 0xFF  # a kernel wrote where it should not have
    again = kept.get(key, make, dev, 1.0)
    assert kept.corrupted == 1 and make.made == 2 and again is not first
    assert first.expected == {} and first.masters == {}, "the corrupted case's memory was given back"
    assert bytes(dev.memory[again.masters["x"].ptr]) == np.full(16, 1.0, dtype=np.float32).tobytes()


def test_the_first_cases_made_stay_and_one_that_does_not_fit_goes_after_its_use():
    dev = FakeDevice()
    make = Maker(dev)
    probe = cases(dev, budget=2**30)
    one = probe.get(("p", "n=16", 0, True), make, dev, 1.0).nbytes
    kept = cases(dev, budget=2 * one)
    a = kept.get(("t", "n=16", 0, True), make, dev, 1.0)
    b = kept.get(("t", "n=16", 1, True), make, dev, 1.0)
    c = kept.get(("t", "n=16", 2, True), make, dev, 1.0)
    assert a.kept and b.kept and not c.kept
    sealed = c.expected["y"]
    kept.release(c)
    assert sealed.dropped and c.masters == {}, "a case not kept is wiped after its use"  # type: ignore[attr-defined]
    # Asked for in the same order again (the next candidate), the first two are still there: an LRU
    # would have dropped the one asked for next.
    made = make.made
    assert kept.get(("t", "n=16", 0, True), make, dev, 1.0) is a
    assert kept.get(("t", "n=16", 1, True), make, dev, 1.0) is b
    assert make.made == made
    kept.clear()
    assert a.masters == {} and b.masters == {} and kept.held_bytes == 0


def test_a_case_is_not_kept_when_too_little_memory_would_stay_free_beside_it():
    dev = FakeDevice()
    make = Maker(dev)
    free = {"bytes": 10**9}
    kept = DeviceCases(dev, lambda src, count: FakeSealed(dev, src, count), 2**30, lambda: free["bytes"])  # type: ignore[arg-type,return-value]
    a = kept.get(("t", "n=16", 0, True), make, dev, 1.0)
    free["bytes"] = a.nbytes  # less than KEEP_ROOM cases of its size
    b = kept.get(("t", "n=16", 1, True), make, dev, 1.0)
    assert a.kept and not b.kept
