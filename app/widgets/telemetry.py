"""The telemetry bar: what runs where, and the GPU's live state from NVML (SM clock, temperature,
power, utilisation, memory), or "no GPU" when there is none to read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Unpack

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from cuda_llm.app.widgets.options import WidgetOptions
from cuda_llm.app.widgets.text import set_text
from cuda_llm.engine.gpu.telemetry import Nvml, TelemetrySample

GIB = 1024**3


NO_NVML = "GPU: no telemetry (no NVML device)"
ON_CLUSTER = "GPUs on the Ray cluster (no telemetry from there)"


# Below this width the bar shows the GPU's readings without their limits and memory, so the session,
# task and model keep room on the left (at 80 columns the full readings left them ten characters).
COMPACT_BELOW_COLUMNS = 120
# Below this width the bar's left side leaves out the program's name (the session, task and model are
# what tell one window from another), and app.tcss caps the GPU side at half the bar, so the session
# is never cut away entirely by a long GPU line.
BRAND_BELOW_COLUMNS = 80
BRAND = "cuda-llm · "


def telemetry_text(sample: TelemetrySample | None, absent: str = NO_NVML, compact: bool = False) -> str:
    if sample is None:
        return absent
    parts = []
    if sample.sm_clock_mhz is not None:
        peak = f"/{sample.max_sm_clock_mhz}" if sample.max_sm_clock_mhz and not compact else ""
        parts.append(f"SM {sample.sm_clock_mhz}{peak} MHz")
    if sample.temperature_c is not None:
        parts.append(f"{sample.temperature_c} °C")
    if sample.power_w is not None:
        limit = f"/{sample.power_limit_w:.0f}" if sample.power_limit_w and not compact else ""
        parts.append(f"{sample.power_w:.0f}{limit} W")
    if sample.utilization_gpu is not None:
        parts.append(f"{sample.utilization_gpu}%" if compact else f"util {sample.utilization_gpu}%")
    if sample.memory_used is not None and sample.memory_total and not compact:
        parts.append(f"mem {sample.memory_used / GIB:.1f}/{sample.memory_total / GIB:.0f} GiB")
    if sample.hard_throttle:
        parts.append("THROTTLED: " + ", ".join(sample.hard_throttle))
    if sample.other_processes:
        on = "" if compact else " on the GPU"
        parts.append(f"{sample.other_processes} other process(es){on}")
    return " · ".join(parts) or "GPU: no readings"


class TelemetryBar(Horizontal):
    """One line: the GPU on the right (always whole), the session on the left (cut to fit).

    The bar keeps its two parts itself rather than looking them up: the telemetry timer writes to
    it once a second, whatever the screen is doing (a resize, a screen being pushed), and a write
    must never depend on the widget tree being complete at that moment."""

    def __init__(self, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(**kwargs)
        self.sample: TelemetrySample | None = None
        self._context_label = Static("cuda-llm", id="bar-context")
        self._gpu_label = Static(telemetry_text(None), id="bar-gpu")
        self.absent = NO_NVML  # what the GPU side says with no sample (the app may say why)
        self.context = "cuda-llm"

    def on_mount(self) -> None:
        self.absent = getattr(self.app, "telemetry_absent", NO_NVML)
        self._show_sample()

    def on_resize(self) -> None:
        self._show_sample()
        self._show_context()

    def _show_sample(self) -> None:
        compact = 0 < self.size.width < COMPACT_BELOW_COLUMNS
        set_text(self._gpu_label, telemetry_text(self.sample, self.absent, compact))

    def compose(self) -> ComposeResult:
        yield self._context_label
        yield self._gpu_label

    def set_context(self, text: str) -> None:
        self.context = text
        self._show_context()

    def _show_context(self) -> None:
        narrow = 0 < self.outer_size.width < BRAND_BELOW_COLUMNS  # the terminal's width: the bar spans it
        set_text(self._context_label, self.context.removeprefix(BRAND) if narrow else self.context)

    def set_sample(self, sample: TelemetrySample | None) -> None:
        self.sample = sample
        self._show_sample()


TelemetrySampler = Callable[[], TelemetrySample | None]


def telemetry_gpu(gpus: str | None, cluster: str | None) -> int | None:
    """The local GPU whose telemetry the bar shows: the first one the session judges on (`--gpus`
    as given; every GPU when None, so GPU 0). None on a Ray cluster, whose GPUs are on other machines
    (this machine's NVML would describe a GPU the judge does not use), or for a list that names no
    local device, which the judge refuses with its own message."""
    if cluster:
        return None
    if not gpus or gpus == "all":
        return 0
    first = gpus.split(",")[0].strip()
    return int(first) if first.isdigit() else None


@dataclass
class NvmlSampler:
    """Reads GPU `index` through NVML; opened on first use, in the poller's thread."""

    index: int = 0
    _nvml: Nvml | None = None
    _tried: bool = False

    def __call__(self) -> TelemetrySample | None:
        if not self._tried:
            self._tried = True
            self._nvml = Nvml.open(index=self.index)
        return self._nvml.sample() if self._nvml is not None else None
