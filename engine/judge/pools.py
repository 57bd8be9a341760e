"""What the judge needs of a compiler pool and of a GPU pool: the seam where this machine's pools
(engine/compile/compiler_pool.py, engine/gpu/gpu_pool.py) and a Ray cluster's
(engine/cluster/compiler.py, cluster_pool.py) stand in for each other. Both kinds satisfy these
structurally; mypy checks it where a cluster's pools are passed to the judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from cuda_llm.engine.compile.result import CompileResult
    from cuda_llm.engine.compile.source import CheckedSource
    from cuda_llm.engine.gpu.client import ProfileFailure
    from cuda_llm.engine.gpu.protocol import Peaks, ProfileReport, ProgramRef, ValidationReport
    from cuda_llm.engine.task.model import Task


class Compilers(Protocol):
    """Compiles a candidate for an architecture; says whether its compilers are sandboxed."""

    async def compile(self, source: str | bytes | CheckedSource, arch: str) -> CompileResult: ...

    async def sandbox(self) -> tuple[bool, str]: ...

    def close(self) -> None: ...


class Gpus(Protocol):
    """Validates and times programs on one or more GPUs (`worker`: which one times a group)."""

    async def validate(self, task: Task, program: ProgramRef) -> ValidationReport: ...

    async def profile(
        self, task: Task, programs: list[ProgramRef], worker: int = 0, library: bool = False
    ) -> ProfileReport | ProfileFailure: ...

    async def peaks(self, force: bool = False) -> Peaks: ...

    async def close(self) -> None: ...


@runtime_checkable
class LocalGpus(Gpus, Protocol):
    """This machine's own GPUs, which also compile and time an imported task's module with
    torch.compile (a cluster's do not: the judge says so instead)."""

    async def profile(
        self,
        task: Task,
        programs: list[ProgramRef],
        worker: int = 0,
        library: bool = False,
        torch_compile: bool = False,
    ) -> ProfileReport | ProfileFailure: ...

    async def torch_compile(self, task: Task, worker: int = 0) -> str | None: ...
