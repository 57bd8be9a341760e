"""The judge environment of a session on a Ray cluster: the GPUs of one model, the compiler, the
connection. engine/judge/judge_environment.py opens it when `--cluster` is given."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cuda_llm.engine.cluster.cluster_pool import ClusterGpuPool, TaskShipper
from cuda_llm.engine.cluster.cluster_settings import ClusterSettings
from cuda_llm.engine.cluster.compiler import ClusterCompiler
from cuda_llm.engine.cluster.connection import ClusterConnection, ClusterError, connect
from cuda_llm.engine.cluster.fleet import Fleet, Member, WorkerFactory, give_back, kill, start_fleet
from cuda_llm.engine.compile.compiler_pool import CompilerPool
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.judge.judge_environment import JudgeEnvironment, Progress


@dataclass
class OnCluster(JudgeEnvironment):
    """A JudgeEnvironment whose GPUs are a Ray cluster's (its `gpu` is a ClusterGpuPool)."""

    def facts(self) -> dict[str, Any]:
        """The base facts (the GPU model, its clocks...) and, under "cluster", the node and GPU each of
        the session's actors ran on: a row of a table says where its figures came from."""
        facts = super().facts()
        members = getattr(self.gpu, "members", [])
        facts["cluster"] = {
            "nodes": sorted({m.ran_on.node for m in members}),
            "gpus": [
                {
                    "node": m.ran_on.node,
                    "node_id": m.ran_on.node_id,
                    "gpu": m.ran_on.gpu_name,
                    "index": m.ran_on.gpu_index,
                    "uuid": m.ran_on.gpu_uuid,
                }
                for m in members
            ],
        }
        return facts


@dataclass
class ClusterEnvironment(OnCluster):
    """A JudgeEnvironment whose close() also ends the actors and the connection it opened."""

    connection: ClusterConnection | None = None

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            if self.connection is not None:
                self.connection.close()


@dataclass
class LeasedEnvironment(OnCluster):
    """A session's share of a fleet that outlives it (`bench --cluster`): closing it hands its GPU
    back, and leaves the shared compiler and the actors running."""

    release: Callable[[], None] = field(default=lambda: None)
    _released: bool = field(default=False, init=False)

    async def close(self) -> None:
        if self._released:
            return
        self._released = True
        try:
            if self.gpu is not None:
                await self.gpu.close()
        finally:
            self.release()


def choose_model(fleet: Fleet, wanted: str | None) -> tuple[list[Member], list[Member]]:
    """(the GPUs a session judges on, the others). A session judges on one GPU model: its cubins are
    compiled for one architecture, and speedups are compared only between GPUs of one kind. By
    default the model the cluster has most of; `wanted` picks by (part of) the name."""
    models = fleet.models()
    if wanted:
        matches = sorted({m for m in models if wanted.lower() in m.lower()})
        if not matches:
            offered = ", ".join(f"{n} x {m}" for m, n in sorted(models.items()))
            raise ClusterError(
                f"--gpus {wanted}: with --cluster it names a GPU model, and the cluster offers {offered}"
            )
        model = max(matches, key=lambda m: (models[m], m))
    else:
        model = max(sorted(models), key=lambda m: models[m])
    chosen = [m for m in fleet.members if m.model == model]
    return chosen, [m for m in fleet.members if m.model != model]


def _notice(fleet: Fleet, pool: ClusterGpuPool, others: list[Member], arch: str | None) -> str:
    lines = [f"judging on {pool.describe()}"]
    if others:
        left = ", ".join(f"{n} x {m}" for m, n in sorted(Fleet(fleet.address, others).models().items()))
        lines.append(f"{left} left free (a session judges on one GPU model; --gpus MODEL picks another)")
    lines += [f"refused {line}" for line in sorted(set(fleet.refused))]
    if fleet.held:
        by = f" ({fleet.held_by})" if fleet.held_by else ""
        lines.append(f"{fleet.held} GPU(s) of the cluster are held by other jobs{by}")
    if arch and arch != pool.device.arch:
        lines.append(f"--arch {arch} ignored: compiling for the GPUs' own {pool.device.arch}")
    return "; ".join(lines)


async def open_cluster_environment(
    settings: Settings,
    address: str,
    arch: str | None = None,
    gpus: str | None = None,
    worker_factory: WorkerFactory | None = None,
    cluster: ClusterSettings | None = None,
    progress: Progress | None = None,
) -> ClusterEnvironment:
    """Connect, start an actor on every free GPU, keep those of one model (`gpus`: which), and
    measure their ceilings. `worker_factory` replaces the GPU worker inside each actor (tests);
    `progress` hears what the start waits for (start_fleet)."""
    cluster = cluster or ClusterSettings()
    connection = await connect(address)
    fleet = None
    try:
        fleet = await start_fleet(connection, settings, cluster, worker_factory, gpus, progress)
        chosen, others = choose_model(fleet, gpus)
        await kill([m.handle for m in others], cluster.close_timeout_s)
        pool = ClusterGpuPool(chosen, settings, cluster, address, TaskShipper(cluster.max_task_bytes))
        peaks = await pool.peaks()
        compiler = ClusterCompiler(CompilerPool(settings.compile))
        compiler.start_remote(cluster.remote_compilers, settings, cluster.start_timeout_s)
        device = pool.device
        # The cluster's compiler and pool are what the judge needs of a pool (engine/judge/pools.py).
        return ClusterEnvironment(
            compiler,
            pool,
            device,
            peaks,
            device.arch,
            _notice(fleet, pool, others, arch),
            connection=connection,
        )
    except BaseException:
        if fleet is not None:
            await give_back(fleet.members, cluster.close_timeout_s)
        connection.close()
        raise
