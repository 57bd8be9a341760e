"""Each case's input values kept on the device by the GPU worker, so a candidate's buffers are filled
by a device-to-device copy instead of an upload from the host (worker side).

A round's candidates all take the same inputs (per task, size and seed). Uploaded for each of them,
vector_add's timing size alone moved 268 MB across PCIe per candidate; GPUs that share a PCIe switch
share its bandwidth, so uploads grew when a round was split across two GPUs (28 -> 38 ms summed on
two H200s, docs/performance.md). Copied on the device it takes a fraction of a millisecond.

Inputs are no secret (every candidate gets them), but any kernel can write anywhere in the context,
and a stray write must not corrupt the inputs of the candidates after it. So each master has a
witness copy, and both are compared on the device before every use (a read of both, about 0.2 ms for
268 MB): a difference drops them and the values go up from the host again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

from cuda_llm.engine.gpu.driver import Context, DeviceBuffer, allocated_bytes
from cuda_llm.engine.gpu.harness import Harness

Key = tuple[str, str, int]  # (task fingerprint, case label, seed)

# Device memory the masters and their witnesses may take, as a share of the GPU's: the largest
# task's cases twice over (softmax's timing inputs are 268 MB) with room for a few tasks, a small
# part of what a round's buffers take.
INPUT_MASTERS_SHARE = 0.05


class InputMasters:
    """Device copies of cases' inputs, least recently used out within `budget_bytes` (masters and
    witnesses together)."""

    def __init__(self, ctx: Context, budget_bytes: int) -> None:
        self.ctx = ctx
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[Key, tuple[dict[str, DeviceBuffer], dict[str, DeviceBuffer]]] = OrderedDict()
        self._bytes = 0
        self.uploads = 0  # entries put on the device (first use, or again after a corruption)
        self.corrupted = 0  # entries found changed since they were put there

    @staticmethod
    def _size(inputs: Mapping[str, np.ndarray]) -> int:
        return 2 * sum(allocated_bytes(a.nbytes) for a in inputs.values())

    def get(
        self, key: Key, inputs: Mapping[str, np.ndarray], harness: Harness, timeout_s: float
    ) -> dict[str, DeviceBuffer] | None:
        """The inputs of `key` on the device, checked unchanged; None when they cannot be kept within
        the budget (the caller uploads them itself). The buffers are only to be read."""
        entry = self._entries.get(key)
        if entry is not None:
            masters, witnesses = entry
            if all(harness.count_diff(masters[n], witnesses[n], timeout_s) == 0 for n in masters):
                self._entries.move_to_end(key)
                return masters
            self.corrupted += 1
            self._drop(key)
        size = self._size(inputs)
        if size > self.budget_bytes:
            return None
        while self._entries and self._bytes + size > self.budget_bytes:
            self._drop(next(iter(self._entries)))
        masters, witnesses = {}, {}
        try:
            for name, host in inputs.items():
                masters[name] = self.ctx.alloc(host.nbytes)
                witnesses[name] = self.ctx.alloc(host.nbytes)
                self.ctx.upload(masters[name], host)
                self.ctx.copy(witnesses[name], masters[name])
        except BaseException:
            for buf in [*masters.values(), *witnesses.values()]:
                self.ctx.free(buf)
            raise
        self._entries[key] = (masters, witnesses)
        self._bytes += size
        self.uploads += 1
        return masters

    def _drop(self, key: Key) -> None:
        masters, witnesses = self._entries.pop(key)
        self._bytes -= 2 * sum(allocated_bytes(b.nbytes) for b in masters.values())
        for buf in [*masters.values(), *witnesses.values()]:
            self.ctx.free(buf)
