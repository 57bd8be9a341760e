"""Compiling off the event loop: warm compiler processes, each compile under a time limit.

    async with CompilerPool(settings) as pool:
        result = await pool.compile(source, "sm_90")

A compile that runs past `CompileSettings.timeout_s` (template bombs hang NVRTC) kills its
process and returns a timed-out CompileResult; a fresh process takes its place, so the next
compile works. Sources that are too large, hold NUL bytes, are not UTF-8 or break the include
policy are refused with a FormatError before any process is involved.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType

from cuda_llm.engine.compile.compiler_process import CompilerProcess
from cuda_llm.engine.compile.result import CompileResult
from cuda_llm.engine.compile.source import CheckedSource, check_source
from cuda_llm.engine.core.settings import CompileSettings


def _spawn_context() -> multiprocessing.context.SpawnContext:
    # "spawn", never fork: the engine has threads and an event loop, which a forked child would
    # inherit in whatever state they were in.
    return multiprocessing.get_context("spawn")


class PoolClosedError(RuntimeError):
    pass


class CompilerPool:
    """N warm compiler processes (N = CompileSettings.max_workers); compiles queue for a free one."""

    def __init__(self, settings: CompileSettings | None = None, *, workers: int | None = None):
        self.settings = settings or CompileSettings()
        self.size = max(1, workers or self.settings.max_workers)
        self._ctx = _spawn_context()
        self._idle: asyncio.Queue[CompilerProcess | None] | None = None
        self._processes: set[CompilerProcess] = set()
        # One thread per process at most: each blocks on its process's pipe.
        self._threads = ThreadPoolExecutor(self.size, thread_name_prefix="cuda-llm-compile")
        self._closed = False
        self.processes_started = 0  # how many children this pool has spawned (tests, `doctor`)

    # -- lifecycle --------------------------------------------------------------------------------

    def _spawn(self) -> CompilerProcess:
        # On the event loop's thread, which lives as long as the pool (see CompilerProcess).
        process = CompilerProcess(self._ctx, self.settings)
        self._processes.add(process)
        self.processes_started += 1
        return process

    def _ensure_started(self) -> asyncio.Queue[CompilerProcess | None]:
        if self._closed:
            raise PoolClosedError("the compiler pool is closed")
        if self._idle is None:
            self._idle = asyncio.Queue()
            for _ in range(self.size):
                self._idle.put_nowait(self._spawn())
        return self._idle

    async def _wait_ready(self, process: CompilerProcess) -> None:
        if process.info is not None:
            return  # started long ago: no trip through a thread (a round's compiles all ask at once)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._threads, process.wait_ready, self.settings.start_timeout_s)

    async def start(self) -> None:
        """Start every process and wait until each has loaded NVRTC (and the headers)."""
        self._ensure_started()
        await asyncio.gather(*(self._wait_ready(p) for p in list(self._processes)))

    async def sandbox(self) -> tuple[bool, str]:
        """Whether the compiler processes are shut in (engine/compile/sandbox.py), and what they may
        read or why they are not; starts the pool if it was not started."""
        await self.start()
        statuses = {p.sandbox for p in self._processes if p.sandbox is not None}
        if not statuses:
            return False, "no compiler process has started"
        confined = [s for s in statuses if s[0]]
        return confined[0] if len(confined) == len(statuses) else next(s for s in statuses if not s[0])

    def close(self) -> None:
        """Stop every process. Compiles waiting for a free process raise PoolClosedError."""
        if self._closed:
            return
        self._closed = True
        for process in list(self._processes):
            process.close()
        self._processes.clear()
        if self._idle is not None:
            self._idle.put_nowait(None)  # wakes a waiter, which passes it on to the next one
        self._threads.shutdown(wait=False, cancel_futures=True)

    async def __aenter__(self) -> CompilerPool:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- compiling --------------------------------------------------------------------------------

    def _release(self, process: CompilerProcess) -> None:
        if self._closed:
            process.close()
            return
        assert self._idle is not None
        if not process.healthy:
            process.kill()
            self._processes.discard(process)
            process = self._spawn()
        self._idle.put_nowait(process)

    async def compile(self, source: str | bytes | CheckedSource, arch: str) -> CompileResult:
        """Compile `source` for `arch` ("sm_90") in a warm process, under the time limit. A source
        the caller has checked already (a CheckedSource) is not checked again here; the compiler
        process checks every source once more whatever it is given.

        Raises FormatError (the source breaks the contract; nothing was started),
        CompilerUnavailableError (NVRTC cannot be loaded) or PoolClosedError."""
        if isinstance(source, CheckedSource):
            checked = source
        else:
            checked = await asyncio.to_thread(check_source, source, self.settings)
        idle = self._ensure_started()
        process = await idle.get()
        if process is None:
            idle.put_nowait(None)
            raise PoolClosedError("the compiler pool is closed")
        loop = asyncio.get_running_loop()
        try:
            await self._wait_ready(process)
            return await loop.run_in_executor(
                self._threads, process.compile, checked.text, arch, self.settings.timeout_s
            )
        except BaseException:
            # Cancelled (the user stopped the round) or failed to start: the process may still
            # be compiling, so it is killed rather than handed to the next caller.
            process.healthy = False
            raise
        finally:
            self._release(process)


def compile_once(source: str | bytes, arch: str, settings: CompileSettings | None = None) -> CompileResult:
    """Compile in one fresh process, under the same time limit: for the CLI, which compiles once
    and exits. Raises what CompilerPool.compile raises."""
    settings = settings or CompileSettings()
    checked = check_source(source, settings)
    process = CompilerProcess(_spawn_context(), settings)
    try:
        process.wait_ready(settings.start_timeout_s)
        return process.compile(checked.text, arch, settings.timeout_s)
    finally:
        process.close()
