"""The worker's device copies of the expected values (engine/gpu/expected_vault.py), over a simulated
vault memory: put there once per array and lent, mapped, for every comparison, unmapped when given
back, known by the array's identity, never holding an array that can change, wiped when dropped, and
kept within the budget. tests/gpu/test_expected_vault.py shows on a GPU that an unmapped copy cannot
be read."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from cuda_llm.engine.gpu.driver import CudaError, DeviceBuffer
from cuda_llm.engine.gpu.expected_vault import ExpectedVault


class FakeVaultMemory:
    """VaultMemory on bytearrays: a copy is readable (in `mapped`) only between map and unmap."""

    def __init__(self) -> None:
        self.held: dict[int, bytearray] = {}
        self.mapped: dict[int, bytes] = {}
        self.next_handle = 1
        self.puts = 0
        self.dropped: list[bytes] = []  # what each dropped copy held when it was freed
        self.refuse: CudaError | None = None  # what the next put raises

    def put(self, values: np.ndarray) -> int:
        if self.refuse is not None:
            raise self.refuse
        handle, self.next_handle = self.next_handle, self.next_handle + 1
        self.held[handle] = bytearray(values.tobytes())
        self.puts += 1
        return handle

    def drop(self, handle: int) -> None:
        assert handle not in self.mapped, "dropped while a comparison reads it"
        self.held[handle][:] = bytes(len(self.held[handle]))
        self.dropped.append(bytes(self.held.pop(handle)))

    def map(self, handle: int) -> DeviceBuffer:
        assert handle not in self.mapped, "mapped twice"
        self.mapped[handle] = bytes(self.held[handle])
        return DeviceBuffer(handle, len(self.held[handle]))

    def unmap(self, handle: int) -> None:
        del self.mapped[handle]


def frozen(values: np.ndarray) -> np.ndarray:
    values.setflags(write=False)
    return values


def lend_and_read(vault: ExpectedVault, mem: FakeVaultMemory, arr: np.ndarray) -> bytes:
    """Lend `arr`, read what the comparison would read, give it back."""
    lent = vault.lend(arr, arr)
    assert lent is not None
    handle, buf = lent
    assert buf.nbytes == arr.nbytes
    seen = mem.mapped[buf.ptr]
    vault.give_back(handle)
    assert buf.ptr not in mem.mapped, "still mapped after it was given back"
    return seen


def test_put_once_then_lent_for_every_comparison() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    expected = frozen(np.linspace(-1.0, 1.0, 64))
    for _ in range(3):
        assert lend_and_read(vault, mem, expected) == expected.tobytes()
    assert mem.puts == 1 and vault.uploads == 1 and vault.held_bytes == expected.nbytes
    assert mem.mapped == {}


def test_an_array_that_can_change_is_never_held() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    writable = np.ones(8)
    assert vault.lend(writable, writable) is None
    assert mem.puts == 0 and vault.held_bytes == 0


def test_equal_values_in_another_array_are_another_copy() -> None:
    """Known by identity, not by value: a case computed again (a new array) gets a copy of its own."""
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    first, second = frozen(np.arange(8.0)), frozen(np.arange(8.0))
    lend_and_read(vault, mem, first)
    lend_and_read(vault, mem, second)
    assert mem.puts == 2 and vault.uploads == 2


def test_more_than_the_budget_is_uploaded_by_the_caller() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=100)
    big = frozen(np.zeros(16))  # 128 bytes
    assert vault.lend(big, big) is None
    assert mem.puts == 0


def test_an_array_of_the_whole_budget_is_held() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=160)
    a, b = frozen(np.ones(10)), frozen(np.zeros(10))  # 80 bytes each: together the budget exactly
    for arr in (a, b, a, b):
        lend_and_read(vault, mem, arr)
    assert mem.puts == 2 and mem.dropped == [] and vault.held_bytes == 160
    whole = frozen(np.ones(20))
    lend_and_read(vault, mem, whole)
    assert vault.held_bytes == 160 and len(mem.dropped) == 2


def test_least_recently_used_out_and_wiped_within_the_budget() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=200)  # room for two arrays of 80 bytes
    a, b, c = (frozen(np.full(10, v)) for v in (1.0, 2.0, 3.0))
    for arr in (a, b, a, c):  # a used again after b: b is the least recent when c comes
        assert lend_and_read(vault, mem, arr) == arr.tobytes()
    assert mem.puts == 3 and vault.held_bytes == 160
    assert mem.dropped == [bytes(80)], "b dropped, and wiped before it was freed"
    assert lend_and_read(vault, mem, a) == a.tobytes()
    assert mem.puts == 3


def test_the_copy_of_an_array_that_is_gone_is_dropped() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    gone = frozen(np.arange(4.0))
    lend_and_read(vault, mem, gone)
    del gone
    gc.collect()
    kept = frozen(np.arange(6.0))
    lend_and_read(vault, mem, kept)
    assert len(mem.dropped) == 1 and vault.held_bytes == kept.nbytes


def test_a_new_array_under_the_id_of_one_that_is_gone_gets_its_own_copy() -> None:
    """CPython hands a freed object's address to the next object of its size: the vault must not
    take the new array for the old one."""
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    old = frozen(np.full(4, 1.0))
    lend_and_read(vault, mem, old)
    old_id = id(old)
    del old
    gc.collect()
    keep = []
    for _ in range(1000):
        new = frozen(np.full(4, 2.0))
        if id(new) == old_id:
            break
        keep.append(new)  # held, so the next one gets another address
    else:
        pytest.skip("no new array took the freed one's address")
    assert lend_and_read(vault, mem, new) == new.tobytes()
    assert mem.puts == 2 and vault.held_bytes == 32 and len(mem.dropped) == 1


def test_a_copy_the_device_has_no_memory_for_is_uploaded_by_the_caller() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    arr = frozen(np.ones(8))
    mem.refuse = CudaError("CUDA_ERROR_OUT_OF_MEMORY", "cuMemCreate")
    assert vault.lend(arr, arr) is None
    assert vault.held_bytes == 0 and vault.uploads == 0
    mem.refuse = None
    assert lend_and_read(vault, mem, arr) == arr.tobytes()


def test_a_sticky_error_while_putting_a_copy_is_not_swallowed() -> None:
    """After an unrecoverable error the worker must report and restart, not carry on uploading."""
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    arr = frozen(np.ones(8))
    mem.refuse = CudaError("CUDA_ERROR_ILLEGAL_ADDRESS", "cuMemcpyHtoD")
    with pytest.raises(CudaError):
        vault.lend(arr, arr)
