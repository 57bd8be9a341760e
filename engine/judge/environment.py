"""Set up what judging needs: the compiler pool and, when there is a usable GPU, its worker and peaks.

With no CUDA driver (CI, a laptop) the engine runs compile-only for `--arch` (default sm_90) and
says so in one line.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.compile.pool import CompilerPool
from engine.gpu.client import GpuUnavailable, GpuWorker
from engine.gpu.protocol import DeviceInfo, Peaks
from engine.judge.judge import Judge
from engine.settings import Settings
from engine.task.model import Task

DEFAULT_ARCH = "sm_90"  # what CI compiles for; the H100/H200 the project targets


@dataclass
class JudgeEnvironment:
    compiler: CompilerPool
    gpu: GpuWorker | None
    device: DeviceInfo | None
    peaks: Peaks | None
    arch: str
    notice: str | None  # "no CUDA driver: compile-only", shown once

    def judge(self, task: Task, settings: Settings) -> Judge:
        return Judge(task, self.compiler, self.gpu, self.arch, settings, self.device, self.peaks)

    async def close(self) -> None:
        if self.gpu is not None:
            await self.gpu.close()
        self.compiler.close()


def gpu_unavailable_reason() -> str | None:
    """None if a CUDA driver and device are usable, else why not (in a few words)."""
    try:
        from engine.gpu.driver import driver_available
    except Exception as exc:  # cuda-bindings missing or broken
        return f"cuda-bindings unusable ({exc})"
    return driver_available()


async def open_environment(
    settings: Settings, arch: str | None = None, compile_only: bool = False, gpu_index: int = 0
) -> JudgeEnvironment:
    compiler = CompilerPool(settings.compile)
    reason = "compile-only requested" if compile_only else gpu_unavailable_reason()
    if reason is None:
        worker = GpuWorker(gpu_index, settings)
        try:
            device = await worker.start()
            peaks = await worker.peaks()
        except GpuUnavailable as exc:
            await worker.close()
            reason = str(exc)
        else:
            notice = None
            if arch and arch != device.arch:
                notice = f"--arch {arch} ignored: compiling for the GPU's own {device.arch}"
            return JudgeEnvironment(compiler, worker, device, peaks, device.arch, notice)
    chosen = arch or DEFAULT_ARCH
    notice = None if compile_only else f"{reason}: compile-only for {chosen}"
    return JudgeEnvironment(compiler, None, None, None, chosen, notice)
