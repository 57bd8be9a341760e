"""Judging on a real local Ray cluster of three nodes, each with one (fake) GPU: a round of 8 spread
across the nodes, an actor that dies and comes back, nodes refused, the user's own task shipped
through Ray, compiles overflowing to the cluster, and what doctor says."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import pytest
from fakes.fake_gpu import FakeGpu, FakeGpuFactory, OneJobAtATime
from ray_nodes import QUIET, add_gpu_node
from scripted import GOOD_KERNEL, numbered, reply
from session_driver import options, run_session

from cuda_llm.engine.cluster.cluster_environment import open_cluster_environment
from cuda_llm.engine.cluster.connection import ClusterError
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.gpu.protocol import ValidationReport
from cuda_llm.engine.judge.judge_environment import gpu_unavailable_reason
from cuda_llm.engine.task import TaskLibrary

ROOT = Path(__file__).resolve().parents[2]


async def open_env(cluster, factory=None, **changes):
    settings = dataclasses.replace(QUIET, **changes)
    factory = factory or FakeGpuFactory()
    return await open_cluster_environment(Settings(), cluster.address, worker_factory=factory, cluster=settings)


async def test_a_round_of_8_is_judged_across_the_nodes(tmp_path, llm_server, ray_cluster):
    llm_server.default = numbered(reply())  # eight programs, not one and seven repeats
    env = await open_env(ray_cluster, FakeGpuFactory(delay_s=0.4))
    assert env.gpu.size == 3 and "3 x Fake H100 on 3 node(s)" in env.notice
    result, rec = await run_session(
        options(tmp_path, "ollama:loop-model", candidates=8, rounds=1), host=llm_server.url, environment=env
    )
    assert result.status == "finished", result.reason
    validated = {e.judgement.label: e.judgement for e in rec.of(ev.CandidateJudged) if e.stage == "validate"}
    profiled = {e.judgement.label: e.judgement for e in rec.of(ev.CandidateJudged) if e.stage == "profile"}
    labels = {f"r1-{i}" for i in range(1, 9)}
    assert labels <= set(validated) and labels <= set(profiled)
    assert all(validated[label].status == "correct" for label in labels)
    nodes = Counter(validated[label].ran_on.node_id for label in labels)
    assert len(nodes) == 3, f"the 8 validations ran on every node: {nodes}"
    timed_on = Counter(profiled[label].ran_on.node_id for label in labels)
    assert len(timed_on) == 3, "the round's timing was split across the three GPUs"
    for label in labels:
        j = profiled[label]
        assert j.figures.speedup == pytest.approx(100.0 / 50.0), "compared with the baseline timed on its own GPU"
        assert j.device.endswith(f"on {j.ran_on.node} (node {j.ran_on.node_id[:8]})")
    # The three local nodes share one host name: their GPUs are still told apart, by node id.
    assert len({profiled[label].device for label in labels}) == 3, {profiled[label].device for label in labels}
    db = sqlite3.connect(tmp_path / "sessions.db")
    rows = db.execute("SELECT label, node, gpu FROM candidates WHERE label LIKE 'r1-%'").fetchall()
    db.close()
    assert len(rows) == 8 and all(node and gpu == "Fake H100 #0" for _label, node, gpu in rows)


async def test_an_actor_that_dies_is_restarted_and_its_job_runs_again(ray_cluster):
    import ray

    env = await open_env(ray_cluster, FakeGpuFactory(delay_s=1.5))
    try:
        judge = env.judge(TaskLibrary().get("vector_add"), Settings())
        baseline = await judge.baseline()
        pool = env.gpu
        victim = pool.members[0]
        handed = asyncio.Event()  # the victim's actor has been sent a job (1.5 s long)
        back = asyncio.Event()
        call = pool._call

        async def call_and_say(member, method, *args):
            if member is victim and method == "validate":
                handed.set()
            return await call(member, method, *args)

        pool._call = call_and_say
        pool.listen(lambda line, _warning: back.set() if line.endswith(" is back") else None)
        jobs = [asyncio.ensure_future(judge.validate(baseline)) for _ in range(3)]
        await asyncio.wait_for(handed.wait(), 60)
        ray.kill(victim.handle, no_restart=False)  # its process dies; Ray starts it again
        verdicts = await asyncio.gather(*jobs)
        assert [v.status for v in verdicts] == ["correct"] * 3, "the job of the dead actor ran again"
        assert pool.requeued >= 1
        await asyncio.wait_for(back.wait(), 30)
        assert pool.revived == 1 and victim.state == "ready", pool.events
        slots = pool.size * QUIET.jobs_per_gpu  # as many jobs as the GPUs take at once: each gets some
        again = await asyncio.gather(*(judge.validate(baseline) for _ in range(slots)))
        assert {v.ran_on.node_id for v in again} == {m.ran_on.node_id for m in pool.members}
    finally:
        await env.close()


@dataclasses.dataclass(frozen=True)
class Faulty(FakeGpuFactory):
    """A fake GPU whose worker stops starting on one node, and whose actor raises on a kernel
    labelled as a bug (a fault in the job, not in the GPU)."""

    broken_node: str = ""

    def __call__(self, device_index, settings, log_dir=None):
        import ray

        from cuda_llm.engine.gpu.client import GpuUnavailable

        info = super().__call__(device_index, settings, log_dir).info
        broken = ray.get_runtime_context().get_node_id() == self.broken_node

        class FaultyGpu(OneJobAtATime):
            async def validate(self, task, program):
                if broken:
                    raise GpuUnavailable("GPU worker could not start: the GPU fell off the bus")
                if program.label.startswith("bug"):
                    raise ValueError("a bug in the job")
                return await super().validate(task, program)

        return FaultyGpu(info=info)


async def test_a_gpu_whose_worker_no_longer_starts_is_taken_out_and_a_faulty_job_is_not(ray_cluster):
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # for Faulty, defined here
    broken = next(iter(ray_cluster.worker_nodes)).node_id
    env = await open_env(ray_cluster, Faulty(broken_node=broken))
    try:
        judge = env.judge(TaskLibrary().get("vector_add"), Settings())
        baseline = await judge.baseline()
        pool = env.gpu
        verdicts = await asyncio.gather(*(judge.validate(baseline) for _ in range(6)))
        assert all(v.status == "correct" and v.ran_on.node_id != broken for v in verdicts)
        states = {m.ran_on.node_id: m.state for m in pool.members}
        assert states.pop(broken) == "dead" and set(states.values()) == {"ready"}
        assert any("gone: GPU worker could not start: the GPU fell off the bus" in e for e in pool.events), pool.events
        bug = dataclasses.replace(baseline, candidate=dataclasses.replace(baseline.candidate, label="bug-1"))
        verdict = await judge.validate(bug)
        assert verdict.status == "crashed" and "the GPU's actor failed: ValueError: a bug in the job" in verdict.message
        assert [m.state for m in pool.members].count("ready") == 2, "a fault of the job takes no GPU out"
    finally:
        await env.close()


async def test_nodes_that_cannot_judge_are_refused_with_one_line(ray_cluster, tmp_path, monkeypatch):
    # A fourth node where cuda-llm cannot be imported (a package of the same name shadows it there).
    shadow = tmp_path / "shadow"
    (shadow / "cuda_llm").mkdir(parents=True)
    (shadow / "cuda_llm" / "__init__.py").write_text("raise ImportError('No module named cuda_llm (test)')\n")
    monkeypatch.chdir(tmp_path)  # Ray puts the driver's folder on the nodes' path: not the checkout's
    node = add_gpu_node(ray_cluster, env_vars={"PYTHONPATH": str(shadow)})
    try:
        env = await open_env(ray_cluster)
        try:
            assert env.gpu.size == 3, "the three nodes with cuda-llm judge"
            refusals = [part for part in env.notice.split("; ") if part.startswith("refused")]
            assert len(refusals) == 1 and "cuda-llm is not installed there" in refusals[0], env.notice
        finally:
            await env.close()
        # The real GPU worker. On nodes without a CUDA driver (CI) every node is refused, in one line;
        # on a GPU machine (its nodes share its GPU) the three with cuda-llm judge with it.
        if gpu_unavailable_reason() is not None:
            with pytest.raises(ClusterError) as caught:
                await open_cluster_environment(Settings(), ray_cluster.address, cluster=QUIET)
            message = str(caught.value)
            assert "\n" not in message and message.startswith("no GPU of the Ray cluster")
            assert "cuda-llm is not installed there" in message and "GpuUnavailable" in message
        else:
            env = await open_cluster_environment(Settings(), ray_cluster.address, cluster=QUIET)
            try:
                assert env.gpu.size == 3 and "cuda-llm is not installed there" in env.notice, env.notice
            finally:
                await env.close()
    finally:
        ray_cluster.remove_node(node)


@dataclasses.dataclass(frozen=True)
class WhereTheTaskIs(FakeGpuFactory):
    """A fake GPU that says in its verdict which folder it loaded the task from."""

    def __call__(self, device_index, settings, log_dir=None):
        fake = super().__call__(device_index, settings, log_dir)

        class Telling(FakeGpu):
            async def validate(self, task, program):
                report = await super().validate(task, program)
                return dataclasses.replace(report, summary=str(task.folder))

        return Telling(info=fake.info)


async def test_the_users_own_task_reaches_the_nodes_through_ray(ray_cluster, tmp_path):
    mine = tmp_path / "my_tasks" / "my_vector_add"
    shutil.copytree(ROOT / "tasks" / "vector_add", mine, ignore=shutil.ignore_patterns("__pycache__"))
    toml = mine / "task.toml"
    toml.write_text(toml.read_text().replace('name = "vector_add"', 'name = "my_vector_add"'))
    task = TaskLibrary().get(str(mine))
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # for WhereTheTaskIs, defined here
    env = await open_env(ray_cluster, WhereTheTaskIs())
    try:
        judge = env.judge(task, Settings())
        report: ValidationReport = (await judge.validate(await judge.baseline())).validation
    finally:
        await env.close()
    folder = Path(report.summary)
    assert folder.name == "my_vector_add" and folder.parent.parent.name == "cluster-tasks"
    assert folder != mine, "the node loaded the task from its own copy, not from the driver's folder"


async def test_compiles_beyond_the_drivers_processes_go_to_the_cluster(ray_cluster):
    from cuda_llm.engine.cluster.compiler import ClusterCompiler
    from cuda_llm.engine.cluster.connection import connect
    from cuda_llm.engine.compile.compiler_pool import CompilerPool

    connection = await connect(ray_cluster.address)
    compiler = ClusterCompiler(CompilerPool(Settings().compile, workers=1))
    try:
        confined, detail = await compiler.sandbox()
        if not confined:
            pytest.skip(f"compiler actors refuse to compile unsandboxed, and here: {detail}")
        compiler.start_remote(1, Settings(), 120.0)
        assert await compiler.wait_remote() == 1, compiler.refused
        sources = [GOOD_KERNEL.replace("vadd4", f"vadd_{i}") for i in range(4)]
        results = await asyncio.gather(*(compiler.compile(s, "sm_90") for s in sources))
    finally:
        compiler.close()
        connection.close()
    assert all(r.ok and r.cubin and r.cubin[:4] == b"\x7fELF" for r in results)
    assert compiler.remote_compiles >= 1


async def test_doctor_reports_the_cluster_and_its_refusals(ray_cluster):
    from cuda_llm.engine.cluster.doctor import cluster_rows

    rows = await cluster_rows(ray_cluster.address)
    by_name = {name: (status, detail) for name, status, detail in rows}
    assert by_name["cluster"][0] == "ok" and "3 node(s), 3 GPU(s)" in by_name["cluster"][1]
    status, detail = by_name["cluster gpus"]
    if gpu_unavailable_reason() is not None:  # no CUDA driver on these nodes (CI)
        assert status == "fail" and "no GPU of the Ray cluster" in detail
    else:  # a GPU machine: its nodes share its GPU
        assert status == "ok" and detail.endswith("on 3 node(s) can judge"), detail
