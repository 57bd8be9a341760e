"""`bench --cluster`: the tasks side by side on the cluster, each task's session on a GPU of its own.

A task's timing never shares a GPU with another task's: each session leases one GPU for its whole
run and hands it back when it ends, and the next task takes it. The tasks start in the order given
(so their sessions are numbered as without a cluster) and run while GPUs are free. The compiler is
shared. Each row says the GPU model it ran on; `--gpus MODEL` keeps to the GPUs of one model.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from cuda_llm.engine.cluster.cluster_environment import LeasedEnvironment, choose_model
from cuda_llm.engine.cluster.cluster_pool import ClusterGpuPool, TaskShipper
from cuda_llm.engine.cluster.cluster_settings import ClusterSettings
from cuda_llm.engine.cluster.compiler import ClusterCompiler
from cuda_llm.engine.cluster.connection import ClusterError, connect
from cuda_llm.engine.cluster.fleet import Member, WorkerFactory, give_back, kill, start_fleet
from cuda_llm.engine.compile.compiler_pool import CompilerPool
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.judge.judge_environment import Progress, sandbox_warning

# How often a task waiting for a GPU checks whether any is left at all.
LEASE_POLL_S = 5.0

Row = TypeVar("Row")  # a row of the table (app/cli/bench_table.BenchRow)


class ClusterBench(Protocol):
    """What is read here of the bench's request (app/cli/bench_cmd.BenchRequest), which is passed
    back to `run_task` as it is."""

    @property
    def cluster(self) -> str | None: ...

    @property
    def gpus(self) -> str | None: ...  # a GPU model: only the cluster's GPUs of that model


async def bench_on_cluster(
    request: ClusterBench,
    runs: list[tuple[str, str]],
    run_task: Callable[..., Awaitable[Row]],
    worker_factory: WorkerFactory | None = None,
    settings: Settings | None = None,
    cluster: ClusterSettings | None = None,
    progress: Progress | None = None,
) -> list[Row]:
    """The rows of `runs` ((task, model), replay:latest resolved) in their order, each task's session
    on a GPU of the cluster at `request.cluster` leased for its whole run. `run_task` is
    bench_cmd.run_task: (request, task, model, environment factory, opened) -> the task's row, with
    `opened` called once its session exists. `progress` gets the lines for the user (the GPUs, the
    refused ones, a sandbox warning, a wait for GPUs): the CLI prints them on stderr."""
    say = progress or (lambda line: None)
    address = request.cluster
    if not address:
        raise ValueError("bench_on_cluster needs the request's cluster address")
    settings = settings or Settings()
    cluster = cluster or ClusterSettings()
    connection = await connect(address)
    fleet = None
    compiler = None
    shipper = TaskShipper(cluster.max_task_bytes)  # one for every session: each task ships once
    try:
        fleet = await start_fleet(connection, settings, cluster, worker_factory, request.gpus, progress)
        if request.gpus:  # --gpus MODEL: only the GPUs of that model
            chosen, others = choose_model(fleet, request.gpus)
            await kill([m.handle for m in others], cluster.close_timeout_s)
            fleet.members = chosen
        say(f"benchmarking on {fleet.describe()} of the Ray cluster at {address}")
        for line in sorted(set(fleet.refused)):
            say(f"refused {line}")
        compiler = ClusterCompiler(CompilerPool(settings.compile))
        warning = await sandbox_warning(compiler)
        if warning:
            say(warning)
        compiler.start_remote(cluster.remote_compilers, settings, cluster.start_timeout_s)
        free: asyncio.Queue[Member] = asyncio.Queue()
        for member in fleet.members:
            free.put_nowait(member)
        rows: dict[int, Row] = {}

        async def one(index: int, task: str, model: str, member: Member, opened: asyncio.Event) -> None:
            pool = ClusterGpuPool([member], settings, cluster, address, shipper, owns_members=False)

            def release() -> None:
                if member.state != "dead":
                    free.put_nowait(member)

            env = LeasedEnvironment(compiler, pool, member.info, None, member.info.arch, None, release=release)
            try:
                env.peaks = await pool.peaks()
                rows[index] = await run_task(request, task, model, lambda: env, opened.set)
            finally:
                opened.set()
                await env.close()  # (a second close, after the session's own, does nothing)

        jobs = []
        for index, (task, model) in enumerate(runs):
            member = await _lease(free, fleet.members)
            opened = asyncio.Event()
            jobs.append(asyncio.get_running_loop().create_task(one(index, task, model, member, opened)))
            await opened.wait()  # sessions are created in task order
        results = await asyncio.gather(*jobs, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise failures[0]
        return [rows[i] for i in sorted(rows)]
    finally:
        if compiler is not None:
            compiler.close()
        if fleet is not None:
            with contextlib.suppress(Exception):
                await give_back(fleet.members, cluster.close_timeout_s)
        shipper.clear()
        connection.close()


async def _lease(free: asyncio.Queue[Member], members: list[Member]) -> Member:
    """The next free GPU (waiting for a task to hand one back)."""
    while True:
        if all(m.state == "dead" for m in members) and free.empty():
            raise ClusterError("every GPU of the cluster is gone; the remaining tasks were not run")
        try:
            member = await asyncio.wait_for(free.get(), LEASE_POLL_S)
        except TimeoutError:
            continue
        if member.state != "dead":
            return member
