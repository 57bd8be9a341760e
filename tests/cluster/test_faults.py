"""Faults on a real local Ray cluster: a node lost in the middle of a round loses and duplicates
nothing, and a cluster that goes away pauses the session with one line, resumable on another."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import socket
import sqlite3
from collections import Counter

import pytest
from fakes.fake_gpu import FakeGpuFactory
from ray_nodes import QUIET, require_ray, start_cluster
from scripted import numbered, reply
from session_driver import Recorder, options, run_session

from cuda_llm.engine.cluster.cluster_environment import open_cluster_environment
from cuda_llm.engine.cluster.cluster_settings import ClusterSettings
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.gpu.client import GpusLost
from cuda_llm.engine.task import TaskLibrary

LABELS = [f"r1-{i}" for i in range(1, 9)]


async def open_env(address: str, factory: FakeGpuFactory | None = None, cluster: ClusterSettings = QUIET):
    factory = factory or FakeGpuFactory()
    return await open_cluster_environment(Settings(), address, worker_factory=factory, cluster=cluster)


def judged_rows(db) -> list[tuple[str, str | None, str | None]]:
    con = sqlite3.connect(db)
    try:
        query = "SELECT label, status, node FROM candidates WHERE label LIKE 'r1-%' ORDER BY label"
        return con.execute(query).fetchall()
    finally:
        con.close()


def replies(db) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT label FROM candidates WHERE reply IS NOT NULL AND label LIKE 'r1-%'")]
    finally:
        con.close()


async def run_and_strike(
    tmp_path, llm_server, address: str, strike, candidates: int, cluster_settings=QUIET, job_s: float = 1.5
):
    """A one-round session of `candidates` on the cluster's (fake, `job_s` a job) GPUs, with `strike`
    run while they validate. Returns (the result, every event, the pool)."""
    llm_server.default = numbered(reply())  # as many programs as candidates, none a repeat
    env = await open_env(address, FakeGpuFactory(delay_s=job_s), cluster_settings)
    recorder = Recorder()
    hook = kill_when_validating(recorder, strike, env.gpu)
    result, _ = await run_session(
        options(tmp_path, "ollama:loop-model", candidates=candidates, rounds=1),
        host=llm_server.url,
        environment=env,
        recorder=hook,  # type: ignore[arg-type]
    )
    assert hook.fired, "no GPU of the pool was sent a validation: the strike never ran"  # type: ignore[attr-defined]
    await asyncio.gather(*hook.fired)  # type: ignore[attr-defined]
    return result, recorder, env.gpu


def kill_when_validating(recorder: Recorder, action, pool) -> Recorder:
    """Run `action` (in a thread) once the pool has sent every GPU a candidate's validation: each is
    then in the middle of one (a job lasts seconds). The baseline's, which comes first, does not count:
    the candidates' replies are recorded by then."""
    fired: list[asyncio.Task] = []
    handed: set[int] = set()
    call = pool._call

    async def call_and_strike(member, method, job, *rest):
        if method == "validate" and not job[1].trusted and not fired:  # job: (the task shipped, the program)
            handed.add(id(member))
            if len(handed) == len(pool.members):
                fired.append(asyncio.get_running_loop().create_task(asyncio.to_thread(action)))
        return await call(member, method, job, *rest)

    pool._call = call_and_strike

    def on_event(event: ev.Event) -> None:
        recorder(event)

    on_event.fired = fired  # type: ignore[attr-defined]
    return on_event  # type: ignore[return-value]


async def test_a_node_lost_mid_round_loses_and_duplicates_nothing(tmp_path, llm_server):
    require_ray()
    cluster = start_cluster(3)
    try:
        victim = next(n for n in cluster.worker_nodes)

        def strike() -> None:
            cluster.remove_node(victim, allow_graceful=False)

        result, recorder, pool = await run_and_strike(tmp_path, llm_server, cluster.address, strike, candidates=8)
    finally:
        cluster.shutdown()
    assert result.status == "finished", result.reason
    assert pool.requeued >= 1, "the lost node held a validation, and it ran again elsewhere"
    validated = Counter(e.judgement.label for e in recorder.of(ev.CandidateJudged) if e.stage == "validate")
    assert validated == Counter(LABELS), "every candidate judged exactly once"
    profiled = [
        e.judgement for e in recorder.of(ev.CandidateJudged) if e.stage == "profile" and e.judgement.label in LABELS
    ]
    assert sorted(j.label for j in profiled) == LABELS and all(j.status == "correct" for j in profiled)
    assert victim.node_id not in {j.ran_on.node_id for j in profiled}, "nothing timed on the lost node"
    notices = [e.message for e in recorder.of(ev.Notice)]
    assert any(" lost: " in n or " gone: " in n for n in notices), f"the loss was said: {notices}"
    said = [
        i
        for i, e in enumerate(recorder.events)
        if isinstance(e, ev.Notice) and (" lost: " in e.message or " gone: " in e.message)
    ]
    checked = [
        i
        for i, e in enumerate(recorder.events)
        if isinstance(e, ev.CandidateJudged) and e.stage == "validate" and e.judgement.label in LABELS
    ]
    # The lost validation runs again elsewhere, so the round's last validation comes after the loss.
    assert said[0] < checked[-1], "the loss is said when it happens, not at the round's timing"
    loss = recorder.events[said[0]].message
    assert victim.node_id[:8] in loss, f"the node is named by its id: {loss}"
    assert "another GPU" in loss or "the other GPUs" in loss, f"what cuda-llm did about it: {loss}"
    assert "Error" not in loss and "\n" not in loss, f"in our words, not Ray's: {loss}"
    print(f"\nthe loss as said: {loss}")
    rows = judged_rows(tmp_path / "sessions.db")
    assert [r[0] for r in rows] == LABELS and all(r[1] == "correct" and r[2] for r in rows)


async def test_with_every_gpu_out_of_reach_the_session_pauses_after_the_grace(tmp_path, llm_server):
    require_ray()
    cluster = start_cluster(2, head_gpus=0)  # the head stays; the only GPU machine goes
    try:
        gpu_node = cluster.worker_nodes.copy().pop()

        def strike() -> None:
            cluster.remove_node(gpu_node, allow_graceful=False)

        settings = dataclasses.replace(QUIET, lost_grace_s=3.0)
        result, recorder, _ = await run_and_strike(tmp_path, llm_server, cluster.address, strike, 2, settings)
    finally:
        cluster.shutdown()
    assert result.status == "paused"
    assert "no GPU of the session answered for 3 s" in result.reason and "\n" not in result.reason
    assert result.reason.startswith("the GPU nodes of the Ray cluster at"), (
        "not 'lost the Ray cluster': the head is fine"
    )
    notices = [e.message for e in recorder.of(ev.Notice)]
    assert any("every GPU of the session is out of reach" in n for n in notices), f"said at once: {notices}"
    rows = judged_rows(tmp_path / "sessions.db")
    assert [r[1] for r in rows] == [None, None], "the candidates in flight wait, unjudged, for the resume"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_cluster_that_goes_away_pauses_the_session_and_it_resumes(tmp_path, llm_server):
    require_ray()
    port = free_port()
    cluster = start_cluster(2, client_port=port)
    address = f"ray://127.0.0.1:{port}"  # a Ray client, as from a workstation outside the cluster
    try:
        # 8 s a job, 8 jobs on 2 GPUs: the round outlasts a shutdown slowed by a loaded machine, so
        # candidates are still in flight at the pause (at 4 s a job, two busy loops on this 2-core VM
        # once let every job end first). The jobs in flight end with the cluster: no wait for them.
        result, _, _ = await run_and_strike(tmp_path, llm_server, address, cluster.shutdown, candidates=8, job_s=8.0)
    finally:
        cluster.shutdown()
    assert result.status == "paused"
    # Ray's Cluster.shutdown takes the GPU nodes down before the head: the pause says either.
    assert "\n" not in result.reason and result.reason.startswith(
        (f"lost the Ray cluster at {address}", f"the GPU nodes of the Ray cluster at {address}")
    )
    assert result.reason.endswith(("resumable", "once they are back")), result.reason
    ray = require_ray()
    # Ray starts a local instance by itself when a call finds no connection: nothing of the lost
    # session may make one, or the resume below would judge on this machine's fake Ray.
    assert not ray.is_initialized(), "a call after the cluster went away started Ray here"
    at_pause = {label: status for label, status, _node in judged_rows(tmp_path / "sessions.db")}
    replied = set(replies(tmp_path / "sessions.db"))
    assert any(at_pause.get(label) is None for label in replied), "the candidates in flight wait for the resume"

    # Another cluster (the same one, restarted, would do as well): the session goes on from there.
    cluster = start_cluster(2)
    try:
        env = await open_env(cluster.address)
        opts = options(tmp_path, "ollama:loop-model", candidates=8, rounds=1)
        resumed = dataclasses.replace(opts, resume=result.session_id)
        served = len(llm_server.chat_requests)
        again, rec = await run_session(resumed, host=llm_server.url, environment=env)
    finally:
        cluster.shutdown()
    assert again.status == "finished", again.reason
    asked = len(llm_server.chat_requests) - served
    assert asked == len(set(LABELS) - replied), "only the replies not recorded before the pause are asked for"
    judged_now = Counter(e.judgement.label for e in rec.of(ev.CandidateJudged) if e.stage == "validate")
    assert all(judged_now[label] == 1 for label in LABELS)
    rows = judged_rows(tmp_path / "sessions.db")
    assert [r[0] for r in rows] == LABELS and all(r[1] == "correct" for r in rows)


def object_refs_reachable(root: object) -> int:
    """How many Ray ObjectRefs can be reached from `root` through Python references."""
    import ray

    seen, stack, found = set(), [root], 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        if isinstance(obj, ray.ObjectRef):
            found += 1
        stack.extend(gc.get_referents(obj))
    return found


async def test_a_closed_session_holds_nothing_of_the_object_store():
    """Ray gives the same object IDs again to the next connection of a process (a second session in
    the TUI, the next test). A reference kept past its session and freed during the next one freed
    that session's task files, and its next job failed with "owner is unknown"."""
    require_ray()
    cluster = start_cluster(2)
    try:
        env = await open_env(cluster.address)
        pool = env.gpu
        try:
            judge = env.judge(TaskLibrary().get("vector_add"), Settings())
            assert (await judge.validate(await judge.baseline())).status == "correct"
            assert object_refs_reachable(pool) >= 1, "its task files are shipped"
        finally:
            await env.close()
    finally:
        cluster.shutdown()
    assert object_refs_reachable(pool) == 0, "kept past its session, as a screen keeps what it showed"


def give_up_as_a_ray_client_does() -> None:
    """What a Ray client does half a minute after its cluster went away (ray/util/client/worker.py):
    its worker shuts down, but the process still counts it among its client connections."""
    import ray.util.client

    ray.util.client.ray.get_context().client_worker.close()


async def test_a_client_that_gave_up_pauses_the_session_and_leaves_the_process_ready_for_the_next():
    """A Ray client gives up on a cluster gone for half a minute; from then on every call raises a bare
    Exception. Jobs then pause the session with one line, closing it raises nothing, and the next
    connection of this process, as a client or as a driver, connects: the client that gave up stayed
    registered, and the next ray.init failed ("already connected with allow_multiple=True", or an
    AssertionError inside Ray), which failed a resume after a pause."""
    ray = require_ray()
    port = free_port()
    cluster = start_cluster(2, client_port=port)
    try:
        address = f"ray://127.0.0.1:{port}"
        env = await open_env(address)
        judge = env.judge(TaskLibrary().get("vector_add"), Settings())
        baseline = await judge.baseline()
        assert (await judge.validate(baseline)).status == "correct"
        give_up_as_a_ray_client_does()
        assert not ray.is_initialized()
        with pytest.raises(GpusLost) as lost:
            await judge.validate(baseline)
        assert str(lost.value).startswith(f"lost the Ray cluster at {address}: the connection closed")
        assert "\n" not in str(lost.value)
        await env.close()
        for again in (cluster.address, address):  # as a driver on the cluster, then as a client
            env = await open_env(again)  # the closed session's actors are its orphans
            try:
                judge = env.judge(TaskLibrary().get("vector_add"), Settings())
                assert (await judge.validate(await judge.baseline())).status == "correct", again
            finally:
                await env.close()
    finally:
        cluster.shutdown()


pytestmark = pytest.mark.slow
