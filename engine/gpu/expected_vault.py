"""The float64 reference outputs kept on the GPU, mapped into the address space only while a comparison
reads them (worker side).

Every comparison needs a case's expected values on the device (engine/gpu/device_compare.py), and no
candidate kernel may ever find them there. Uploaded from the host for every comparison and wiped after
it, vector_add's timing size moved 268 MB across PCIe each time (about 5 ms on an H200): the largest
phase of the timing's state check, which runs every candidate again and compares it.

The vault keeps each case's expected values in device memory that has no address while no comparison
runs: physical memory from the driver's virtual memory management (cuMemCreate), mapped at a reserved
address range for the comparison (cuMemMap, cuMemSetAccess) and unmapped right after it (cuMemUnmap). A
kernel that reads the range while it is unmapped faults like one that reads freed memory; no candidate
runs while it is mapped (tests/gpu/test_expected_vault.py shows an unmapped range faulting). Putting
the values in a second CUDA context was tried first and does not hide them: on an H200 a kernel of one
context of a process read the memory of another (docs/runs/s14/b-2xh200-vault-ab).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from cuda.bindings import driver as cu

from cuda_llm.engine.gpu.driver import Context, CudaError, DeviceBuffer, check

# Device memory the vault may hold, as a share of the GPU's: the timing sizes' expected values of a few
# tasks (vector_add's and softmax's are 268 MB each), beside the input masters' share.
EXPECTED_VAULT_SHARE = 0.05


class VaultMemory(Protocol):
    """Where the vault keeps its copies: device memory with no address until it is mapped."""

    def put(self, values: np.ndarray) -> Any:
        """A copy of `values` (contiguous), left unmapped; returns its handle."""
        ...

    def drop(self, handle: Any) -> None:
        """Wipe a copy and give its memory back."""
        ...

    def map(self, handle: Any) -> DeviceBuffer:
        """The copy at an address kernels of the worker's context can read, until unmap."""
        ...

    def unmap(self, handle: Any) -> None:
        """No address for the copy any more. The caller has waited for whatever read it."""
        ...


@dataclass
class _Range:
    """One copy: its physical memory and the address range reserved for it."""

    memory: Any  # CUmemGenericAllocationHandle
    va: int
    size: int  # rounded up to the allocation granularity
    nbytes: int
    mapped: bool = False


class UnmappedMemory:
    """VaultMemory from the driver's virtual memory management, on the worker's device."""

    def __init__(self, ctx: Context) -> None:
        self.prop = cu.CUmemAllocationProp()
        self.prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        self.prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        self.prop.location.id = ctx.index
        self.access = cu.CUmemAccessDesc()
        self.access.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        self.access.location.id = ctx.index
        self.access.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        flag = cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
        self.granularity = int(
            check(cu.cuMemGetAllocationGranularity(self.prop, flag), "cuMemGetAllocationGranularity")
        )

    def put(self, values: np.ndarray) -> _Range:
        size = -(-max(values.nbytes, 1) // self.granularity) * self.granularity
        memory = check(cu.cuMemCreate(size, self.prop, 0), "cuMemCreate")
        try:
            va = int(check(cu.cuMemAddressReserve(size, self.granularity, 0, 0), "cuMemAddressReserve"))
        except BaseException:
            cu.cuMemRelease(memory)  # quietly: the first error is the one to report
            raise
        held = _Range(memory, va, size, values.nbytes)
        try:
            self._map(held)
            try:
                check(cu.cuMemcpyHtoD(va, values.ctypes.data, values.nbytes), "cuMemcpyHtoD")
                # From pageable memory the copy returns before its DMA is done: unmapped under it, the
                # copy faults (seen on an H200) and takes the worker's context down with it.
                check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
            finally:
                self.unmap(held)
        except BaseException:
            self._release(held, quiet=True)
            raise
        return held

    def put_device(self, src: DeviceBuffer) -> _Range:
        """A copy of device memory (values made on the GPU: an imported task's float64 reference), left
        unmapped. The caller has waited for whatever wrote `src`."""
        size = -(-max(src.nbytes, 1) // self.granularity) * self.granularity
        memory = check(cu.cuMemCreate(size, self.prop, 0), "cuMemCreate")
        try:
            va = int(check(cu.cuMemAddressReserve(size, self.granularity, 0, 0), "cuMemAddressReserve"))
        except BaseException:
            cu.cuMemRelease(memory)
            raise
        held = _Range(memory, va, size, src.nbytes)
        try:
            self._map(held)
            try:
                check(cu.cuMemcpyDtoD(va, src.ptr, src.nbytes), "cuMemcpyDtoD")
                # Device-to-device copies return before they are done: finished before the unmap.
                check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
            finally:
                self.unmap(held)
        except BaseException:
            self._release(held, quiet=True)
            raise
        return held

    def drop(self, handle: _Range) -> None:
        # Physical memory given back can come to the worker's own next allocation, unscrubbed.
        try:
            self._map(handle)
            check(cu.cuMemsetD8(handle.va, 0, handle.size), "cuMemsetD8")
            check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        finally:
            self._release(handle)

    def map(self, handle: _Range) -> DeviceBuffer:
        self._map(handle)
        return DeviceBuffer(handle.va, handle.nbytes)

    def unmap(self, handle: _Range) -> None:
        if handle.mapped:
            check(cu.cuMemUnmap(handle.va, handle.size), "cuMemUnmap")
            handle.mapped = False

    def _map(self, handle: _Range) -> None:
        check(cu.cuMemMap(handle.va, handle.size, 0, handle.memory, 0), "cuMemMap")
        handle.mapped = True
        check(cu.cuMemSetAccess(handle.va, handle.size, [self.access], 1), "cuMemSetAccess")

    def _release(self, handle: _Range, quiet: bool = False) -> None:
        # A range left mapped (a failure between cuMemMap and cuMemUnmap) keeps its physical memory
        # past cuMemRelease, and its address cannot be freed: unmapped first. Every call is made
        # whatever the one before said, so nothing is kept; then the first failure is reported.
        unmapped = cu.cuMemUnmap(handle.va, handle.size) if handle.mapped else (cu.CUresult.CUDA_SUCCESS,)
        handle.mapped = False
        address = cu.cuMemAddressFree(handle.va, handle.size)
        memory = cu.cuMemRelease(handle.memory)
        if not quiet:
            check(unmapped, "cuMemUnmap")
            check(address, "cuMemAddressFree")
            check(memory, "cuMemRelease")


@dataclass
class _Held:
    owner: weakref.ref[np.ndarray]
    handle: Any
    nbytes: int


class ExpectedVault:
    """Copies of expected arrays, least recently used out within `budget_bytes`. An array is known by
    its identity: the reference cache's arrays are read-only and live as long as their case is cached,
    so the same object means the same values, and a new object (the case computed again) a new copy."""

    def __init__(self, memory: VaultMemory, budget_bytes: int) -> None:
        self.memory = memory
        self.budget_bytes = budget_bytes
        self._held: OrderedDict[int, _Held] = OrderedDict()
        self.uploads = 0  # copies put in the vault

    @classmethod
    def open(cls, ctx: Context, budget_bytes: int) -> ExpectedVault | None:
        """A vault on `ctx`'s GPU, or None where the driver has no virtual memory management (the
        comparisons then upload from the host, as they did before the vault)."""
        try:
            supported = ctx.attribute("VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED")
            return cls(UnmappedMemory(ctx), budget_bytes) if supported else None
        except CudaError:
            return None

    @property
    def held_bytes(self) -> int:
        return sum(h.nbytes for h in self._held.values())

    def lend(self, key: np.ndarray, values: np.ndarray) -> tuple[Any, DeviceBuffer] | None:
        """`values` (the float64, contiguous form of `key`) mapped for a comparison, putting them in the
        vault first if need be: (the handle to give back, the buffer). None when they cannot be kept
        within the budget: the caller uploads them itself."""
        if key.flags.writeable:
            return None  # an array that may change under the same identity is never held
        held = self._held.get(id(key))
        if held is not None and held.owner() is not key:
            self._drop(id(key))  # the id of an array that is gone, reused
            held = None
        if held is None:
            if values.nbytes > self.budget_bytes:
                return None
            for k in [k for k, h in self._held.items() if h.owner() is None]:
                self._drop(k)
            while self._held and self.held_bytes + values.nbytes > self.budget_bytes:
                self._drop(next(iter(self._held)))
            try:
                handle = self.memory.put(values)
            except CudaError as exc:
                if exc.sticky:
                    raise
                return None  # out of device memory, say: the comparison uploads, as without a vault
            held = _Held(weakref.ref(key), handle, values.nbytes)
            self._held[id(key)] = held
            self.uploads += 1
        else:
            self._held.move_to_end(id(key))
        return held.handle, self.memory.map(held.handle)

    def give_back(self, handle: Any) -> None:
        """Unmap what lend() mapped, once the comparison that read it has finished."""
        self.memory.unmap(handle)

    def _drop(self, key_id: int) -> None:
        self.memory.drop(self._held.pop(key_id).handle)


class Sealed:
    """Float64 values made on the device and kept there with no address between comparisons (an
    imported task's reference, engine/gpu/device_cases.py): lent to one comparison at a time, then
    unmapped; dropped (wiped) when their case goes."""

    def __init__(self, memory: UnmappedMemory, src: DeviceBuffer, count: int) -> None:
        self.memory = memory
        self.handle = memory.put_device(src)
        self.count = count
        self.nbytes = src.nbytes

    def lend(self) -> DeviceBuffer:
        return self.memory.map(self.handle)

    def give_back(self) -> None:
        self.memory.unmap(self.handle)

    def drop(self) -> None:
        self.memory.drop(self.handle)
