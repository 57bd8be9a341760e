"""The vault's device memory (engine/gpu/expected_vault.py, UnmappedMemory) over a simulated driver:
a copy is readable only while mapped, is wiped before its memory goes back, and every failing driver
call is reported by its name with nothing left behind (no physical memory, no address range, no
mapping), the first failure being the one reported. tests/gpu/test_expected_vault.py runs the same
class on a GPU, where no driver call fails."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest
from cuda.bindings import driver as cu

from cuda_llm.engine.gpu import expected_vault
from cuda_llm.engine.gpu.driver import CudaError
from cuda_llm.engine.gpu.expected_vault import ExpectedVault, UnmappedMemory

OK = cu.CUresult.CUDA_SUCCESS
FAILED = cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY


class FakeDriver:
    """The driver calls UnmappedMemory makes, on host bytearrays. Strict about their order: unmapping
    what is not mapped, mapping twice, freeing an address still mapped or releasing memory still
    mapped fails the call and is written down in `misuse`. A name in `fail` makes the next call of
    that name fail (after doing nothing)."""

    GRANULARITY = 2 << 20

    def __init__(self) -> None:
        self.memory: dict[int, bytearray] = {}  # handle -> physical memory
        self.reserved: dict[int, int] = {}  # address -> size
        self.mapped: dict[int, int] = {}  # address -> handle
        self.freed: list[bytes] = []  # what each released memory held
        self.misuse: list[str] = []
        self.fail: set[str] = set()
        self._next = 1

    def __getattr__(self, name: str):  # structures and enums: the real bindings'
        return getattr(cu, name)

    def _failed(self, name: str) -> bool:
        failed = name in self.fail
        self.fail.discard(name)
        return failed

    def _misuse(self, what: str) -> tuple:
        self.misuse.append(what)
        return (cu.CUresult.CUDA_ERROR_INVALID_VALUE,)

    def cuMemGetAllocationGranularity(self, prop, flag):
        return (FAILED, 0) if self._failed("cuMemGetAllocationGranularity") else (OK, self.GRANULARITY)

    def cuMemCreate(self, size, prop, flags):
        if self._failed("cuMemCreate"):
            return (FAILED, None)
        handle, self._next = self._next, self._next + 1
        self.memory[handle] = bytearray(b"\xee" * size)  # what the last owner left
        return (OK, handle)

    def cuMemAddressReserve(self, size, alignment, addr, flags):
        if self._failed("cuMemAddressReserve"):
            return (FAILED, 0)
        va = (1 << 40) + len(self.reserved) * (1 << 32) + self._next * (1 << 33)
        self.reserved[va] = size
        return (OK, va)

    def cuMemMap(self, va, size, offset, handle, flags):
        if self._failed("cuMemMap"):
            return (FAILED,)
        if va not in self.reserved or va in self.mapped or handle not in self.memory:
            return self._misuse(f"cuMemMap of {va:#x}")
        self.mapped[va] = handle
        return (OK,)

    def cuMemSetAccess(self, va, size, descs, count):
        if self._failed("cuMemSetAccess"):
            return (FAILED,)
        return (OK,) if va in self.mapped else self._misuse(f"cuMemSetAccess of unmapped {va:#x}")

    def cuMemcpyHtoD(self, va, ptr, nbytes):
        if self._failed("cuMemcpyHtoD"):
            return (FAILED,)
        if va not in self.mapped:
            return self._misuse(f"cuMemcpyHtoD to unmapped {va:#x}")
        self.memory[self.mapped[va]][:nbytes] = ctypes.string_at(ptr, nbytes)
        return (OK,)

    def cuMemsetD8(self, va, value, nbytes):
        if self._failed("cuMemsetD8"):
            return (FAILED,)
        if va not in self.mapped:
            return self._misuse(f"cuMemsetD8 of unmapped {va:#x}")
        self.memory[self.mapped[va]][:nbytes] = bytes([value]) * nbytes
        return (OK,)

    def cuCtxSynchronize(self):
        return (FAILED,) if self._failed("cuCtxSynchronize") else (OK,)

    def cuMemUnmap(self, va, size):
        if self._failed("cuMemUnmap"):
            return (FAILED,)
        if va not in self.mapped:
            return self._misuse(f"cuMemUnmap of unmapped {va:#x}")
        del self.mapped[va]
        return (OK,)

    def cuMemAddressFree(self, va, size):
        if self._failed("cuMemAddressFree"):
            return (FAILED,)
        if va in self.mapped or va not in self.reserved:
            return self._misuse(f"cuMemAddressFree of {va:#x} (mapped or not reserved)")
        del self.reserved[va]
        return (OK,)

    def cuMemRelease(self, handle):
        if self._failed("cuMemRelease"):
            return (FAILED,)
        if handle in self.mapped.values():
            self._misuse(f"cuMemRelease of memory {handle} still mapped")
        self.freed.append(bytes(self.memory.pop(handle)))
        return (OK,)

    def holds_nothing(self) -> bool:
        return not self.memory and not self.reserved and not self.mapped


@pytest.fixture
def driver(monkeypatch) -> FakeDriver:
    fake = FakeDriver()
    monkeypatch.setattr(expected_vault, "cu", fake)
    return fake


CTX = SimpleNamespace(index=0)
VALUES = np.arange(1000, dtype=np.float64)


def test_a_copy_is_readable_only_while_mapped_and_wiped_before_its_memory_goes_back(driver) -> None:
    mem = UnmappedMemory(CTX)
    handle = mem.put(VALUES)
    assert not driver.mapped, "put leaves the copy without an address"
    buf = mem.map(handle)
    assert buf.nbytes == VALUES.nbytes
    assert bytes(driver.memory[driver.mapped[buf.ptr]][: VALUES.nbytes]) == VALUES.tobytes()
    mem.unmap(handle)
    mem.unmap(handle)  # given back twice: the second time there is nothing to unmap
    assert not driver.mapped
    mem.drop(handle)
    assert driver.freed == [bytes(FakeDriver.GRANULARITY)], "wiped to zeros before it was released"
    assert driver.holds_nothing() and driver.misuse == []


PUT_CALLS = [
    "cuMemCreate",
    "cuMemAddressReserve",
    "cuMemMap",
    "cuMemSetAccess",
    "cuMemcpyHtoD",
    "cuCtxSynchronize",
    "cuMemUnmap",
]


@pytest.mark.parametrize("call", PUT_CALLS)
def test_a_put_that_fails_names_the_call_and_keeps_nothing(driver, call) -> None:
    mem = UnmappedMemory(CTX)
    driver.fail.add(call)
    with pytest.raises(CudaError) as raised:
        mem.put(VALUES)
    assert raised.value.call == call
    assert driver.holds_nothing(), f"left behind: {driver.memory.keys()}, {driver.reserved}, {driver.mapped}"
    assert driver.misuse == []


def test_a_failed_put_reports_its_own_error_not_the_clean_up_s(driver) -> None:
    mem = UnmappedMemory(CTX)
    driver.fail.update({"cuMemcpyHtoD", "cuMemAddressFree"})
    with pytest.raises(CudaError) as raised:
        mem.put(VALUES)
    assert raised.value.call == "cuMemcpyHtoD"
    assert not driver.memory and not driver.mapped, "the memory is released though the address was not freed"


DROP_CALLS = [
    "cuMemMap",
    "cuMemSetAccess",
    "cuMemsetD8",
    "cuCtxSynchronize",
    "cuMemUnmap",
    "cuMemAddressFree",
    "cuMemRelease",
]


@pytest.mark.parametrize("call", DROP_CALLS)
def test_a_drop_that_fails_names_the_call_and_still_gives_back_what_it_can(driver, call) -> None:
    mem = UnmappedMemory(CTX)
    handle = mem.put(VALUES)
    driver.fail.add(call)
    with pytest.raises(CudaError) as raised:
        mem.drop(handle)
    assert raised.value.call == call
    if call == "cuMemRelease":
        assert list(driver.memory) == [handle.memory] and not driver.reserved and not driver.mapped
    elif call == "cuMemAddressFree":
        assert list(driver.reserved) == [handle.va] and not driver.memory and not driver.mapped
    elif call == "cuMemUnmap":
        assert list(driver.mapped) == [handle.va], "still mapped: its address cannot be freed"
    else:
        assert driver.holds_nothing()
        assert driver.misuse == []


def test_a_device_without_virtual_memory_management_gets_no_vault(driver) -> None:
    def ctx(supported: int) -> SimpleNamespace:
        return SimpleNamespace(index=0, attribute=lambda name: supported)

    assert ExpectedVault.open(ctx(0), budget_bytes=2**30) is None
    vault = ExpectedVault.open(ctx(1), budget_bytes=2**30)
    assert vault is not None and isinstance(vault.memory, UnmappedMemory)
    driver.fail.add("cuMemGetAllocationGranularity")
    assert ExpectedVault.open(ctx(1), budget_bytes=2**30) is None, "a driver error: no vault, uploads as before"


def test_the_granularity_s_failure_is_named(driver) -> None:
    driver.fail.add("cuMemGetAllocationGranularity")
    with pytest.raises(CudaError) as raised:
        UnmappedMemory(CTX)
    assert raised.value.call == "cuMemGetAllocationGranularity"
