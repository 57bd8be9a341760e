"""The float64 reference outputs kept on the GPU where no candidate kernel can reach them (worker side).

Every comparison needs a case's expected values on the device (engine/gpu/device_compare.py), and no
candidate kernel may ever find them there: they are in the worker's context only while the comparison
runs, and are wiped before the next candidate does. Uploaded from the host for every comparison,
vector_add's timing size moved 268 MB across PCIe each time (about 5 ms on an H200), the largest phase
of a validation and of the timing's state check, and it does not split across GPUs that share a PCIe
switch.

The vault is a second CUDA context on the same GPU that holds a copy of each case's expected values. A
context is an address space of its own: a pointer into the vault means nothing in the worker's context,
the only one a candidate's kernel (or a library or PyTorch program) ever runs in. A comparison copies
the values across on the device (a fraction of a millisecond) into a buffer of the worker's context,
wiped after the comparison as before. tests/gpu/test_expected_vault.py shows a kernel that reads a
vault address faulting.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from cuda.bindings import driver as cu

from cuda_llm.engine.gpu.driver import Context, CudaError, DeviceBuffer, check

# Device memory the vault may hold, as a share of the GPU's: the timing sizes' expected values of a few
# tasks (vector_add's and softmax's are 268 MB each), beside the input masters' share.
EXPECTED_VAULT_SHARE = 0.05


class VaultMemory(Protocol):
    """Where the vault keeps its copies: device memory no candidate's context can address."""

    def put(self, values: np.ndarray) -> int:
        """A copy of `values` (contiguous), its address in the vault's memory."""
        ...

    def drop(self, ptr: int, nbytes: int) -> None:
        """Wipe and free a copy."""
        ...

    def copy_out(self, ctx: Context, dst: DeviceBuffer, ptr: int, nbytes: int) -> None:
        """Copy a held copy into `dst` of the worker's context, ordered on its stream."""
        ...


class SecondContext:
    """VaultMemory on a CUDA context of its own on the worker's GPU, created beside the worker's
    (primary) context and current only for the vault's own calls."""

    def __init__(self, handle: object) -> None:
        self.handle = handle

    @classmethod
    def create(cls, ctx: Context) -> SecondContext:
        handle = check(cu.cuCtxCreate(None, 0, ctx.device), "cuCtxCreate")
        # cuCtxCreate makes the new context current; the worker's own goes back on top.
        check(cu.cuCtxPopCurrent(), "cuCtxPopCurrent")
        return cls(handle)

    def _enter(self) -> None:
        check(cu.cuCtxPushCurrent(self.handle), "cuCtxPushCurrent")

    def _leave(self) -> None:
        check(cu.cuCtxPopCurrent(), "cuCtxPopCurrent")

    def put(self, values: np.ndarray) -> int:
        self._enter()
        try:
            ptr = int(check(cu.cuMemAlloc(max(values.nbytes, 1)), "cuMemAlloc"))
            try:
                check(cu.cuMemcpyHtoD(ptr, values.ctypes.data, values.nbytes), "cuMemcpyHtoD")
            except BaseException:
                cu.cuMemFree(ptr)
                raise
            return ptr
        finally:
            self._leave()

    def drop(self, ptr: int, nbytes: int) -> None:
        self._enter()
        try:
            # Freed memory can come back to the worker's context in this same process, unscrubbed.
            check(cu.cuMemsetD8(ptr, 0, max(nbytes, 1)), "cuMemsetD8")
            check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
            check(cu.cuMemFree(ptr), "cuMemFree")
        finally:
            self._leave()

    def copy_out(self, ctx: Context, dst: DeviceBuffer, ptr: int, nbytes: int) -> None:
        check(cu.cuMemcpyPeerAsync(dst.ptr, ctx.ctx, ptr, self.handle, nbytes, ctx.stream), "cuMemcpyPeerAsync")


@dataclass
class _Held:
    owner: weakref.ref[np.ndarray]
    ptr: int
    nbytes: int


class ExpectedVault:
    """Copies of expected arrays, least recently used out within `budget_bytes`. An array is known by
    its identity: the reference cache's arrays are read-only and live as long as their case is cached,
    so the same object means the same values, and a new object (the case computed again) a new copy."""

    def __init__(self, memory: VaultMemory, budget_bytes: int) -> None:
        self.memory = memory
        self.budget_bytes = budget_bytes
        self._held: OrderedDict[int, _Held] = OrderedDict()
        self._bytes = 0
        self.uploads = 0  # copies put in the vault

    @classmethod
    def open(cls, ctx: Context, budget_bytes: int) -> ExpectedVault | None:
        """A vault on `ctx`'s GPU, or None when the driver will not create a second context there (the
        comparisons then upload from the host, as they did before the vault)."""
        try:
            return cls(SecondContext.create(ctx), budget_bytes)
        except CudaError:
            return None

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def copy_into(self, ctx: Context, dst: DeviceBuffer, key: np.ndarray, values: np.ndarray) -> bool:
        """Fill `dst` with `values` (the float64, contiguous form of `key`) from the vault, putting them
        there first if need be. False when they cannot be kept within the budget: the caller uploads."""
        if key.flags.writeable:
            return False  # an array that may change under the same identity is never held
        held = self._held.get(id(key))
        if held is not None and held.owner() is not key:
            self._drop(id(key))  # the id of an array that is gone, reused
            held = None
        if held is None:
            if values.nbytes > self.budget_bytes:
                return False
            for k in [k for k, h in self._held.items() if h.owner() is None]:
                self._drop(k)
            while self._held and self._bytes + values.nbytes > self.budget_bytes:
                self._drop(next(iter(self._held)))
            held = _Held(weakref.ref(key), self.memory.put(values), values.nbytes)
            self._held[id(key)] = held
            self._bytes += held.nbytes
            self.uploads += 1
        else:
            self._held.move_to_end(id(key))
        if held.nbytes:
            self.memory.copy_out(ctx, dst, held.ptr, held.nbytes)
        return True

    def _drop(self, key_id: int) -> None:
        held = self._held.pop(key_id)
        self._bytes -= held.nbytes
        self.memory.drop(held.ptr, held.nbytes)
