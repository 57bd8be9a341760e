"""Compiling where it is cheapest: on the driver's own warm NVRTC processes first, and the compiles a
round starts beyond them on compiler actors on the cluster's CPUs.

A compile takes 30-100 ms and a GPU 0.1-1 s to judge what it produces, so a few processes keep a
few GPUs busy; a cluster of many GPUs, or several sessions at once (`bench --cluster`), outruns
them, and the compiles that would queue go to the cluster instead. Either way the source is checked
against the include policy here first, and checked again and compiled inside a sandboxed process
(engine/compile/sandbox.py); what comes back is the cubin and the compile report, never a file of
the machine it ran on.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
from typing import Any

import cuda_llm
from cuda_llm.engine.cluster.connection import connected, ray_result
from cuda_llm.engine.compile.compiler_pool import CompilerPool
from cuda_llm.engine.compile.result import CompileResult
from cuda_llm.engine.compile.source import CheckedSource, check_source
from cuda_llm.engine.core.settings import Settings


class ClusterCompiler:
    """The CompilerPool interface (compile, sandbox, start, close) with an overflow to the cluster."""

    def __init__(self, local: CompilerPool) -> None:
        self.local = local
        self.settings = local.settings
        self.size = local.size
        self.remote_compiles = 0  # how many compiles ran on the cluster
        self.refused: list[str] = []  # compiler actors that could not start, one line each
        self._local_busy = 0
        self._handles: list[Any] = []
        self._ready: list[Any] = []
        self._busy: dict[int, int] = {}
        self._starting: asyncio.Task[None] | None = None

    # ---- remote compilers ------------------------------------------------------------------------
    def start_remote(self, count: int, settings: Settings, start_timeout_s: float) -> None:
        """Start `count` compiler actors in the background; each takes compiles once it is warm."""
        if count > 0 and self._starting is None:
            self._starting = asyncio.get_running_loop().create_task(
                self._start_remote(count, settings, start_timeout_s)
            )

    async def _start_remote(self, count: int, settings: Settings, start_timeout_s: float) -> None:
        import ray

        from cuda_llm.engine.cluster.actors import CompilerActor

        # SPREAD: one per node where it can, so no node's CPUs are taken by compiles alone.
        cls = ray.remote(CompilerActor).options(num_cpus=1, scheduling_strategy="SPREAD", max_restarts=0)
        blob = pickle.dumps(settings)
        self._handles = [cls.remote(cuda_llm.__version__, blob) for _ in range(count)]

        async def start(handle: Any) -> None:
            from ray.exceptions import RayError

            try:
                problem = await ray_result(handle.start.remote(), start_timeout_s)
            except (RayError, TimeoutError) as exc:
                # Not placed in time (no free CPU in the cluster) or failed: the driver compiles.
                problem = f"a compiler actor did not start ({type(exc).__name__})"
            if problem is None:
                self._busy[id(handle)] = 0
                self._ready.append(handle)
            else:
                self.refused.append(problem)

        await asyncio.gather(*(start(h) for h in self._handles))

    async def wait_remote(self) -> int:
        """Wait until every compiler actor has started or failed to; how many are ready."""
        if self._starting is not None:
            await self._starting
        return len(self._ready)

    # ---- the CompilerPool interface -----------------------------------------------------------------
    async def start(self) -> None:
        await self.local.start()

    async def sandbox(self) -> tuple[bool, str]:
        return await self.local.sandbox()

    async def compile(self, source: str | bytes | CheckedSource, arch: str) -> CompileResult:
        if isinstance(source, CheckedSource):
            checked = source
        else:
            checked = await asyncio.to_thread(check_source, source, self.settings)
        if self._local_busy >= self.local.size and self._ready:
            result = await self._compile_remote(checked, arch)
            if result is not None:
                return result
        self._local_busy += 1
        try:
            return await self.local.compile(checked, arch)
        finally:
            self._local_busy -= 1

    async def _compile_remote(self, checked: CheckedSource, arch: str) -> CompileResult | None:
        """A compile on the least busy compiler actor; None if that actor is lost (then the driver
        compiles it)."""
        from ray.exceptions import RayActorError

        handle = min(self._ready, key=lambda h: self._busy[id(h)])
        self._busy[id(handle)] += 1
        try:
            result = await ray_result(handle.compile.remote(checked, arch))
        except RayActorError:
            if handle in self._ready:
                self._ready.remove(handle)
            return None
        finally:
            self._busy[id(handle)] -= 1
        self.remote_compiles += 1
        return result

    def close(self) -> None:
        import ray
        from ray.exceptions import RayError

        if self._starting is not None:
            self._starting.cancel()
        for handle in self._handles if connected() else ():
            # Killing the actor ends its compiler process too (a compiler child dies with its parent).
            # Without the connection there is none to kill: the cluster ends a lost client's actors.
            with contextlib.suppress(RayError, ValueError, ConnectionError):
                ray.kill(handle, no_restart=True)
        self._ready.clear()
        self.local.close()
