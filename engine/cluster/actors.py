"""The Ray actors: one per GPU, wrapping that GPU's worker process, and compiler actors on the
cluster's CPUs.

A GpuActor owns today's GPU worker (engine/gpu/client.py GpuWorker): a sticky CUDA error or a hung
kernel kills and restarts that process, as on one machine, and the actor (and its node's other GPUs)
carry on. Requests name their task by a ShippedTask: the actor fetches the task folder from the object
store the first time, unpacks it into its node's cache and loads it from there.

This module's code travels to the nodes by value (connection.py registers it with cloudpickle) and
imports cuda-llm only inside its methods, and the actors take their settings as pickled bytes: a node
where cuda-llm is missing, or installed in another version, still runs the actor far enough to say so
in one line, instead of failing somewhere inside Ray.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import pickle
import socket
from typing import Any

import ray


def _ray_logs_dir() -> Any:
    """This node's Ray log folder (the session's `logs`), or None where Ray does not say."""
    from pathlib import Path

    try:
        from ray._private.worker import global_worker  # no public API names it

        path = global_worker.node.get_logs_dir_path()
    except Exception:
        return None
    return Path(path) if path else None


def _first_line(exc: BaseException) -> str:
    # engine/core/errors.py describe's line, kept here: this module must load on a node where
    # cuda-llm itself cannot (that is what the line reports).
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


class _OnNode:
    """What every actor knows about where it runs, and whether cuda-llm there can serve it."""

    def __init__(self, expected_version: str, settings_blob: bytes) -> None:
        self.node = socket.gethostname()
        self.node_id = ray.get_runtime_context().get_node_id()
        self.node_ip = ray.util.get_node_ip_address()
        self.problem: str | None = None
        self.settings: Any = None
        try:
            import cuda_llm
        except ImportError as exc:
            self.problem = (
                f"cuda-llm is not installed there ({exc}); install cuda-llm {expected_version} there "
                'from its checkout, with the cluster extra (pip install ".[cluster]")'
            )
            return
        version = getattr(cuda_llm, "__version__", "?")
        if version != expected_version:
            self.problem = f"it has cuda-llm {version}, this one is {expected_version}: install the same version"
            return
        try:
            self.settings = pickle.loads(settings_blob)
        except Exception as exc:  # a package cuda-llm needs is missing or broken there
            self.problem = f"cuda-llm cannot load there ({_first_line(exc)})"

    def refusal(self, problem: str) -> str:
        return f"node {self.node} ({self.node_ip}): {problem}"


class GpuActor(_OnNode):
    """One GPU of the cluster (Ray gives the actor `num_gpus=1` and shows it that GPU alone)."""

    def __init__(self, expected_version: str, settings_blob: bytes, factory_blob: bytes | None) -> None:
        super().__init__(expected_version, settings_blob)
        gpu_ids = ray.get_gpu_ids()
        first = str(gpu_ids[0]) if gpu_ids else "0"
        self.gpu_index = int(first) if first.isdigit() else 0
        self.factory: Any = None
        if self.problem is None and factory_blob is not None:
            try:
                self.factory = pickle.loads(factory_blob)
            except Exception as exc:
                self.problem = f"the GPU worker cannot load there ({_first_line(exc)})"
        self.worker: Any = None
        self.info: Any = None
        self.tasks: dict[str, Any] = {}
        self.task_locks: dict[str, asyncio.Lock] = {}
        self.start_lock = asyncio.Lock()

    # ---- the worker ------------------------------------------------------------------------------
    def _make_worker(self) -> Any:
        from cuda_llm.engine.core.paths import user_cache_dir
        from cuda_llm.engine.gpu.client import GpuWorker

        # Device 0: Ray's CUDA_VISIBLE_DEVICES shows this actor (and the worker it spawns) its GPU
        # alone. The worker's logs get a folder per GPU, as several actors share a node: in the node's
        # Ray log folder, where `ray logs` finds them, else in the cache under the node's id (two
        # nodes on one host, or one home shared over NFS, must not share a file).
        logs = _ray_logs_dir()
        if logs is not None:
            log_dir = logs / f"cuda-llm-gpu{self.gpu_index}"
        else:
            log_dir = user_cache_dir() / "workers" / f"ray-{self.node_id[:8]}-gpu{self.gpu_index}"
        make = self.factory or GpuWorker
        return make(0, self.settings, log_dir)

    def _ran_on(self) -> Any:
        from cuda_llm.engine.gpu.protocol import RanOn

        return RanOn(self.node, self.gpu_index, self.info.name, self.info.uuid, self.node_id)

    async def start(self) -> tuple[Any, Any] | str:
        """(DeviceInfo, RanOn) once the GPU's worker runs; else the one line that says why it cannot."""
        if self.problem is not None:
            return self.refusal(self.problem)
        async with self.start_lock:
            if self.info is None:
                worker = None
                try:
                    worker = self._make_worker()
                    self.info = await worker.start()
                except Exception as exc:
                    self.problem = _first_line(exc)
                    if worker is not None:
                        with contextlib.suppress(Exception):  # it did not start: nothing of it to stop
                            await worker.close()
                    return self.refusal(self.problem)
                self.worker = worker
        return self.info, self._ran_on()

    async def _started(self) -> Any:
        answer = await self.start()
        if isinstance(answer, str):
            from cuda_llm.engine.gpu.client import GpuUnavailable

            raise GpuUnavailable(answer)  # the pool takes this GPU out and sends its jobs elsewhere
        return self.worker

    # ---- the task --------------------------------------------------------------------------------
    def _load(self, bundle: Any, fingerprint: str) -> Any:
        from cuda_llm.engine.cluster.bundle import unpack_task
        from cuda_llm.engine.core.paths import user_cache_dir
        from cuda_llm.engine.task.loader import load_task

        folder = unpack_task(bundle, user_cache_dir() / "cluster-tasks")
        task = load_task(folder, self.settings.validation)
        if task.fingerprint != fingerprint:
            raise RuntimeError(f"task {task.name!r} differs here from the driver's (fingerprint {task.fingerprint})")
        return task

    async def _task(self, shipped: Any) -> Any:
        task = self.tasks.get(shipped.key)
        if task is None:
            async with self.task_locks.setdefault(shipped.key, asyncio.Lock()):
                task = self.tasks.get(shipped.key)
                if task is None:
                    bundle = await shipped.ref[0]
                    task = await asyncio.to_thread(self._load, bundle, shipped.fingerprint)
                    self.tasks[shipped.key] = task
        return task

    def _task_fault(self, shipped: Any, exc: BaseException) -> Any:
        from cuda_llm.engine.gpu.protocol import Fault

        message = f"task {shipped.name!r} cannot be loaded on node {self.node}: {_first_line(exc)}"
        return Fault("crashed", "TASK", message)

    # ---- jobs --------------------------------------------------------------------------------------
    async def validate(self, shipped: Any, program: Any) -> Any:
        from cuda_llm.engine.gpu.protocol import ValidationReport

        worker = await self._started()
        try:
            task = await self._task(shipped)
        except Exception as exc:
            fault = self._task_fault(shipped, exc)
            return ValidationReport("crashed", fault.message, fault=fault, ran_on=self._ran_on())
        report = await worker.validate(task, program)
        return dataclasses.replace(report, ran_on=self._ran_on())

    async def profile(self, shipped: Any, programs: list[Any], library: bool) -> Any:
        from cuda_llm.engine.gpu.client import ProfileFailure
        from cuda_llm.engine.gpu.protocol import ProfileReport

        worker = await self._started()
        try:
            task = await self._task(shipped)
        except Exception as exc:
            return ProfileFailure(self._task_fault(shipped, exc))
        report = await worker.profile(task, list(programs), library)
        if isinstance(report, ProfileReport):
            report = dataclasses.replace(report, ran_on=self._ran_on())
        return report

    async def peaks(self, force: bool = False) -> Any:
        return await (await self._started()).peaks(force)

    async def placed(self) -> bool:
        """Answers as soon as Ray has placed the actor on a GPU, before its worker starts: what tells a
        GPU another job holds (no answer) from a worker slow to start."""
        return True

    async def worker_restarts(self) -> int:
        """How often this GPU's worker process was restarted (after a crash or a hang)."""
        return self.worker.restarts if self.worker is not None else 0

    async def close(self) -> None:
        if self.worker is not None:
            await self.worker.close()


class CompilerActor(_OnNode):
    """A warm NVRTC process (engine/compile/compiler_pool.py) on one CPU of the cluster, sandboxed or not used."""

    def __init__(self, expected_version: str, settings_blob: bytes) -> None:
        super().__init__(expected_version, settings_blob)
        self.pool: Any = None

    async def start(self) -> str | None:
        """None once the compiler is warm; else why it cannot compile here."""
        if self.problem is not None:
            return self.refusal(self.problem)
        if self.pool is None:
            from cuda_llm.engine.compile.compiler_pool import CompilerPool

            pool = CompilerPool(self.settings.compile, workers=1)
            try:
                await pool.start()
                confined, detail = await pool.sandbox()
            except Exception as exc:
                pool.close()
                self.problem = _first_line(exc)
                return self.refusal(self.problem)
            if not confined:
                # A source past the include policy could make an unconfined compiler read this
                # machine's files into a log that goes back to the driver (and on to a model).
                pool.close()
                self.problem = f"its compiler cannot be sandboxed ({detail}); compiles stay on the driver"
                return self.refusal(self.problem)
            self.pool = pool
        return None

    async def compile(self, checked: Any, arch: str) -> Any:
        problem = await self.start()
        if problem is not None:
            raise RuntimeError(problem)
        return await self.pool.compile(checked, arch)

    async def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
