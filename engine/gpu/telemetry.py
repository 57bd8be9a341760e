"""GPU telemetry through NVML (nvidia-ml-py): clocks, throttle reasons, temperature, power, load.

Every reading is optional: a metric a GPU does not support (fan speed on data-centre parts) or a
machine with no NVML gives None, never an exception.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Throttle reasons that mean the clock is being held down by heat or a hardware brake (as opposed
# to the ordinary software power cap every busy GPU hits): samples taken then are not comparable.
_HARD_THROTTLE_BITS = {
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}


@dataclass(frozen=True)
class TelemetrySample:
    sm_clock_mhz: int | None
    max_sm_clock_mhz: int | None
    memory_clock_mhz: int | None
    temperature_c: int | None
    power_w: float | None
    power_limit_w: float | None
    utilization_gpu: int | None  # percent
    utilization_memory: int | None
    memory_used: int | None  # bytes
    memory_total: int | None
    throttle_reasons: int | None
    other_processes: int | None  # compute processes on this GPU that are not ours

    @property
    def hard_throttle(self) -> list[str]:
        if not self.throttle_reasons:
            return []
        return [name for bit, name in _HARD_THROTTLE_BITS.items() if self.throttle_reasons & bit]


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:
        return None


def _parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: the fields after it start at the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def is_own_process(pid: int) -> bool:
    """This process or one it started (the app's GPU workers): their GPU use is not another's load.
    A PID that /proc does not show (another PID namespace) counts as someone else's."""
    me = os.getpid()
    for _ in range(64):  # a parent chain is short; the bound guards against a cycle read mid-exit
        if pid == me:
            return True
        parent = _parent_pid(pid)
        if parent is None or parent <= 1:
            return False
        pid = parent
    return False


class Nvml:
    """One GPU's NVML handle. Create with `open()`; None when NVML is unavailable."""

    def __init__(self, pynvml: Any, handle: Any) -> None:
        self._n = pynvml
        self._h = handle
        self.max_sm_clock = _safe(lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))

    @classmethod
    def open(cls, pci_bus_id: str | None = None, index: int = 0) -> Nvml | None:
        try:
            import pynvml

            pynvml.nvmlInit()
            if pci_bus_id:
                handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
            else:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            return cls(pynvml, handle)
        except Exception:
            return None

    @staticmethod
    def driver_version() -> str | None:
        try:
            import pynvml

            pynvml.nvmlInit()
            v = pynvml.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        except Exception:
            return None

    def sm_clock(self) -> int | None:
        return _safe(lambda: self._n.nvmlDeviceGetClockInfo(self._h, self._n.NVML_CLOCK_SM))

    def max_memory_clock(self) -> int | None:
        """MHz; with the bus width, the DRAM's physical bandwidth."""
        return _safe(lambda: self._n.nvmlDeviceGetMaxClockInfo(self._h, self._n.NVML_CLOCK_MEM))

    def memory_bus_width(self) -> int | None:
        """Bits."""
        return _safe(lambda: self._n.nvmlDeviceGetMemoryBusWidth(self._h))

    def throttle_reasons(self) -> int | None:
        n = self._n
        getter = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            n, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        return _safe(lambda: getter(self._h)) if getter else None

    def other_processes(self) -> int | None:
        def count() -> int:
            procs = self._n.nvmlDeviceGetComputeRunningProcesses(self._h)
            return sum(1 for p in procs if not is_own_process(p.pid))

        return _safe(count)

    def sample(self) -> TelemetrySample:
        n, h = self._n, self._h
        util = _safe(lambda: n.nvmlDeviceGetUtilizationRates(h))
        mem = _safe(lambda: n.nvmlDeviceGetMemoryInfo(h))
        power = _safe(lambda: n.nvmlDeviceGetPowerUsage(h))
        limit = _safe(lambda: n.nvmlDeviceGetEnforcedPowerLimit(h))
        return TelemetrySample(
            sm_clock_mhz=self.sm_clock(),
            max_sm_clock_mhz=self.max_sm_clock,
            memory_clock_mhz=_safe(lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)),
            temperature_c=_safe(lambda: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
            power_w=power / 1000 if power is not None else None,
            power_limit_w=limit / 1000 if limit is not None else None,
            utilization_gpu=util.gpu if util is not None else None,
            utilization_memory=util.memory if util is not None else None,
            memory_used=mem.used if mem is not None else None,
            memory_total=mem.total if mem is not None else None,
            throttle_reasons=self.throttle_reasons(),
            other_processes=self.other_processes(),
        )


def list_gpus() -> list[TelemetrySample] | None:
    """A telemetry sample for every GPU NVML sees, or None without NVML (for `doctor` and the TUI)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except Exception:
        return None
    out = []
    for i in range(count):
        nv = Nvml.open(index=i)
        if nv is not None:
            out.append(nv.sample())
    return out
