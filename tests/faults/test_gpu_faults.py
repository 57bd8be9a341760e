"""The GPU half of the fault-injection suite: hostile kernels and benchmark cheats, each judged for
the right reason with the next good candidate judged normally afterwards; the GPU worker killed
mid-profile; and every case run again through one recorded FSR session whose database must hold
each candidate exactly once."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal

import pytest
from llm_servers import Reply

from cuda_llm.engine.core.settings import LoopSettings
from cuda_llm.engine.fsr.control import Controller
from cuda_llm.engine.fsr.session import SessionOptions, open_session
from cuda_llm.engine.store.sessions import SessionStore
from faults.hostile import CASES, PLAN, Hostile

pytestmark = pytest.mark.gpu


def check(case: Hostile, j) -> str:
    assert j.status == case.expect, f"{case.name}: {j.status}: {j.message}"
    if case.error:
        assert j.validation.fault.error == case.error, j.validation.fault
    if case.expect == "crashed":
        assert j.validation.fault.kind == "crashed" and "crashed" in j.message
    return f"{j.status}: {j.message}" + (f"; notes: {'; '.join(j.warnings)}" if j.warnings else "")


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.name, marks=pytest.mark.fault(c.group, c.name, c.expected_text)) for c in CASES]
)
def test_hostile_candidate(gpu, case, observed, fault_device):
    fault_device(gpu.env.device.name)
    j = gpu.judge("vector_add", case.source, case.plan or PLAN)
    if case.name == "printf a million times" and j.status == "timed_out":
        # A million device printfs can take longer than the launch limit: a timeout is a fair verdict
        # as long as the worker's protocol survived (it did: we got a verdict) and the next is fine.
        case = dataclasses.replace(case, expect="timed_out")
    seen = check(case, j)
    if case.name == "register-spilling kernel":
        assert any("spills registers" in w for w in j.warnings), j.warnings
    if case.name == "printf a million times" and j.status == "correct":
        assert any("printed" in w for w in j.warnings), j.warnings
    if case.name.startswith("caching results"):
        assert any("__device__ global" in w for w in j.warnings), j.warnings
    good = gpu.judge("vector_add")
    assert good.status == "correct", f"after {case.name}: {good.message}"
    observed(seen + "; next candidate: correct")


@pytest.mark.fault(
    "process and machine", "SIGKILL of the GPU worker mid-profile", "timing redone on a fresh worker; the round goes on"
)
def test_worker_killed_mid_profile(gpu, observed, monkeypatch):
    from cuda_llm.engine.gpu.protocol import ProfileRequest

    task = gpu.task("gemm_fp16")  # 31 ms a run on an H200: a profile lasts about a second
    judge = gpu.env.judge(task, gpu.settings)
    worker = gpu.env.gpu.workers[0]
    # The kill waits for the profile request to be in the worker's pipe (then the worker is timing, or
    # about to), not for a guessed time.
    sent = asyncio.Event()
    exchange = worker._exchange

    async def exchange_and_say(message, timeout_s):
        if isinstance(message, ProfileRequest) and not sent.is_set():
            stdin = worker._proc.stdin
            drain = stdin.drain

            async def drained() -> None:
                await drain()
                sent.set()

            stdin.drain = drained
        return await exchange(message, timeout_s)

    monkeypatch.setattr(worker, "_exchange", exchange_and_say)

    async def go():
        from cuda_llm.engine.judge.judgement import Candidate

        compiled = await judge.compile(Candidate("cand", task.baseline_source, task.baseline_plan))
        verdict = await judge.validate(compiled)
        timing = asyncio.ensure_future(judge.profile([(compiled, verdict)]))
        await asyncio.wait_for(sent.wait(), 60)
        os.kill(worker._proc.pid, signal.SIGKILL)
        return await timing, worker.restarts

    before = worker.restarts
    rt, restarts = gpu.run(go())
    assert restarts > before, "the worker was started again"
    assert any("interrupted" in n for n in rt.notes), rt.notes
    j = rt.judgements[0]
    assert j.status == "correct" and j.timing is not None and rt.baseline is not None
    observed(f"timing interrupted ({rt.notes[0]}); redone: {j.message}")


@pytest.mark.fault(
    "process and machine",
    "the whole GPU suite in one recorded session",
    "every candidate recorded exactly once; PRAGMA integrity_check ok",
)
def test_every_case_in_one_session(gpu, llm_server, tmp_path, observed):
    replies = [c for c in CASES if c.plan is None]  # the plan is the model's; these share the default
    by_seed = {}

    def reply_for(request):
        seed = request.body.get("options", {}).get("seed", 0) - 7919  # round 1, attempt 0: seed 7919 + slot
        case = replies[seed]
        by_seed[seed] = case
        return Reply.text(f"{case.name}\n\n```cuda\n{case.source}\n```\n\n```json\n{json.dumps(PLAN)}\n```\n")

    llm_server.default = reply_for
    settings = LoopSettings(candidates=len(replies), rounds=1, repairs=0, patience=None, target_roofline=None)
    settings = dataclasses.replace(settings, generate=dataclasses.replace(settings.generate, seed=0))
    db = tmp_path / "faults.db"
    opts = SessionOptions(task="vector_add", model="ollama:loop-model", loop=settings, db=str(db), host=llm_server.url)

    async def go():
        session = await open_session(opts, Controller(stop_when_paused=True), environment=gpu.env)
        try:
            return await session.run()
        finally:
            await session.provider.close()
            session.store.close()

    result = gpu.run(go())
    assert result.status == "finished", result.reason
    store = SessionStore(db)
    try:
        cands = store.candidates(result.session_id)
        labels = [c.label for c in cands]
        assert len(labels) == len(set(labels)) == len(replies) + 1  # the baseline too
        for c in cands:
            if c.label == "baseline":
                continue
            case = replies[c.slot]
            allowed = {case.expect, "suspect"} if case.expect == "correct" else {case.expect}
            if case.name == "printf a million times":
                allowed.add("timed_out")  # printing can outlast the launch limit (see test_hostile_candidate)
            assert c.status in allowed, (c.label, c.message)
        assert store.integrity_ok()
    finally:
        store.close()
    observed(f"{len(labels)} candidates, each recorded once; integrity_check ok; statuses as expected")
