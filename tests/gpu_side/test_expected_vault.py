"""The worker's device copies of the expected values (engine/gpu/expected_vault.py), over a simulated
vault memory: put there once per array and copied out for every comparison, known by the array's
identity, never holding an array that can change, wiped when dropped, and kept within the budget.
tests/gpu/test_expected_vault.py shows on a GPU that no kernel of the worker's context reads them."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from cuda_llm.engine.gpu.driver import DeviceBuffer
from cuda_llm.engine.gpu.expected_vault import ExpectedVault


class FakeVaultMemory:
    """VaultMemory on bytearrays; `dst` buffers live in `device`, a dict of pointer -> bytearray."""

    def __init__(self) -> None:
        self.held: dict[int, bytearray] = {}
        self.device: dict[int, bytearray] = {}
        self.next_ptr = 1
        self.puts = 0
        self.dropped: list[bytes] = []  # what each dropped copy held when it was freed

    def put(self, values: np.ndarray) -> int:
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + 1
        self.held[ptr] = bytearray(values.tobytes())
        self.puts += 1
        return ptr

    def drop(self, ptr: int, nbytes: int) -> None:
        self.held[ptr][:] = bytes(nbytes)
        self.dropped.append(bytes(self.held.pop(ptr)))

    def copy_out(self, ctx, dst: DeviceBuffer, ptr: int, nbytes: int) -> None:
        assert ctx is CTX, "copied into another context than the caller's"
        assert nbytes == len(self.held[ptr]) == dst.nbytes, (nbytes, len(self.held[ptr]), dst.nbytes)
        self.device[dst.ptr][:] = self.held[ptr]

    def buffer(self, nbytes: int) -> DeviceBuffer:
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + 1
        self.device[ptr] = bytearray(nbytes)
        return DeviceBuffer(ptr, nbytes)


CTX = object()  # the worker's context, as the vault's caller names it


def frozen(values: np.ndarray) -> np.ndarray:
    values.setflags(write=False)
    return values


def test_put_once_then_copied_out_for_every_comparison() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    expected = frozen(np.linspace(-1.0, 1.0, 64))
    for _ in range(3):
        dst = mem.buffer(expected.nbytes)
        assert vault.copy_into(CTX, dst, expected, expected)  # type: ignore[arg-type]
        assert bytes(mem.device[dst.ptr]) == expected.tobytes()
    assert mem.puts == 1 and vault.uploads == 1 and vault.held_bytes == expected.nbytes


def test_an_array_that_can_change_is_never_held() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    writable = np.ones(8)
    assert not vault.copy_into(CTX, mem.buffer(64), writable, writable)  # type: ignore[arg-type]
    assert mem.puts == 0 and vault.held_bytes == 0


def test_equal_values_in_another_array_are_another_copy() -> None:
    """Known by identity, not by value: a case computed again (a new array) gets a copy of its own."""
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    first, second = frozen(np.arange(8.0)), frozen(np.arange(8.0))
    assert vault.copy_into(CTX, mem.buffer(64), first, first)  # type: ignore[arg-type]
    assert vault.copy_into(CTX, mem.buffer(64), second, second)  # type: ignore[arg-type]
    assert mem.puts == 2 and vault.uploads == 2


def test_an_array_of_the_whole_budget_is_held() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=160)
    a, b = frozen(np.ones(10)), frozen(np.zeros(10))  # 80 bytes each: together the budget exactly
    for arr in (a, b, a, b):
        assert vault.copy_into(CTX, mem.buffer(80), arr, arr)  # type: ignore[arg-type]
    assert mem.puts == 2 and mem.dropped == [] and vault.held_bytes == 160
    whole = frozen(np.ones(20))
    assert vault.copy_into(CTX, mem.buffer(160), whole, whole)  # type: ignore[arg-type]
    assert vault.held_bytes == 160 and len(mem.dropped) == 2


def test_a_new_array_under_the_id_of_one_that_is_gone_gets_its_own_copy() -> None:
    """CPython hands a freed object's address to the next object of its size: the vault must not
    take the new array for the old one."""
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    old = frozen(np.full(4, 1.0))
    assert vault.copy_into(CTX, mem.buffer(32), old, old)  # type: ignore[arg-type]
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
    dst = mem.buffer(32)
    assert vault.copy_into(CTX, dst, new, new)  # type: ignore[arg-type]
    assert bytes(mem.device[dst.ptr]) == new.tobytes()
    assert mem.puts == 2 and vault.held_bytes == 32 and len(mem.dropped) == 1


def test_more_than_the_budget_is_uploaded_by_the_caller() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=100)
    big = frozen(np.zeros(16))  # 128 bytes
    assert not vault.copy_into(CTX, mem.buffer(big.nbytes), big, big)  # type: ignore[arg-type]
    assert mem.puts == 0


def test_least_recently_used_out_and_wiped_within_the_budget() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=200)  # room for two arrays of 80 bytes
    a, b, c = (frozen(np.full(10, v)) for v in (1.0, 2.0, 3.0))
    for arr in (a, b, a, c):  # a used again after b: b is the least recent when c comes
        assert vault.copy_into(CTX, mem.buffer(arr.nbytes), arr, arr)  # type: ignore[arg-type]
    assert mem.puts == 3 and vault.held_bytes == 160
    assert mem.dropped == [bytes(80)], "b dropped, and wiped before it was freed"
    dst = mem.buffer(a.nbytes)
    assert vault.copy_into(CTX, dst, a, a)  # type: ignore[arg-type]
    assert mem.puts == 3 and bytes(mem.device[dst.ptr]) == a.tobytes()


def test_the_copy_of_an_array_that_is_gone_is_dropped() -> None:
    mem = FakeVaultMemory()
    vault = ExpectedVault(mem, budget_bytes=2**20)
    gone = frozen(np.arange(4.0))
    assert vault.copy_into(CTX, mem.buffer(32), gone, gone)  # type: ignore[arg-type]
    del gone
    gc.collect()
    kept = frozen(np.arange(6.0))
    assert vault.copy_into(CTX, mem.buffer(48), kept, kept)  # type: ignore[arg-type]
    assert len(mem.dropped) == 1 and vault.held_bytes == kept.nbytes
