"""One GPU actor for every free GPU of the cluster, started, with the nodes that cannot judge refused.

A node is refused with one line when cuda-llm is missing there or in another version, when a package
it needs will not load, or when its GPU worker cannot start (no CUDA driver, a driver too old for
the GPU...). The rest judge.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import cuda_llm
from cuda_llm.engine.cluster.connection import GCS_PORT, ClusterConnection, ClusterError, connected, free_gpus
from cuda_llm.engine.cluster.settings import ClusterSettings
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.protocol import DeviceInfo, RanOn

# What the GPU actor runs instead of today's GPU worker, when given (a test's fake GPU):
# called as factory(device_index, settings, log_dir) on the node, it returns an object with
# GpuWorker's start, validate, profile, peaks, close and restarts.
WorkerFactory = Callable[..., Any]

State = Literal["ready", "lost", "dead"]


@dataclass(eq=False)  # each one is itself: compared and hashed by identity
class Member:
    """One GPU of the cluster behind its actor."""

    handle: Any  # the Ray actor handle
    info: DeviceInfo
    ran_on: RanOn
    state: State = "ready"  # lost: out of reach for now (its node gone, the actor restarting); dead: for good

    @property
    def model(self) -> str:
        return self.info.name


@dataclass
class Fleet:
    address: str
    members: list[Member]
    refused: list[str] = field(default_factory=list)  # one line per GPU that cannot judge
    held: int = 0  # GPUs other jobs held

    def models(self) -> Counter[str]:
        return Counter(m.model for m in self.members)

    def describe(self) -> str:
        """'3 x NVIDIA H100 80GB HBM3 + 1 x NVIDIA A100-SXM4-40GB on 2 node(s)'."""
        nodes = len({m.ran_on.node_id for m in self.members})
        kinds = " + ".join(f"{n} x {model}" for model, n in sorted(self.models().items()))
        return f"{kinds} on {nodes} node(s)"


def _actor_class(**options: Any) -> Any:
    import ray

    from cuda_llm.engine.cluster.actors import GpuActor

    return ray.remote(GpuActor).options(**options)


async def _start_one(handle: Any, timeout_s: float) -> tuple[DeviceInfo, RanOn] | str:
    from ray.exceptions import RayError

    try:
        return await asyncio.wait_for(handle.start.remote(), timeout_s)
    except TimeoutError:
        return f"a GPU actor did not start within {timeout_s:.0f} s (its GPU taken by another job meanwhile?)"
    except RayError as exc:
        return f"a GPU actor failed to start: {ray_error_line(exc)}"


def head_gcs_address(address: str) -> str:
    """The address GPU machines join the cluster at (`ray start --address ...`): the head's GCS as
    Ray reports it, else the host of `address` with the GCS's default port."""
    import ray

    try:
        reported = ray.get_runtime_context().gcs_address
    except Exception:  # a Ray client may not be told it
        reported = None
    if reported:
        return str(reported)
    host = address.removeprefix("ray://").rpartition(":")[0] or "HEAD"
    return f"{host}:{GCS_PORT}"


def ray_error_line(exc: BaseException) -> str:
    """One line for an error that came through Ray: the cause an actor raised, not Ray's header."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        exc = cause
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    line = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__


async def kill(handles: Sequence[Any], close_timeout_s: float) -> None:
    """Stop the actors' workers (each within the time limit) and end the actors for good."""
    import ray
    from ray.exceptions import RayError

    async def one(handle: Any) -> None:
        try:
            with contextlib.suppress(RayError, TimeoutError, ConnectionError):
                await asyncio.wait_for(handle.close.remote(), close_timeout_s)
            with contextlib.suppress(RayError, ValueError, ConnectionError):
                ray.kill(handle, no_restart=True)
        except Exception:
            if connected():
                raise
            # A Ray client that lost its connection: the cluster ends the actors of its session.

    if not connected():
        return

    await asyncio.gather(*(one(h) for h in handles))


async def start_fleet(
    connection: ClusterConnection,
    settings: Settings,
    cluster: ClusterSettings,
    worker_factory: WorkerFactory | None = None,
) -> Fleet:
    """An actor on every GPU free now, each with its worker started. Raises ClusterError when the
    cluster has no GPU to give, or none of its GPUs can judge."""
    from ray import cloudpickle

    free, total = await free_gpus()
    if total == 0:
        head = await asyncio.to_thread(head_gcs_address, connection.address)
        raise ClusterError(
            f"the Ray cluster at {connection.address} has no GPUs: start Ray on the GPU machines with "
            f"`ray start --address {head}` (it finds their GPUs itself)"
        )
    # The actor restarts when its process dies (max_restarts=-1), on its node or wherever a GPU
    # frees up; requests are not retried by Ray (max_task_retries=0): the pool re-queues them itself,
    # so a job never runs twice unnoticed. num_cpus=0: the GPU worker's time is the GPU's.
    cls = _actor_class(num_gpus=1, num_cpus=0, max_restarts=-1, max_task_retries=0)
    settings_blob = pickle.dumps(settings)
    factory_blob = cloudpickle.dumps(worker_factory) if worker_factory is not None else None
    handles = [cls.remote(cuda_llm.__version__, settings_blob, factory_blob) for _ in range(total)]
    answers = await _answers(handles, free, cluster)
    members, refused, unusable = [], [], []
    for handle, answer in zip(handles, answers, strict=True):
        if isinstance(answer, str | None):
            unusable.append(handle)
            if answer is not None:
                refused.append(answer)
        else:
            members.append(Member(handle, *answer))
    await kill(unusable, cluster.close_timeout_s)
    held = answers.count(None)
    if not members:
        if held == len(answers):
            raise ClusterError(f"every GPU of the Ray cluster at {connection.address} ({total}) is held by other jobs")
        reasons = "; ".join(sorted(set(refused)))
        raise ClusterError(f"no GPU of the Ray cluster at {connection.address} can judge: {reasons}")
    return Fleet(connection.address, members, refused, held)


async def _answers(
    handles: list[Any], free: int, cluster: ClusterSettings
) -> list[tuple[DeviceInfo, RanOn] | str | None]:
    """Each actor's answer to start(), or None for one still waiting for its GPU (held by another job)
    once `free` have answered and ClusterSettings.placement_grace_s has passed without another."""
    jobs = [asyncio.ensure_future(_start_one(h, cluster.start_timeout_s)) for h in handles]
    pending = set(jobs)
    while pending:
        answered = len(jobs) - len(pending)
        grace = cluster.placement_grace_s if answered >= free else None
        done, pending = await asyncio.wait(pending, timeout=grace, return_when=asyncio.FIRST_COMPLETED)
        if not done:
            break
    for job in pending:
        job.cancel()
    return [job.result() if job not in pending else None for job in jobs]
