"""One GPU actor for every free GPU of the cluster, started, with the nodes that cannot judge refused.

A node is refused with one line when cuda-llm is missing there or in another version, when a package
it needs will not load, or when its GPU worker cannot start (no CUDA driver, a driver too old for
the GPU...). The rest judge.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import secrets
import socket
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import cuda_llm
from cuda_llm.engine.cluster.cluster_settings import ClusterSettings
from cuda_llm.engine.cluster.connection import (
    GCS_PORT,
    ClusterConnection,
    ClusterError,
    connected,
    free_gpus,
    ray_result,
    uncancelled,
)
from cuda_llm.engine.core.errors import describe
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.protocol import DeviceInfo, RanOn
from cuda_llm.engine.judge.judge_environment import Progress

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
    held_by: str = ""  # who, as their actors' names say (holders_of)

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
        return await ray_result(handle.start.remote(), timeout_s)
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
    return describe(exc)


async def kill(handles: Sequence[Any], close_timeout_s: float) -> None:
    """Stop the actors' workers (each within the time limit) and end the actors for good."""
    import ray
    from ray.exceptions import RayError

    async def one(handle: Any) -> None:
        try:
            with contextlib.suppress(RayError, TimeoutError, ConnectionError):
                await ray_result(handle.close.remote(), close_timeout_s)
            with contextlib.suppress(RayError, ValueError, ConnectionError):
                ray.kill(handle, no_restart=True)
        except Exception:
            if connected():
                raise
            # A Ray client that lost its connection: the cluster ends the actors of its session.

    if not connected():
        return

    await asyncio.gather(*(one(h) for h in handles))


async def give_back(members: Sequence[Member], close_timeout_s: float) -> None:
    """End a fleet's actors (kill) and return once Ray counts the GPUs of those still ready free again,
    or `close_timeout_s` is up: Ray frees them asynchronously (seconds on a loaded machine), and a
    session opened right after must find them free, not "held by other jobs" by this very process.
    (The lost and the dead hold no GPU Ray counts.)"""
    handles = [m.handle for m in members]
    holding = sum(m.state == "ready" for m in members)
    if holding == 0 or not connected():
        await kill(handles, close_timeout_s)
        return
    before, total = await free_gpus()
    await kill(handles, close_timeout_s)
    if connected():
        await _freed(before, min(total, before + holding), close_timeout_s)


async def start_fleet(
    connection: ClusterConnection,
    settings: Settings,
    cluster: ClusterSettings,
    worker_factory: WorkerFactory | None = None,
    model: str | None = None,
    progress: Progress | None = None,
) -> Fleet:
    """An actor on every GPU no other session holds (gpus_to_ask; of `model`, where Ray knows the
    GPUs' types), those Ray places in time kept, each with its worker started and named after this
    process, so `ray list actors` shows which session holds which GPU. Raises ClusterError when the
    cluster has no GPU to give, naming who holds them (at once when other sessions' actors hold
    every GPU: a session never waits for another's GPUs), or none of its GPUs can judge. Where Ray
    counts fewer GPUs free than it asks for, `progress` hears how long it waits for them, and why."""
    from ray import cloudpickle

    reaped = await asyncio.to_thread(reap_orphans)
    free, total = await free_gpus()
    if reaped and free < total:  # the orphans' GPUs come free (each held one at most)
        free = await _freed(free, min(total, free + reaped), cluster.placement_grace_s)
    if total == 0:
        head = await asyncio.to_thread(head_gcs_address, connection.address)
        raise ClusterError(
            f"the Ray cluster at {connection.address} has no GPUs: start Ray on the GPU machines with "
            f"`ray start --address {head}` (it finds their GPUs itself)"
        )
    names = await asyncio.to_thread(_named_actors)
    held_by = holders_of(names)
    held_by_sessions = sum(_owner_of(n) is not None for n in names)
    wanted = gpus_to_ask(free, total, held_by_sessions)
    if wanted == 0:
        raise ClusterError(held_line(connection.address, total, held_by))
    accelerator, of_type = await _accelerator_type(model)
    count = wanted if accelerator is None else min(wanted, of_type)  # no actor waits for another model's GPU
    # The actor restarts when its process dies (max_restarts=-1), on its node or wherever a GPU
    # frees up; requests are not retried by Ray (max_task_retries=0): the pool re-queues them itself,
    # so a job never runs twice unnoticed. num_cpus=0: the GPU worker's time is the GPU's.
    options: dict[str, Any] = {"num_gpus": 1, "num_cpus": 0, "max_restarts": -1, "max_task_retries": 0}
    if accelerator is not None:
        options["accelerator_type"] = accelerator  # Ray places it on a GPU of that type only
    settings_blob = pickle.dumps(settings)
    factory_blob = cloudpickle.dumps(worker_factory) if worker_factory is not None else None
    # Unique per fleet: a fleet this process closed a moment ago may still hold its names. The Ray
    # job leads it, so a later connection of this process knows an earlier one's actors for orphans.
    prefix = f"{actor_owner()}:{_job()}-{secrets.token_hex(3)}"
    handles = [
        _actor_class(**options, name=f"{prefix}:gpu{i}", namespace=ACTOR_NAMESPACE).remote(
            cuda_llm.__version__, settings_blob, factory_blob
        )
        for i in range(count)
    ]
    # Until one actor answers, Ray is still starting worker processes, whatever holds the GPUs: where
    # some GPU is held by no session, that may take as long as an actor's start (a loaded machine);
    # where sessions hold them all, an answer is owed only to Ray's count of free ones lagging.
    first_wait = cluster.start_timeout_s if total > held_by_sessions else cluster.placement_grace_s
    if progress is not None and free < count:
        progress(waiting_line(connection.address, free, total, count, first_wait))
    answers = await _answers(handles, cluster, first_wait)
    members, refused, unusable = [], [], []
    for handle, answer in zip(handles, answers, strict=True):
        if isinstance(answer, str | None):
            unusable.append(handle)
            if answer is not None:
                refused.append(answer)
        else:
            members.append(Member(handle, *answer))
    await kill(unusable, cluster.close_timeout_s)
    # GPUs not asked for that Ray counted busy, and those asked for that Ray did not place: held. (GPUs
    # of other models left free are not.)
    held = max(0, total - max(free, count)) + answers.count(None)
    if not members:
        if answers.count(None) == len(answers):  # no actor answered: Ray counted enough free, or not
            raise ClusterError(
                not_started_line(connection.address, free, total, first_wait)
                if free >= count
                else held_line(connection.address, total, held_by)
            )
        reasons = "; ".join(sorted(set(refused)))
        raise ClusterError(f"no GPU of the Ray cluster at {connection.address} can judge: {reasons}")
    return Fleet(connection.address, members, refused, held, held_by)


# The Ray namespace the GPU actors are named in (`ray list actors --filter namespace=cuda-llm`), and
# how a name starts: cuda-llm:HOST:PID:JOB-FLEET:gpuN, the process (and its Ray job) that holds the GPU.
ACTOR_NAMESPACE = "cuda-llm"
ACTOR_PREFIX = "cuda-llm"


def actor_owner() -> str:
    """This process, as its actors' names say it: cuda-llm:HOST:PID."""
    return f"{ACTOR_PREFIX}:{socket.gethostname()}:{os.getpid()}"


def _named_actors() -> list[str]:
    import ray

    try:
        found = ray.util.list_named_actors(all_namespaces=True)
    except Exception:  # an older Ray, or a client that cannot list them: nothing to say
        return []
    return [a["name"] for a in found if isinstance(a, dict) and a.get("namespace") == ACTOR_NAMESPACE]


def _job() -> str:
    """This connection's Ray job ("" where Ray does not say): each ray.init of a process is a job."""
    import ray

    try:
        return str(ray.get_runtime_context().get_job_id() or "")
    except Exception:  # an older Ray, or a client that cannot say
        return ""


def _owner_of(name: str) -> tuple[str, int] | None:
    parts = name.split(":")
    if len(parts) != 5 or parts[0] != ACTOR_PREFIX or not parts[2].isdigit():
        return None
    return parts[1], int(parts[2])


def _job_of(name: str) -> str:
    """The Ray job a fleet's actor was started by, from its name ("" where the name does not say)."""
    fleet = name.split(":")[3] if name.count(":") == 4 else ""
    return fleet.rpartition("-")[0]


def is_orphan(name: str, here: str, pid: int, job: str, alive: Callable[[int], bool]) -> bool:
    """Whether a GPU actor named `name` outlived what started it: a cuda-llm process of this machine
    that is gone (a `kill -9`), or an earlier Ray connection of this very process (a session closed
    and opened again: Ray ends a disconnected job's actors, seconds later on a loaded machine)."""
    owner = _owner_of(name)
    if owner is None or owner[0] != here:
        return False
    if owner[1] != pid:
        return not alive(owner[1])
    earlier = _job_of(name)
    return bool(job) and bool(earlier) and earlier != job


def gpus_to_ask(free: int, total: int, held_by_sessions: int) -> int:
    """How many GPU actors a session starts: one for every GPU Ray counts free, or, where that count
    says less, for every GPU no session's actor holds. Ray's count of free GPUs trails what is by
    seconds on a loaded machine (a cluster just started, a session just closed), and a session must
    not be refused for GPUs nothing holds: an actor asked for a GPU that something else does hold
    is not placed within ClusterSettings.placement_grace_s, and is dropped. 0: the sessions' actors
    hold every GPU, and Ray agrees."""
    return max(free, total - held_by_sessions, 0)


def waiting_line(address: str, free: int, total: int, asked: int, wait_s: float) -> str:
    """What a session says before it waits for GPUs Ray does not count free: held by a Ray job that
    is no cuda-llm session (whose name Ray does not give), or freed a moment ago and not yet counted."""
    short = asked - free
    return (
        f"Ray counts {free} of the {total} GPU{'s' if total != 1 else ''} of the cluster at {address} free: waiting "
        f"up to {wait_s:.0f} s for {short} more (held by another Ray job that is no cuda-llm session, or freed "
        "and not yet counted)"
    )


def held_line(address: str, total: int, held_by: str) -> str:
    """Why a session got no GPU when others hold them all (`held_by`: who, where their names say)."""
    by = f" ({held_by})" if held_by else ""
    return f"every GPU of the Ray cluster at {address} ({total}) is held by other jobs{by}; run again when one is free"


def not_started_line(address: str, free: int, total: int, waited_s: float) -> str:
    """Why a session got no GPU when Ray counted enough of them free and none of its actors answered:
    not "held by other jobs" (Ray said they were free), but workers too slow to start on a loaded
    cluster (a 2-core machine with eight busy loops beside it took over 120 s), or GPUs taken meanwhile."""
    return (
        f"no GPU actor started on the Ray cluster at {address} within {waited_s:g} s, though Ray counted "
        f"{free} of its {total} GPU{'s' if total != 1 else ''} free: its nodes were too busy to start Ray's "
        "workers in time, or another job took the GPUs meanwhile; run again"
    )


def holders_of(names: Sequence[str]) -> str:
    """Who holds the cluster's GPUs, from the actors' names: 'cuda-llm on vm (process 1234): 2 GPUs'."""
    owners = Counter(o for o in map(_owner_of, names) if o is not None)
    return "; ".join(
        f"cuda-llm on {host} (process {pid}): {n} GPU{'s' if n > 1 else ''}"
        for (host, pid), n in sorted(owners.items())
    )


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def reap_orphans() -> int:
    """End the GPU actors whose owner is gone (is_orphan: Ray keeps a dead client's actors for half a
    minute, so a resume after a `kill -9` found its own GPUs held). Returns how many."""
    import ray

    here, pid, job = socket.gethostname(), os.getpid(), _job()
    ended = 0
    for name in _named_actors():
        if not is_orphan(name, here, pid, job, _process_alive):
            continue
        with contextlib.suppress(Exception):  # gone meanwhile
            ray.kill(ray.get_actor(name, namespace=ACTOR_NAMESPACE), no_restart=True)
            ended += 1
    return ended


async def _freed(free: int, wanted: int, within_s: float) -> int:
    """GPUs free once the orphans' actors have let theirs go (`wanted` free, or what is free when
    `within_s` is up: Ray frees them within a second, or seconds on a loaded machine)."""
    deadline = time.monotonic() + within_s
    while free < wanted and time.monotonic() < deadline:
        await asyncio.sleep(ORPHAN_POLL_S)
        free, _ = await free_gpus()
    return free


# How often the GPUs of ended orphans are looked for.
ORPHAN_POLL_S = 0.25


async def _accelerator_type(model: str | None) -> tuple[str | None, int]:
    """Ray's name of the GPU type `model` (part of a name, e.g. H100) asks for, where its nodes say
    one (their accelerator_type resource), and how many GPUs the cluster has of it; (None, 0) where
    they do not (the GPUs' own names decide after start)."""
    if not model:
        return None, 0
    from cuda_llm.engine.cluster.connection import nodes

    found = [n for n in await nodes() if n.accelerator and n.gpus]
    wanted = model.lower()
    accelerators = {n.accelerator for n in found if n.accelerator is not None}
    matches = sorted(acc for acc in accelerators if acc.lower() in wanted or wanted in acc.lower())
    if len(matches) != 1:
        return None, 0
    return matches[0], sum(int(n.gpus) for n in found if n.accelerator == matches[0])


async def _answers(
    handles: list[Any], cluster: ClusterSettings, first_wait_s: float
) -> list[tuple[DeviceInfo, RanOn] | str | None]:
    """Each actor's answer to start(), or None for one Ray has not placed on a GPU in time (another
    job holds it). Placement is asked first, so a worker slow to start is never taken for a GPU held.
    In time: within `first_wait_s` for the first actor to answer, then as long again as that took
    (ClusterSettings.placement_grace_s at least) for the others. Ray answers for every actor in about
    the same time when it can place them all, a second on an idle machine and tens of seconds on a
    loaded one, so a fixed grace counted from the start gave up free GPUs under load. The waits are
    never cancelled (a Ray client then logs InvalidStateError tracebacks): unplaced actors are ended
    by the caller, and what they answer later is dropped."""
    placed = [uncancelled(h.placed.remote()) for h in handles]
    began = time.monotonic()
    await asyncio.wait(placed, timeout=first_wait_s, return_when=asyncio.FIRST_COMPLETED)
    if any(p.done() for p in placed):
        first_s = time.monotonic() - began
        await asyncio.wait(placed, timeout=max(cluster.placement_grace_s, first_s))
    starts = {
        i: asyncio.ensure_future(_start_one(h, cluster.start_timeout_s))
        for i, (h, p) in enumerate(zip(handles, placed, strict=True))
        if p.done()
    }
    if starts:
        await asyncio.wait(starts.values())
    return [starts[i].result() if i in starts else None for i in range(len(handles))]
