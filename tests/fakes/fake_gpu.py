"""A fake GPU runner for UI tests and benchmarks: scripted validation and profiling reports keyed by
markers in the candidates' kernel names, with no CUDA driver.

The real compiler still compiles every candidate (NVRTC needs no GPU); only the GPU worker is
replaced. A kernel named `vadd_wrong` validates as wrong with a mismatch table, `vadd_crash` as
crashed, `vadd_hang` as timed out; `vadd_us40` times at 40 us (the baseline at 100 us, any other
correct kernel at 50 us). Inject it with `fake_environment()` into `open_session(environment=...)`.

The judge's own checks after validation are reachable too: `vadd_unwritten` leaves its output as
poisoned as the validator made it (wrong, every element never written), `vadd_recheck` validates
but fails the re-check after timing (Timing.state_check: it cached results between runs), and a
time under the physical floor (`vadd_us1` against FAKE_PEAKS_SLOW's 18 us floor for vector_add)
is suspect.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

from cuda_llm.engine.compile.compiler_pool import CompilerPool
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.compare import Mismatch
from cuda_llm.engine.gpu.library import LIBRARY_LABEL, cupy_missing, library_name
from cuda_llm.engine.gpu.protocol import (
    CaseReport,
    DeviceInfo,
    Fault,
    LaunchResources,
    Peaks,
    ProfileReport,
    ProgramRef,
    Timing,
    ValidationReport,
)
from cuda_llm.engine.judge.judge_environment import JudgeEnvironment
from cuda_llm.engine.task.model import Task

BASELINE_US = 100.0
DEFAULT_US = 50.0
_US_MARKER = re.compile(r"_us(\d+)")
RECHECK_FAILURE = "the outputs of the timed runs differ from the reference: results kept between runs?"

FAKE_DEVICE = DeviceInfo(
    index=0,
    name="Fake H100",
    uuid="GPU-fake-0000",
    pci_bus_id="00000000:00:00.0",
    arch="sm_90",
    compute_capability=(9, 0),
    sm_count=132,
    warp_size=32,
    max_threads_per_block=1024,
    max_block_dims=(1024, 1024, 64),
    max_grid_dims=(2**31 - 1, 65535, 65535),
    shared_per_block=48 * 1024,
    shared_per_block_optin=227 * 1024,
    shared_per_sm=228 * 1024,
    registers_per_block=65536,
    registers_per_sm=65536,
    max_threads_per_sm=2048,
    max_blocks_per_sm=32,
    l2_bytes=50 * 1024 * 1024,
    memory_bytes=80 * 1024**3,
    sm_clock_mhz=1980,
    memory_clock_mhz=2619,
    memory_bus_bits=5120,
    driver_version="13.0",
    nvrtc_version="13.0",
)
# 3 TB/s achievable, 3.35 physical: vector_add's 403 MB floor is then 134 us (120 us physical), so
# the fake's 50-100 us timings show as "suspect" (under the physical floor) unless a test wants
# that; UI tests use FAKE_PEAKS_SLOW.
FAKE_PEAKS = Peaks("GPU-fake-0000", 3.0e12, 60e12, 900e12, "fake peaks", "2026-01-01T00:00:00Z", 3.35e12, 66.9e12)
# 20 TB/s: every fake timing is well under the roofline (20 us floor for vector_add).
FAKE_PEAKS_SLOW = Peaks(
    "GPU-fake-0000", 20.0e12, 400e12, 4000e12, "fake peaks", "2026-01-01T00:00:00Z", 22.0e12, 440e12
)


def kernel_names(program: ProgramRef) -> str:
    return " ".join(launch.kernel for launch in program.plan.launches)


@dataclass
class FakeGpu:
    """The GpuWorker interface (validate, profile, peaks, close) with scripted answers."""

    delay_s: float = 0.0  # time each job takes (benchmarks simulate a busy GPU with it)
    baseline_us: float = BASELINE_US
    peaks_value: Peaks = FAKE_PEAKS_SLOW
    validated: list[str] = field(default_factory=list)  # labels, in order
    profiled: list[tuple[str, ...]] = field(default_factory=list)
    info: DeviceInfo = FAKE_DEVICE
    restarts: int = 0
    library_us: float | None = None  # the vendor library's latency, for tasks with library.py

    async def start(self) -> DeviceInfo:
        return self.info

    async def validate(self, task: Task, program: ProgramRef) -> ValidationReport:
        self.validated.append(program.label)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        names = kernel_names(program)
        cases = [f"{c.label} seed {s}" for c in task.validation for s in range(c.seeds)]
        resources = tuple(_resources(i, launch.kernel) for i, launch in enumerate(program.plan.launches))
        if "crash" in names:
            fault = Fault("crashed", "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access", cases[0])
            return ValidationReport(
                "crashed", f"crashed in {cases[0]}: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access)", fault=fault
            )
        if "hang" in names:
            fault = Fault("timed_out", "LAUNCH_TIMEOUT", "the kernel ran past the 2 s launch limit", cases[0])
            return ValidationReport("timed_out", f"timed out in {cases[0]}: ran past the 2 s launch limit", fault=fault)
        if "unwritten" in names:
            return _unwritten_report(cases, resources)
        if "wrong" in names:
            return _wrong_report(cases, resources)
        reports = tuple(CaseReport(c, True, 1000, 0, 0, 0.1) for c in cases)
        return ValidationReport("correct", f"correct in all {len(cases)} cases", reports, resources=resources)

    async def profile(
        self, task: Task, programs: list[ProgramRef], library: bool = False, torch_compile: bool = False
    ) -> ProfileReport:
        # torch_compile: a hand-written task has no module to compile; the real worker's answer for
        # an imported one is tests/torchtask's to check on a GPU.
        self.profiled.append(tuple(p.label for p in programs))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        timings = tuple(self._timing(p.label, kernel_names(p)) for p in programs)
        if not library:
            return ProfileReport(self.info.name, task.timing.label, timings)
        # As the real worker answers: the task's library.py names the program; it is timed only where
        # the fake was given a library latency, else the reason is the real one (no CuPy in CI).
        name, note = library_name(task), None
        if name is None:
            note = f"task {task.name!r} has no vendor-library reference (no library.py)"
        elif self.library_us is not None:
            timings += (self._timing(LIBRARY_LABEL, f"_us{self.library_us:g}"),)
        else:
            note = cupy_missing() or "the fake GPU runs no library"
        return ProfileReport(self.info.name, task.timing.label, timings, library_name=name, library_note=note)

    def _timing(self, label: str, kernels: str) -> Timing:
        if label == "baseline":
            median = self.baseline_us
        else:
            found = _US_MARKER.search(kernels)
            median = float(found.group(1)) if found else DEFAULT_US
        spread = median * 0.01
        # What the worker's re-check after timing reports when the outputs of the timed runs no
        # longer match the reference (a kernel that caches its result between launches).
        state_check = RECHECK_FAILURE if label != "baseline" and "recheck" in kernels else None
        return Timing(
            label=label,
            median_us=median,
            q1_us=median - spread,
            q3_us=median + spread,
            min_us=median - 2 * spread,
            samples=50,
            discarded=0,
            mode="events",
            replays=1,
            sm_clock_mhz=1980.0,
            state_check=state_check,
        )

    async def peaks(self, force: bool = False) -> Peaks:
        return self.peaks_value

    async def close(self) -> None:
        return None


def _resources(i: int, kernel: str) -> LaunchResources:
    return LaunchResources(i, kernel, (1024, 1, 1), (256, 1, 1), 0, 16, 0, 0, 0, 1024, 8, 1.0)


def _wrong_report(cases: list[str], resources: tuple[LaunchResources, ...]) -> ValidationReport:
    """Wrong in one case: the last three elements checked, two wrong values and one never written."""
    case = next((c for c in cases if c.startswith("n=1000 ")), cases[len(cases) // 2])
    nan = float("nan")
    mismatches = (
        Mismatch("c", (997,), 1.5, 0.0, 1.5, 1.0, case),
        Mismatch("c", (998,), 2.5, 0.0, 2.5, 1.0, case),
        Mismatch("c", (999,), 3.5, nan, nan, nan, case),
    )
    reports = tuple(
        CaseReport(c, c != case, 1000, 3 if c == case else 0, 1 if c == case else 0, 1e6 if c == case else 0.1)
        for c in cases
    )
    return ValidationReport(
        "wrong",
        f"wrong in 1 of {len(cases)} cases; first: {case}: 3 elements wrong (1 never written)",
        reports,
        mismatches,
        ("the last 3 elements are wrong",),
        resources=resources,
    )


def _unwritten_report(cases: list[str], resources: tuple[LaunchResources, ...]) -> ValidationReport:
    """A kernel that wrote nothing: in every case each element still holds the poison (NaN for floats)."""
    n = 1000
    case = next((c for c in cases if c.startswith(f"n={n} ")), cases[0])
    nan = float("nan")
    mismatches = tuple(Mismatch("c", (i,), float(i), nan, nan, nan, case) for i in range(3))
    reports = tuple(CaseReport(c, False, n, n, n, float("inf")) for c in cases)
    return ValidationReport(
        "wrong",
        f"wrong in {len(cases)} of {len(cases)} cases; first: {case}: {n} elements wrong ({n} never written)",
        reports,
        mismatches,
        ("output c was never written",),
        resources=resources,
    )


def fake_environment(gpu: FakeGpu | None = None, workers: int = 1) -> JudgeEnvironment:
    """A judge environment with the real compiler and the fake GPU (close it with `await env.close()`)."""
    gpu = gpu or FakeGpu()
    compiler = CompilerPool(Settings().compile, workers=workers)
    return JudgeEnvironment(compiler, gpu, gpu.info, gpu.peaks_value, "sm_90", None)  # type: ignore[arg-type]


@dataclass
class OneJobAtATime(FakeGpu):
    """A fake GPU that serves one request at a time, as the real worker process does: what a GPU's
    actor on a cluster holds (a second job sent to it waits on its node)."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def validate(self, task: Task, program: ProgramRef) -> ValidationReport:
        async with self.lock:
            return await super().validate(task, program)

    async def profile(
        self, task: Task, programs: list[ProgramRef], library: bool = False, torch_compile: bool = False
    ) -> ProfileReport:
        async with self.lock:
            return await super().profile(task, programs, library, torch_compile)


@dataclass(frozen=True)
class FakeGpuFactory:
    """Makes a FakeGpu where the GPU worker would start: pass it as `worker_factory` to the cluster's
    actors (engine/cluster) and each actor judges with a fake on its node. Each fake gets a uuid of
    its own (the node's id and the actor's process), as real GPUs have."""

    delay_s: float = 0.0
    baseline_us: float = BASELINE_US
    name: str = FAKE_DEVICE.name

    def __call__(self, device_index: int, settings: Settings, log_dir: object = None) -> OneJobAtATime:
        import dataclasses
        import os

        import ray

        node = ray.get_runtime_context().get_node_id()[:12]
        uuid = f"GPU-fake-{node}-{os.getpid()}"
        info = dataclasses.replace(FAKE_DEVICE, index=device_index, name=self.name, uuid=uuid)
        return OneJobAtATime(delay_s=self.delay_s, baseline_us=self.baseline_us, info=info)


@dataclass
class FakeGpuPool(FakeGpu):
    """A FakeGpu standing where the real GpuPool is built (engine/judge/judge_environment.py
    open_local_environment): a session opened without a test's environment then gets what a real one on
    this machine's GPU gets (its compilers, its counters reader). Patch it in for GpuPool, with
    gpu_unavailable_reason answering None."""

    def __init__(self, indices: object = (0,), settings: object = None, **fields: object) -> None:
        super().__init__(**fields)  # type: ignore[arg-type]  # FakeGpu's own fields

    async def start(self) -> list[DeviceInfo]:  # type: ignore[override]  # the pool's: every GPU's info
        return [self.info]
