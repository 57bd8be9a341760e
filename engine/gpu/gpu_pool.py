"""Several GPUs on one host: one worker per GPU. Validations go to whichever GPU is free; a round's
timing is split across the GPUs, each timing the baseline (and the current best) next to its share
of the candidates, so every candidate is compared with programs timed on the same GPU."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections.abc import Sequence

from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.client import GpuUnavailable, GpuWorker, ProfileFailure
from cuda_llm.engine.gpu.protocol import DeviceInfo, Peaks, ProfileReport, ProgramRef, RanOn, ValidationReport
from cuda_llm.engine.task.model import Task


def visible_gpu_count() -> int:
    """How many CUDA devices the driver shows (0 without a driver)."""
    try:
        from cuda.bindings import driver as cu

        if cu.cuInit(0)[0] != cu.CUresult.CUDA_SUCCESS:
            return 0
        err, count = cu.cuDeviceGetCount()
        return int(count) if err == cu.CUresult.CUDA_SUCCESS else 0
    except Exception:
        return 0


def parse_gpu_list(text: str | None, available: int) -> list[int]:
    """`--gpus 0,1` (or None for all) into device indices, checked against what exists."""
    if not text or text == "all":
        return list(range(available))
    try:
        indices = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UserError(f"--gpus takes device numbers like 0,1 (got {text!r})") from None
    bad = [i for i in indices if not 0 <= i < available]
    if bad or not indices or len(set(indices)) != len(indices):
        raise UserError(f"--gpus {text}: this machine has GPUs 0..{available - 1}")
    return indices


class GpuPool:
    def __init__(self, indices: Sequence[int], settings: Settings) -> None:
        self.workers = [GpuWorker(i, settings) for i in indices]
        self.devices: list[DeviceInfo] = []
        self._idle: asyncio.Queue[GpuWorker] | None = None

    @property
    def size(self) -> int:
        return len(self.workers)

    @property
    def device(self) -> DeviceInfo:
        return self.devices[0]

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self.workers)

    async def start(self) -> list[DeviceInfo]:
        results = await asyncio.gather(*(w.start() for w in self.workers), return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            await self.close()
            raise GpuUnavailable(str(failed[0]))
        self.devices = list(results)  # type: ignore[arg-type]  # failures were raised above
        self._idle = asyncio.Queue()
        for w in self.workers:
            self._idle.put_nowait(w)
        return self.devices

    def describe(self) -> str:
        """'NVIDIA H200' or '2 x NVIDIA H200' (or the list, when the GPUs differ)."""
        names = [d.name for d in self.devices]
        if len(set(names)) == 1:
            return names[0] if len(names) == 1 else f"{len(names)} x {names[0]}"
        return " + ".join(names)

    @staticmethod
    def ran_on(worker: GpuWorker) -> RanOn | None:
        info = worker.info
        return RanOn(socket.gethostname(), worker.device_index, info.name, info.uuid) if info else None

    async def validate(self, task: Task, program: ProgramRef) -> ValidationReport:
        assert self._idle is not None, "start() the pool first"
        worker = await self._idle.get()
        try:
            report = await worker.validate(task, program)
        finally:
            self._idle.put_nowait(worker)
        return dataclasses.replace(report, ran_on=self.ran_on(worker))

    async def profile(
        self,
        task: Task,
        programs: list[ProgramRef],
        worker: int = 0,
        library: bool = False,
        torch_compile: bool = False,
    ) -> ProfileReport | ProfileFailure:
        """Time on one given GPU (the Judge spreads a round's groups over `range(size)`); with
        `library`, the task's vendor-library program too; with `torch_compile`, the module as
        torch_compile() compiled it on that GPU."""
        report = await self.workers[worker].profile(task, programs, library, torch_compile)
        if isinstance(report, ProfileReport):
            report = dataclasses.replace(report, ran_on=self.ran_on(self.workers[worker]))
        return report

    async def torch_compile(self, task: Task, worker: int = 0) -> str | None:
        """torch.compile an imported task's module on one GPU's worker (GpuWorker.torch_compile)."""
        return await self.workers[worker].torch_compile(task)

    async def peaks(self, force: bool = False) -> Peaks:
        """The first GPU's ceilings (measured for every GPU, so each one's cache is warm)."""
        measured = await asyncio.gather(*(w.peaks(force) for w in self.workers))
        return measured[0]

    async def close(self) -> None:
        await asyncio.gather(*(w.close() for w in self.workers), return_exceptions=True)
