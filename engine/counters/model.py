"""What the counters step produces: plain frozen data the judgement, the store, the prompt, the TUI
and the reports all read (no CUDA, no ncu)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cuda_llm.engine.counters import metrics as M


@dataclass(frozen=True)
class KernelCounters:
    """The counters of one launch of a plan (ncu reports each launch on its own)."""

    launch: int  # its index in the plan's launches
    kernel: str
    values: dict[str, float] = field(default_factory=dict)  # metric name -> value in ncu's base units

    def get(self, name: str) -> float | None:
        return self.values.get(name)

    @property
    def duration_us(self) -> float:
        return (self.values.get(M.DURATION) or 0.0) / 1000.0

    @property
    def dram_bytes(self) -> float | None:
        read, write = self.values.get(M.DRAM_READ), self.values.get(M.DRAM_WRITE)
        if read is None and write is None:
            return None
        return (read or 0.0) + (write or 0.0)

    def ratio(self, num: str, den: str) -> float | None:
        a, b = self.values.get(num), self.values.get(den)
        return a / b if a is not None and b else None

    @property
    def load_sectors_per_request(self) -> float | None:
        return self.ratio(M.LD_SECTORS, M.LD_REQUESTS)

    @property
    def store_sectors_per_request(self) -> float | None:
        return self.ratio(M.ST_SECTORS, M.ST_REQUESTS)

    def stalls(self) -> list[tuple[str, float]]:
        """(reason, cycles per issued instruction), largest first."""
        found = [(reason, v) for name, reason in M.STALL_METRICS.items() if (v := self.values.get(name)) is not None]
        return sorted(found, key=lambda rv: -rv[1])


@dataclass(frozen=True)
class Finding:
    """One thing the counters say about what limits the kernel, in words to act on."""

    kind: str  # memory_bound, compute_bound, latency_bound, near_peak, rereads, uncoalesced_loads, ...
    text: str
    launch: int | None = None  # the launch it is about; None: the whole plan


@dataclass(frozen=True)
class CountersReport:
    """The counters of one candidate's plan at the timing size and what they say, or why there are none."""

    kernels: tuple[KernelCounters, ...] = ()
    findings: tuple[Finding, ...] = ()
    summary: str = ""  # "what limits it" in one line
    unavailable: str | None = None  # one line: why no counters were read (no ncu, not permitted...)
    min_bytes: int = 0  # the task's minimal traffic at the timing size (its roofline bytes)
    tool: str = "ncu"
    elapsed_s: float = 0.0  # the whole step, ncu and the probe included
    dropped_metrics: tuple[str, ...] = ()  # metrics this ncu did not know (retried without them)

    @property
    def ok(self) -> bool:
        return self.unavailable is None and bool(self.kernels)

    @property
    def dram_bytes(self) -> float | None:
        known = [b for k in self.kernels if (b := k.dram_bytes) is not None]
        return sum(known) if known else None

    @property
    def reread_factor(self) -> float | None:
        total = self.dram_bytes
        return total / self.min_bytes if total is not None and self.min_bytes > 0 else None

    @property
    def duration_us(self) -> float:
        return sum(k.duration_us for k in self.kernels)

    def line(self) -> str:
        """The one line every view shows: what limits it, or why the counters are missing."""
        if self.unavailable is not None:
            return f"counters unavailable: {self.unavailable}"
        return f"what limits it: {self.summary}" if self.summary else "counters read; nothing stands out"


def unavailable(reason: str, elapsed_s: float = 0.0) -> CountersReport:
    return CountersReport(unavailable=reason, elapsed_s=elapsed_s)
