"""Set up what judging needs: the compiler pool and, when there is a usable GPU, its worker and peaks.

With no CUDA driver (CI, a laptop) the engine runs compile-only for `--arch` (default sm_90) and
says so in one line.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from cuda_llm.engine.compile import nvrtc_library
from cuda_llm.engine.compile.compiler_pool import CompilerPool
from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.client import GpuUnavailable
from cuda_llm.engine.gpu.gpu_pool import GpuPool, parse_gpu_list, visible_gpu_count
from cuda_llm.engine.gpu.protocol import DeviceInfo, Peaks, is_compile_only
from cuda_llm.engine.judge.judge import Judge
from cuda_llm.engine.judge.pools import Compilers, Gpus
from cuda_llm.engine.task.model import Task

DEFAULT_ARCH = "sm_90"  # what CI compiles for; the H100/H200 the project targets

# Where a line meant for the user goes while an environment opens, before a session's events flow
# (what a Ray cluster's start waits for): the CLI's stderr, the TUI's notifications.
Progress = Callable[[str], None]


@dataclass
class JudgeEnvironment:
    compiler: Compilers  # this machine's CompilerPool, or a cluster's (engine/judge/pools.py)
    gpu: Gpus | None  # this machine's GpuPool, or a cluster's (tests pass a fake with the same methods)
    device: DeviceInfo | None
    peaks: Peaks | None
    arch: str
    notice: str | None  # "no CUDA driver: compile-only", shown once
    # Reads hardware counters on this machine's GPU (engine/counters); None on a cluster or without one.
    counters: Any = None

    def facts(self) -> dict[str, Any]:
        """What the figures judged here depend on, recorded with each session (and carried by `export`
        and bench.json) so that a result can be reproduced: versions, the host, the GPU and its clocks,
        the measured ceilings."""
        import platform

        from cuda_llm import __version__

        facts: dict[str, Any] = {
            "cuda_llm": __version__,
            "python": platform.python_version(),
            "host": {
                "os": f"{platform.system()} {platform.release()}",
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
            },
            "packages": {name: _version(name) for name in FACT_PACKAGES},
            "compile_only": is_compile_only(self.device),
            "arch": self.arch,
            "nvrtc": self.device.nvrtc_version if self.device else nvrtc_library.version_text(),
            "driver": self.device.driver_version if self.device else None,
            "gpu": None,
            "gpus_used": getattr(self.gpu, "size", 1) if self.gpu is not None else 0,
            "peaks": None,
        }
        d = self.device
        if d is not None:
            facts["gpu"] = {
                "name": d.name,
                "uuid": d.uuid,
                "compute_capability": f"{d.compute_capability[0]}.{d.compute_capability[1]}",
                "sm_count": d.sm_count,
                "memory_bytes": d.memory_bytes,
                "l2_bytes": d.l2_bytes,
                "max_sm_clock_mhz": d.sm_clock_mhz,
                "memory_clock_mhz": d.memory_clock_mhz,
                "memory_bus_bits": d.memory_bus_bits,
            }
        if self.peaks is not None:
            facts["peaks"] = dataclasses.asdict(self.peaks)
        return facts

    def judge(self, task: Task, settings: Settings) -> Judge:
        return Judge(task, self.compiler, self.gpu, self.arch, settings, self.device, self.peaks, self.counters)

    async def close(self) -> None:
        if self.gpu is not None:
            await self.gpu.close()
        self.compiler.close()


# The distributions whose versions a recorded figure depends on (the compiler, the driver bindings,
# the numerics of the reference, the vendor library).
FACT_PACKAGES = ("cuda-bindings", "nvidia-cuda-nvrtc", "nvidia-ml-py", "numpy", "cupy-cuda13x", "cupy")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def gpu_unavailable_reason() -> str | None:
    """None if a CUDA driver and device are usable, else why not (in a few words)."""
    try:
        from cuda_llm.engine.gpu.driver import driver_available
    except Exception as exc:  # cuda-bindings missing or broken
        return f"cuda-bindings unusable ({exc})"
    return driver_available()


async def sandbox_warning(compiler: Compilers) -> str | None:
    """One line when the compiler runs unconfined (engine/compile/sandbox.py), else None."""
    confined, detail = await compiler.sandbox()
    if confined:
        return None
    return (
        f"WARNING: the compiler is not sandboxed ({detail}); only the include policy keeps a reply "
        "from making it read the host's files"
    )


# Warm compiler processes per GPU judged on: a GPU validates a correct candidate in about the time
# NVRTC takes to compile one (20-60 ms each), and a round's candidates arrive together, so with fewer
# compilers than this the GPUs of a multi-GPU host wait for the compiles (a round of 8 on 4 GPUs
# compiled in two waves with 4).
COMPILERS_PER_GPU = 4


def compile_workers(settings: Settings, gpus: int) -> int:
    """Compiler processes for a session judging on `gpus` GPUs of this host: the setting's, or more
    with more GPUs, never more than the host's cores."""
    wanted = max(settings.compile.max_workers, COMPILERS_PER_GPU * gpus)
    return max(1, min(wanted, os.cpu_count() or 1))


async def open_local_environment(
    settings: Settings, arch: str | None, compile_only: bool, gpus: str | int | None, compilers: int | None = None
) -> JudgeEnvironment:
    """`compilers`: how many compiler processes, where the caller knows how many compiles it needs (one
    candidate judged); None: compile_workers, for rounds."""
    reason = "compile-only requested" if compile_only else gpu_unavailable_reason()
    if reason is None:
        indices = parse_gpu_list(str(gpus) if gpus is not None else None, visible_gpu_count())
        pool = GpuPool(indices, settings)
        try:
            devices = await pool.start()
            peaks = await pool.peaks()
        except GpuUnavailable as exc:
            await pool.close()
            reason = str(exc)
        else:
            notices = []
            if arch and arch != devices[0].arch:
                notices.append(f"--arch {arch} ignored: compiling for the GPU's own {devices[0].arch}")
            if len({d.arch for d in devices}) > 1:
                notices.append("the GPUs differ in architecture; use --gpus to pick one kind")
            compiler = CompilerPool(settings.compile, workers=compilers or compile_workers(settings, len(devices)))
            from cuda_llm.engine.counters.runner import NcuCounters  # ncu runs only with a local GPU

            counters = NcuCounters(settings.counters, settings.validation)
            joined = "; ".join(notices) or None
            return JudgeEnvironment(compiler, pool, devices[0], peaks, devices[0].arch, joined, counters)
    if isinstance(gpus, str) and not compile_only:
        # GPUs a person named (text from --gpus; a caller's default is an int): compiling only
        # instead would quietly judge nothing of what was asked.
        raise UserError(f"--gpus {gpus} asks for a GPU, but {reason}: drop it, or add --compile-only to compile only")
    chosen = arch or DEFAULT_ARCH
    notice = None if compile_only else f"{reason}: compile-only for {chosen}"
    return JudgeEnvironment(CompilerPool(settings.compile, workers=compilers), None, None, None, chosen, notice)
