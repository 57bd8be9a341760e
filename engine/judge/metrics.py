"""Derived figures: achieved bandwidth and FLOP rate, the roofline floor and its share, speedup.

Pure arithmetic on a task, its timing size, the measured peaks and a timing. A share of the floor
above 100% is physically impossible: it is flagged as suspect, never celebrated.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuda_llm.engine.gpu.protocol import Peaks, Timing
from cuda_llm.engine.task.model import Task


@dataclass(frozen=True)
class Figures:
    median_us: float
    iqr_us: float
    bytes: int
    flops: int
    gbps: float  # achieved GB/s over the task's minimal bytes
    gflops: float
    floor_us: float  # max(bytes / bandwidth, flops / peak of the unit the task may use)
    bound: str  # "memory" or "compute": which term sets the floor
    roofline_share: float  # floor / measured time (1.0 = at the roofline)
    speedup: float | None  # baseline median / this median
    suspect: str | None  # why the figure cannot be trusted, if it cannot

    @property
    def roofline_pct(self) -> float:
        return 100.0 * self.roofline_share


def peak_flops(task: Task, peaks: Peaks) -> float | None:
    if task.roofline.peak == "fp32":
        return peaks.fp32_flops
    if task.roofline.peak == "fp16_tensor":
        return peaks.fp16_tensor_flops
    return None


def figures(
    task: Task, timing: Timing, peaks: Peaks | None, baseline: Timing | None, suspect_share: float = 1.0
) -> Figures:
    nbytes, flops = task.bytes_and_flops(task.timing)
    t = timing.median_us * 1e-6
    mem_floor = nbytes / peaks.bandwidth if peaks else 0.0
    pf = peak_flops(task, peaks) if peaks else None
    compute_floor = flops / pf if pf else 0.0
    floor = max(mem_floor, compute_floor)
    share = floor / t if t > 0 else 0.0
    suspect = None
    if peaks and share > suspect_share:
        suspect = (
            f"measured {timing.median_us:.1f} us is below the roofline floor of {floor * 1e6:.1f} us "
            f"({share:.0%} of the floor): a measurement error or a kernel that skips work"
        )
    return Figures(
        median_us=timing.median_us,
        iqr_us=timing.iqr_us,
        bytes=nbytes,
        flops=flops,
        gbps=nbytes / t / 1e9 if t > 0 else 0.0,
        gflops=flops / t / 1e9 if t > 0 else 0.0,
        floor_us=floor * 1e6,
        bound="compute" if compute_floor > mem_floor else "memory",
        roofline_share=share,
        speedup=(baseline.median_us / timing.median_us) if baseline and timing.median_us > 0 else None,
        suspect=suspect,
    )
