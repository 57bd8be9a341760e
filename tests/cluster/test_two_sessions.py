"""Two sessions on one Ray cluster, and a resume right after a `kill -9` of the driver: a session
whose GPUs are all held is refused at once, naming who holds them, with no Ray traceback; the GPU
actors of a driver that was killed on this machine are ended, so its resume gets its GPUs back
instead of "held by other jobs" for the dead session itself."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.fake_gpu import FakeGpuFactory
from ray_nodes import PATIENT_START_S, QUIET, require_ray, start_cluster

from cuda_llm.engine.cluster.cluster_environment import open_cluster_environment
from cuda_llm.engine.cluster.cluster_settings import ClusterSettings
from cuda_llm.engine.cluster.connection import ClusterError
from cuda_llm.engine.core.settings import Settings

TESTS = Path(__file__).resolve().parents[1]

HOLD_A_GPU = """
import asyncio, sys
sys.path[:0] = [{tests!r}, {cluster_tests!r}]
from ray_nodes import require_ray
require_ray()
from fakes.fake_gpu import FakeGpuFactory
from cuda_llm.engine.cluster.cluster_environment import open_cluster_environment
from cuda_llm.engine.cluster.cluster_settings import ClusterSettings
from cuda_llm.engine.core.settings import Settings

async def main():
    env = await open_cluster_environment(
        Settings(), sys.argv[1], worker_factory=FakeGpuFactory(),
        cluster=ClusterSettings(remote_compilers=0, start_timeout_s=float(sys.argv[2])),
    )
    print("holding", env.gpu.size, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


HOLD_WITH_A_PLAIN_RAY_JOB = """
import sys, time
import ray
ray.init(address=sys.argv[1], log_to_driver=False)

@ray.remote(num_gpus=1, num_cpus=0)
class Holder:
    def ready(self):
        return True

holder = Holder.remote()
ray.get(holder.ready.remote())
print("holding", flush=True)
time.sleep(600)
"""


async def open_env(address: str, progress=None, cluster: ClusterSettings = QUIET):
    return await open_cluster_environment(
        Settings(), address, worker_factory=FakeGpuFactory(), cluster=cluster, progress=progress
    )


async def test_a_second_session_is_refused_at_once_naming_who_holds_the_gpus(capfd):
    require_ray()
    cluster = start_cluster(2, head_gpus=0)  # one GPU, on the worker node
    try:
        first = await open_env(cluster.address)
        try:
            assert first.gpu.size == 1
            with pytest.raises(ClusterError) as refused:
                await open_env(cluster.address)
        finally:
            await first.close()
    finally:
        cluster.shutdown()
    line = str(refused.value)
    assert "every GPU of the Ray cluster" in line and "is held by other jobs" in line, line
    assert f"cuda-llm on {socket.gethostname()} (process {os.getpid()}): 1 GPU" in line, line
    assert line.endswith("run again when one is free") and "\n" not in line
    err = capfd.readouterr().err
    assert "InvalidStateError" not in err and "Traceback" not in err, err[-2000:]


async def test_a_session_is_not_refused_for_gpus_ray_has_not_counted_free_yet(monkeypatch):
    """Ray's count of free GPUs trails what holds them by seconds on a loaded machine: a cluster just
    started, or a session just closed, can read as "no GPU free" while nothing holds one. Here the
    count says so on the session's first look, and the session still gets the cluster's GPU."""
    from cuda_llm.engine.cluster import fleet

    require_ray()
    real = fleet.free_gpus
    looks = []

    async def stale_at_first():
        free, total = await real()
        looks.append(free)
        return (0 if len(looks) == 1 else free), total

    monkeypatch.setattr(fleet, "free_gpus", stale_at_first)
    said: list[str] = []
    cluster = start_cluster(2, head_gpus=0)  # one GPU, on the worker node
    try:
        env = await open_env(cluster.address, said.append)
        try:
            assert env.gpu.size == 1
        finally:
            await env.close()
    finally:
        cluster.shutdown()
    assert looks, "the session looked at what Ray counts free"
    # and said what it waited for, as it began to
    assert len(said) == 1 and said[0].startswith("Ray counts 0 of the 1 GPU of the cluster at "), said
    assert f"waiting up to {QUIET.start_timeout_s:.0f} s for 1 more" in said[0], said


async def test_a_session_says_it_waits_for_a_gpu_a_plain_ray_job_holds_then_is_refused(capfd):
    """A GPU held by a Ray job that is no cuda-llm session (its actor has no name of ours): the session
    cannot tell it from Ray's count lagging, so it waits, and says so first, then is refused."""
    require_ray()
    cluster = start_cluster(2, head_gpus=0)  # one GPU, on the worker node
    holder = None
    said: list[str] = []
    try:
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_WITH_A_PLAIN_RAY_JOB, cluster.address],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding", "the plain Ray job could not take the GPU"
        short = ClusterSettings(remote_compilers=0, start_timeout_s=5.0, placement_grace_s=2.0)
        with pytest.raises(ClusterError) as refused:
            await open_env(cluster.address, said.append, short)
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
        cluster.shutdown()
    assert len(said) == 1 and said[0].startswith("Ray counts 0 of the 1 GPU of the cluster at "), said
    assert "waiting up to 5 s for 1 more (held by another Ray job that is no cuda-llm session" in said[0], said
    line = str(refused.value)
    assert "is held by other jobs" in line and line.endswith("run again when one is free"), line
    err = capfd.readouterr().err
    assert "Traceback" not in err, err[-2000:]


async def test_gpus_ray_counts_free_but_too_slow_to_start_are_not_said_held_by_other_jobs():
    """Ray counted the GPU free and nothing holds it, but its actor did not start in time (a loaded
    machine took over 120 s): the line says that, not that other jobs hold the GPUs."""
    require_ray()
    cluster = start_cluster(2, head_gpus=0)  # one GPU, on the worker node
    address = cluster.address
    try:
        hasty = ClusterSettings(remote_compilers=0, start_timeout_s=0.01)  # no worker starts in 10 ms
        with pytest.raises(ClusterError) as refused:
            await open_env(cluster.address, cluster=hasty)
    finally:
        cluster.shutdown()
    line = str(refused.value)
    assert line.startswith(f"no GPU actor started on the Ray cluster at {address} within 0.01 s"), line
    assert "though Ray counted 1 of its 1 GPU free" in line and line.endswith("run again"), line
    assert "held by other jobs" not in line and "\n" not in line, line


@pytest.mark.timeout(3 * PATIENT_START_S)
async def test_a_resume_right_after_a_kill_9_of_a_client_gets_its_gpu_back(tmp_path):
    require_ray()
    port = free_port()
    cluster = start_cluster(2, client_port=port, head_gpus=0)
    address = f"ray://127.0.0.1:{port}"  # a Ray client: Ray keeps a dead client's actors for 30 s
    driver = None
    try:
        script = HOLD_A_GPU.format(tests=str(TESTS), cluster_tests=str(TESTS / "cluster"))
        driver_err = tmp_path / "driver.err"
        with driver_err.open("w") as err:
            driver = subprocess.Popen(
                [sys.executable, "-c", script, address, str(PATIENT_START_S)],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        assert driver.stdout is not None
        said = driver.stdout.readline().strip()
        assert said == "holding 1", f"the first driver could not take the GPU: {driver_err.read_text()[-3000:]}"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        resumed = await open_env(address)
        try:
            assert resumed.gpu.size == 1, "the dead driver's GPU came back to its resume"
        finally:
            await resumed.close()
    finally:
        if driver is not None and driver.poll() is None:
            driver.kill()
        cluster.shutdown()


async def test_a_gpu_model_asked_for_places_actors_on_that_type_only():
    from ray_nodes import add_gpu_node

    require_ray()
    cluster = start_cluster(1, head_gpus=0)
    try:
        h100 = add_gpu_node(cluster, resources={"accelerator_type:H100": 1})
        add_gpu_node(cluster, resources={"accelerator_type:A100": 1})
        env = await open_cluster_environment(
            Settings(), cluster.address, gpus="H100", worker_factory=FakeGpuFactory(), cluster=QUIET
        )
        try:
            assert [m.ran_on.node_id for m in env.gpu.members] == [h100.node_id], "Ray placed it on the H100"
        finally:
            await env.close()
    finally:
        cluster.shutdown()


async def test_a_fleet_given_back_is_free_when_give_back_returns():
    """Ray frees a killed actor's GPU asynchronously; a session closed and opened again at once by
    this process must not find its own GPUs "held by other jobs", so give_back waits for them."""
    from cuda_llm.engine.cluster.connection import connect, free_gpus
    from cuda_llm.engine.cluster.fleet import give_back, start_fleet

    require_ray()
    cluster = start_cluster(3, head_gpus=0)  # two GPUs, on two worker nodes
    try:
        connection = await connect(cluster.address)
        try:
            fleet = await start_fleet(connection, Settings(), QUIET, FakeGpuFactory())
            assert len(fleet.members) == 2 and await free_gpus() == (0, 2)
            await give_back(fleet.members, QUIET.close_timeout_s)
            assert await free_gpus() == (2, 2), "a GPU was still held when give_back returned"
        finally:
            connection.close()
    finally:
        cluster.shutdown()
