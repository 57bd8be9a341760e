"""What the engine and a GPU worker process say to each other: requests and typed reports.

Everything here is plain picklable data (no CUDA handles), so it crosses the pipe and is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.core.status import FaultKind, Verdict
from cuda_llm.engine.task.plan import BoundPlan

# What a torch.compile figure is called where it is shown (engine/gpu/torch_compile.py times it). Here,
# with the reports, so that naming it (engine/judge/metrics.py) imports neither NumPy nor PyTorch.
TORCH_COMPILE_NAME = "torch.compile"


@dataclass(frozen=True)
class Mismatch:
    """One wrong element of an output, as engine/gpu/compare.py finds it. Part of a validation report,
    so it lives with the reports: reading a report (the store, the screens) imports no NumPy."""

    output: str
    index: tuple[int, ...]
    expected: float
    got: float
    abs_err: float
    rel_err: float  # abs_err / |expected| (inf where expected is 0)
    case: str = ""  # the validation case ("n=1000 seed 2"), filled in by the validator


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    uuid: str
    pci_bus_id: str
    arch: str  # "sm_90"
    compute_capability: tuple[int, int]
    sm_count: int
    warp_size: int
    max_threads_per_block: int
    max_block_dims: tuple[int, int, int]
    max_grid_dims: tuple[int, int, int]
    shared_per_block: int  # without opt-in (48 KiB)
    shared_per_block_optin: int  # the most a kernel may request (227 KiB on Hopper)
    shared_per_sm: int
    registers_per_block: int
    registers_per_sm: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    l2_bytes: int
    memory_bytes: int
    sm_clock_mhz: int  # maximum
    memory_clock_mhz: int
    memory_bus_bits: int
    driver_version: str  # e.g. "13.0"
    nvrtc_version: str

    @property
    def spec_bandwidth(self) -> float:
        """Bytes/s from the memory clock and bus width (DDR: two transfers a clock)."""
        return self.memory_clock_mhz * 1e6 * 2 * self.memory_bus_bits / 8


COMPILE_ONLY = "compile-only"


def is_compile_only(device: DeviceInfo | None) -> bool:
    """Whether a session with this device judges compile-only (no GPU): the fact the label below
    shows, carried beside it (SessionStarted.compile_only, the stored environment's `compile_only`)."""
    return device is None


def device_label(device: DeviceInfo | None, arch: str) -> str:
    """What a session judges on, as it is shown and recorded: "NVIDIA H200 (sm_90)", or
    "compile-only (sm_90)" with no GPU. Built here only; whether a session ran compile-only is a fact
    of its own (is_compile_only above), never read back from this text."""
    return f"{device.name} ({arch})" if device is not None else f"{COMPILE_ONLY} ({arch})"


# Characters of a Ray node id shown to tell nodes apart (`ray list nodes` shows the whole id; 8 hex
# digits make a clash between the nodes of one cluster unlikely).
NODE_ID_CHARS = 8


@dataclass(frozen=True)
class RanOn:
    """Where a job ran: the machine and the GPU on it. Recorded with every judgement, so figures from
    different machines (a Ray cluster) are never mistaken for each other."""

    node: str  # the machine's host name
    gpu_index: int  # the GPU's number on that machine, as its driver counts them
    gpu_name: str
    gpu_uuid: str
    node_id: str | None = None  # Ray's id of the node, on a cluster (host names may repeat there)

    def describe(self) -> str:
        """'NVIDIA H200 #1', and on a cluster 'NVIDIA H200 #1 on node-a (node 5f3a2b1c)': two nodes
        may have the same host name (containers, copies of one VM), never the same Ray node id."""
        where = f"{self.gpu_name} #{self.gpu_index}"
        return f"{where} on {self.node} (node {self.node_id[:NODE_ID_CHARS]})" if self.node_id else where


@dataclass(frozen=True)
class Peaks:
    """The roofline's two ceilings on one GPU.

    Achievable: what our own probes reached on this GPU (measured once and cached), the 100% of every
    roofline share we show. Physical: what the hardware allows at all, from the device's clocks and
    widths; a time under the physical floor cannot be honest and is what makes a figure "suspect".
    """

    gpu_uuid: str
    bandwidth: float  # achievable bytes/s: the fastest streaming probe (copy, triad, read or write)
    fp32_flops: float  # achievable flop/s: an FMA-bound kernel
    fp16_tensor_flops: float  # flop/s from the datasheet rate per SM and clock (not measured: also physical)
    method: str  # how they were obtained, shown next to every roofline share
    measured_at: str
    bandwidth_physical: float  # bytes/s: memory clock x bus width x 2 (DDR)
    fp32_physical: float  # flop/s: SMs x FP32 lanes per SM x 2 (an FMA) x maximum SM clock


@dataclass(frozen=True)
class LaunchResources:
    launch: int
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared: int
    registers: int
    static_shared: int
    local_bytes: int  # per-thread local memory: stack and spills
    const_bytes: int
    max_threads_per_block: int  # what the kernel's resources allow
    blocks_per_sm: int
    occupancy: float  # theoretical: resident warps / maximum warps per SM


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    error: str  # the CUDA error name, or a short tag
    message: str  # one line for the model and the user
    case: str | None = None  # the validation case it happened in


@dataclass(frozen=True)
class CaseReport:
    label: str  # "n=1000 seed 2"
    passed: bool
    checked: int
    wrong: int
    unwritten: int
    worst_ratio: float  # the largest error over the allowed error
    problem: str | None = None  # a failure other than wrong values (input written, runs differ)


@dataclass(frozen=True)
class ValidationReport:
    verdict: Verdict
    summary: str  # one line
    cases: tuple[CaseReport, ...] = ()
    mismatches: tuple[Mismatch, ...] = ()
    patterns: tuple[str, ...] = ()
    fault: Fault | None = None
    resources: tuple[LaunchResources, ...] = ()
    printf_bytes: int = 0
    elapsed_s: float = 0.0  # validation proper, in the worker
    load_s: float = 0.0  # loading the module (cuModuleLoadData), in the worker
    phases_s: dict[str, float] = field(default_factory=dict)  # where elapsed_s went (engine/gpu/phases.py)
    ran_on: RanOn | None = None  # set by the pool that ran it (the worker does not know its node)
    not_run: int = 0  # cases left out once one failed (ValidationSettings.after_failure_max_bytes)

    @property
    def passed(self) -> bool:
        return self.verdict == "correct"


@dataclass(frozen=True)
class LatencyLevel:
    """One of two levels a program's samples fell into (engine/gpu/levels.py)."""

    median_us: float
    share: float  # of the kept samples
    sm_clock_mhz: float | None  # the median SM clock NVML read after its samples, if readable


@dataclass(frozen=True)
class Timing:
    label: str
    median_us: float
    q1_us: float
    q3_us: float
    min_us: float
    samples: int
    discarded: int  # samples dropped because the SM clock was throttled
    mode: Literal["events", "graph"]
    replays: int  # plan runs per sample (K in graph mode, 1 otherwise)
    sm_clock_mhz: float | None  # median SM clock over the kept samples (NVML), if readable
    state_check: str | None = None  # a failure of the re-check after timing (cached results...)
    resources: tuple[LaunchResources, ...] = ()
    fault: Fault | None = None
    placements: int = 1  # separate copies of the buffers the samples were taken on, in turn
    # Two levels when the samples split into two clearly separate groups (a bimodal program): the
    # median then depends on the mix, and both are shown. Empty for the usual single level.
    levels: tuple[LatencyLevel, ...] = ()
    # The spread within placements: IQR over median with each sample over its own placement's median
    # (engine/gpu/stop_rule.py; reported, not judged). Under rel_iqr when the placements' medians differ.
    placement_spread: float | None = None
    # Each placement's median over its own samples, in placement order: how far apart where the
    # buffers lay put the program (empty where unknown).
    placement_medians_us: tuple[float, ...] = ()

    @property
    def iqr_us(self) -> float:
        return self.q3_us - self.q1_us

    @property
    def rel_iqr(self) -> float:
        return self.iqr_us / self.median_us if self.median_us else float("inf")


@dataclass(frozen=True)
class ProfileReport:
    device: str
    size_label: str
    timings: tuple[Timing, ...]
    throttle_note: str | None = None
    busy_note: str | None = None  # another process was using the GPU
    elapsed_s: float = 0.0
    phases_s: dict[str, float] = field(default_factory=dict)  # where elapsed_s went (engine/gpu/phases.py)
    # The vendor library's program (engine/gpu/library.py), when one was asked for: what it is, and
    # why there is no timing labelled "library" when there is none.
    library_name: str | None = None
    library_note: str | None = None
    ran_on: RanOn | None = None  # set by the pool that ran it
    # Why there is no timing labelled "torch.compile" when it was asked for and there is none.
    torch_compile_note: str | None = None
    # After timing, inputs of some program had changed (engine/gpu/profile.py): the programs that
    # did it, each run alone again, and, when none did it alone, the one line that says so. The
    # other programs' figures were taken on changed inputs: the judge times them again without
    # the culprits, or each on its own.
    tampering: tuple[str, ...] = ()
    tampering_unexplained: str | None = None


# ---- requests --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProgramRef:
    """A compiled candidate as the worker needs it."""

    label: str
    cubin: bytes
    plan: BoundPlan
    # The harness's own baseline: trusted, so the anti-cheat re-check after timing is skipped for it.
    trusted: bool = False


@dataclass(frozen=True)
class ValidateRequest:
    task_folder: str
    program: ProgramRef


@dataclass(frozen=True)
class ProfileRequest:
    task_folder: str
    programs: tuple[ProgramRef, ...]  # the baseline and candidates, timed interleaved
    library: bool = False  # also time the task's vendor-library program, interleaved with them
    # Also time the module as torch.compile made it (an imported task, compiled before by a
    # TorchCompileRequest to this worker), interleaved with them.
    torch_compile: bool = False


@dataclass(frozen=True)
class TorchCompileRequest:
    """torch.compile an imported task's module at its timing size and keep it in the worker; answered
    with None when it is ready, else the one line saying why there is none."""

    task_folder: str


@dataclass(frozen=True)
class PeaksRequest:
    force: bool = False


@dataclass(frozen=True)
class ShutdownRequest:
    pass


@dataclass(frozen=True)
class WorkerHello:
    settings: Settings = field(default_factory=Settings)
    device_index: int = 0


@dataclass(frozen=True)
class Response:
    ok: bool
    result: object = None
    error: str | None = None  # a worker-side exception that is not a candidate's fault
    fatal: bool = False  # the worker is exiting after this (its context is poisoned)
