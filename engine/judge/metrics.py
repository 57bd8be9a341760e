"""Derived figures: achieved bandwidth and FLOP rate, the roofline floors and shares, speedup.

Pure arithmetic on a task, its timing size, the GPU's ceilings and a timing. Two floors: the
achievable one (our probes' measured ceilings; every "% of the roofline" we show is against it,
named so) and the physical one (what the hardware allows at all). A kernel can beat our probes
honestly; it cannot beat the physical floor, so a time under that is flagged as suspect, never
celebrated.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuda_llm.engine.gpu.protocol import TORCH_COMPILE_NAME, LatencyLevel, Peaks, Timing
from cuda_llm.engine.task.model import Task

# How every roofline share is named where it is shown, so a reader knows which ceiling it is against.
ROOFLINE_NAME = "the achievable roofline"
# ... and the physical share beside it (the hardware's own ceiling, which no honest time beats).
PHYSICAL_NAME = "the physical limit"
# What a speedup is over, as every figure says it ("3.10x the baseline"): a hand-written task's
# baseline.cu, or PyTorch eager for a task imported from a module ("3.10x eager").
BASELINE_NAME = "the baseline"
EAGER_NAME = "eager"


def share_text(pct: float, of: str = ROOFLINE_NAME) -> str:
    """The one wording of a share of a ceiling, `pct` in percent: '62% of the achievable roofline'."""
    return f"{pct:.0f}% of {of}"


def roofline_text(pct: float, bound: str | None = None) -> str:
    """'62% of the achievable roofline (memory-bound)'."""
    return share_text(pct) + (f" ({bound}-bound)" if bound else "")


@dataclass(frozen=True)
class Figures:
    median_us: float
    iqr_us: float
    bytes: int
    flops: int
    gbps: float  # achieved GB/s over the task's minimal bytes
    gflops: float
    floor_us: float  # achievable: max(bytes / probed bandwidth, flops / probed peak of the unit)
    bound: str  # "memory" or "compute": which term sets the floor
    roofline_share: float  # achievable floor / measured time (1.0 = at our probes' ceiling)
    speedup: float | None  # baseline median / this median
    suspect: str | None  # why the figure cannot be trusted, if it cannot
    physical_floor_us: float = 0.0  # max(bytes / physical bandwidth, flops / physical peak)
    physical_share: float = 0.0  # physical floor / measured time (cannot honestly exceed 1)
    levels: tuple[LatencyLevel, ...] = ()  # two when the samples fell into two levels (Timing.levels)
    baseline_name: str = BASELINE_NAME  # what `speedup` is over (baseline_name(task))
    # torch.compile's median over this median, when it was timed (an imported task, asked for)
    torch_compile_speedup: float | None = None

    @property
    def roofline_pct(self) -> float:
        return 100.0 * self.roofline_share

    @property
    def physical_pct(self) -> float:
        return 100.0 * self.physical_share


def baseline_name(task: Task) -> str:
    """What a speedup over this task's baseline is called: "eager" for an imported PyTorch module."""
    return EAGER_NAME if task.pytorch_module is not None else BASELINE_NAME


def speedups_text(speedup: float, over: str = BASELINE_NAME, torch_compile: float | None = None) -> str:
    """The one wording of a program's speedups: '3.10x the baseline', or for an imported task
    '2.40x eager, 1.30x torch.compile' (the second only where torch.compile was timed)."""
    text = f"{speedup:.2f}x {over}"
    if torch_compile is not None:
        text += f", {torch_compile:.2f}x {TORCH_COMPILE_NAME}"
    return text


def speedup_text(fig: Figures | None) -> str | None:
    """speedups_text of a program's figures; None without a speedup."""
    if fig is None or fig.speedup is None:
        return None
    return speedups_text(fig.speedup, fig.baseline_name, fig.torch_compile_speedup)


def speedup_text_of(figures: dict | None) -> str | None:
    """speedup_text of figures as stored or exported (a dict; older records name no baseline)."""
    if not figures or not figures.get("speedup"):
        return None
    over = figures.get("baseline_name") or BASELINE_NAME
    return speedups_text(figures["speedup"], over, figures.get("torch_compile_speedup"))


def peak_flops(task: Task, peaks: Peaks) -> float | None:
    """The achievable rate of the unit the task may use."""
    if task.roofline.peak == "fp32":
        return peaks.fp32_flops
    if task.roofline.peak == "fp16_tensor":
        return peaks.fp16_tensor_flops
    return None


def physical_flops(task: Task, peaks: Peaks) -> float | None:
    if task.roofline.peak == "fp32":
        return peaks.fp32_physical
    if task.roofline.peak == "fp16_tensor":
        return peaks.fp16_tensor_flops  # a datasheet rate: physical already
    return None


def _floor(nbytes: int, flops: int, bandwidth: float, peak: float | None) -> tuple[float, str]:
    mem = nbytes / bandwidth
    comp = flops / peak if peak else 0.0
    return max(mem, comp), "compute" if comp > mem else "memory"


def figures(
    task: Task,
    timing: Timing,
    peaks: Peaks | None,
    baseline: Timing | None,
    suspect_share: float = 1.0,
    torch_compile: Timing | None = None,
) -> Figures:
    """`suspect_share`: the share of the PHYSICAL floor beyond which a time cannot be honest;
    `torch_compile`: its timing when it was timed, for the second speedup."""
    nbytes, flops = task.bytes_and_flops(task.timing)
    t = timing.median_us * 1e-6
    floor, bound, physical = 0.0, "memory", 0.0
    if peaks:
        floor, bound = _floor(nbytes, flops, peaks.bandwidth, peak_flops(task, peaks))
        physical, _ = _floor(nbytes, flops, peaks.bandwidth_physical, physical_flops(task, peaks))
    share = floor / t if t > 0 else 0.0
    physical_share = physical / t if t > 0 else 0.0
    suspect = None
    if peaks and physical_share > suspect_share:
        suspect = (
            f"measured {timing.median_us:.1f} us is below the physical floor of {physical * 1e6:.1f} us "
            f"({physical_share:.0%} of what the hardware can do at all): a measurement error or a kernel "
            "that skips work"
        )
    return Figures(
        median_us=timing.median_us,
        iqr_us=timing.iqr_us,
        bytes=nbytes,
        flops=flops,
        gbps=nbytes / t / 1e9 if t > 0 else 0.0,
        gflops=flops / t / 1e9 if t > 0 else 0.0,
        floor_us=floor * 1e6,
        bound=bound,
        roofline_share=share,
        speedup=(baseline.median_us / timing.median_us) if baseline and timing.median_us > 0 else None,
        suspect=suspect,
        physical_floor_us=physical * 1e6,
        physical_share=physical_share,
        levels=timing.levels,
        baseline_name=baseline_name(task),
        torch_compile_speedup=(torch_compile.median_us / timing.median_us)
        if torch_compile is not None and torch_compile.fault is None and timing.median_us > 0
        else None,
    )


def describe_levels(levels: tuple[LatencyLevel, ...]) -> str:
    """'two levels: 763.2 us (47% of samples, SM 1980 MHz) and 833.1 us (53%, SM 1755 MHz)'."""
    parts = []
    for k, lv in enumerate(levels):
        clock = f", SM {lv.sm_clock_mhz:.0f} MHz" if lv.sm_clock_mhz else ""
        parts.append(f"{lv.median_us:.1f} us ({lv.share:.0%}{' of samples' if k == 0 else ''}{clock})")
    return "two levels: " + " and ".join(parts)
