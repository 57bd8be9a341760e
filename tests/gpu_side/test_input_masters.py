"""The worker's device copies of the cases' inputs (engine/gpu/input_masters.py) over a simulated
device memory: uploaded once and reused, checked against their witness before every use, put there
again from the host after a stray write, and kept within their budget."""

from __future__ import annotations

import numpy as np

from cuda_llm.engine.gpu.driver import DeviceBuffer, allocated_bytes
from cuda_llm.engine.gpu.input_masters import InputMasters


class FakeDevice:
    """The few Context and Harness calls the masters make, on bytearrays."""

    def __init__(self) -> None:
        self.memory: dict[int, bytearray] = {}
        self.next_ptr = 1
        self.uploads = 0
        self.freed = 0

    # Context
    def alloc(self, nbytes: int) -> DeviceBuffer:
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + 1
        self.memory[ptr] = bytearray(nbytes)
        return DeviceBuffer(ptr, nbytes)

    def free(self, buf: DeviceBuffer) -> None:
        del self.memory[buf.ptr]
        self.freed += 1

    def upload(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        self.uploads += 1
        self.memory[buf.ptr][:] = host.tobytes()

    def copy(self, dst: DeviceBuffer, src: DeviceBuffer) -> None:
        n = min(dst.nbytes, src.nbytes)
        self.memory[dst.ptr][:n] = self.memory[src.ptr][:n]

    # Harness
    def count_diff(self, a: DeviceBuffer, b: DeviceBuffer, timeout_s: float) -> int:
        x, y = self.memory[a.ptr], self.memory[b.ptr]
        return sum(p != q for p, q in zip(x, y, strict=False))


def inputs(value: float, n: int = 16) -> dict[str, np.ndarray]:
    return {"a": np.full(n, value, dtype=np.float32), "b": np.arange(n, dtype=np.float32)}


def test_uploaded_once_then_reused_from_the_device() -> None:
    dev = FakeDevice()
    masters = InputMasters(dev, budget_bytes=10 * 2**30)  # type: ignore[arg-type]
    key = ("task", "n=16", 7)
    first = masters.get(key, inputs(1.0), dev, 1.0)
    again = masters.get(key, inputs(1.0), dev, 1.0)
    assert first is again and dev.uploads == 2 and masters.uploads == 1  # a and b, once
    assert bytes(dev.memory[first["a"].ptr]) == inputs(1.0)["a"].tobytes()


def test_a_stray_write_is_found_and_the_inputs_go_up_again() -> None:
    dev = FakeDevice()
    masters = InputMasters(dev, budget_bytes=10 * 2**30)  # type: ignore[arg-type]
    key = ("task", "n=16", 7)
    first = masters.get(key, inputs(1.0), dev, 1.0)
    dev.memory[first["b"].ptr][5] ^= 0xFF  # a kernel wrote where it should not have
    again = masters.get(key, inputs(1.0), dev, 1.0)
    assert masters.corrupted == 1 and masters.uploads == 2
    assert bytes(dev.memory[again["b"].ptr]) == inputs(1.0)["b"].tobytes(), "the next candidate gets the true inputs"


def test_the_budget_keeps_the_most_recent_and_refuses_what_cannot_fit() -> None:
    dev = FakeDevice()
    one = 2 * 2 * allocated_bytes(16 * 4)  # two inputs, each with its witness
    masters = InputMasters(dev, budget_bytes=2 * one)  # type: ignore[arg-type]
    for seed in range(3):
        assert masters.get(("task", "n=16", seed), inputs(float(seed)), dev, 1.0) is not None
    assert dev.freed == 4, "the oldest case's masters and witnesses went"
    assert masters.get(("task", "n=16", 2), inputs(2.0), dev, 1.0) is not None and masters.uploads == 3
    huge = {"a": np.zeros(2 * one, dtype=np.uint8)}
    assert masters.get(("task", "huge", 0), huge, dev, 1.0) is None, "too large: the caller uploads it"
