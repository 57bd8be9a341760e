"""The counters step in the FSR loop (CPU: the fake GPU, the loopback model server, ncu's recorded
output replayed where ncu would run): the best's "what limits it" reaches the next round's prompt and
the store; "all" reads every correct candidate; "off" reads none; a machine without counters says so
in one line and the session goes on without them."""

from __future__ import annotations

import dataclasses
import os
import stat
import sys
from pathlib import Path

import pytest
from fakes.fake_gpu import FakeGpu, FakeGpuPool, fake_environment
from recorded_outputs import RECORDED
from scripted import GOOD_KERNEL, GOOD_PLAN, chunked, numbered, reply
from session_driver import Recorder, options, run_session

from cuda_llm.app.cli.report import markdown, session_report
from cuda_llm.engine.core.settings import CountersSettings, Settings
from cuda_llm.engine.counters.runner import NcuCounters
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.control import Controller
from cuda_llm.engine.fsr.session import open_session
from cuda_llm.engine.judge import judge_environment
from cuda_llm.engine.store.sessions import SessionStore

REPLAY = Path(__file__).parent / "replay_ncu.py"
FAST = "vadd4_us40"  # the fake GPU times it at 40 us (the baseline at 100)
FAST_REPLY = reply(GOOD_KERNEL.replace("vadd4", FAST), {"launches": [dict(GOOD_PLAN["launches"][0], kernel=FAST)]})


@pytest.fixture
def replayed_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    exe = tmp_path / "ncu"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{REPLAY}" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("REPLAY_NCU_STATE", str(tmp_path / "runs"))
    monkeypatch.setenv("REPLAY_NCU_LOGS", str(RECORDED / "h200_vector_add_baseline.csv"))
    return exe


async def session(tmp_path, llm_server, mode: str, ncu: Path | None, candidates: int = 1, rounds: int = 2):
    llm_server.default = numbered(FAST_REPLY)  # each candidate another program, none a repeat
    settings = Settings(counters=CountersSettings(mode=mode, ncu_path=str(ncu) if ncu else None))  # type: ignore[arg-type]
    env = fake_environment(FakeGpu())
    if ncu is not None:
        env = dataclasses.replace(env, counters=NcuCounters(settings.counters, settings.validation))
    opts = options(tmp_path, "ollama:loop-model", candidates=candidates, rounds=rounds)
    result, rec = await run_session(
        dataclasses.replace(opts, compile_only=False), host=llm_server.url, environment=env, settings=settings
    )
    prompts = [c.messages[-1]["content"] for c in llm_server.chat_requests]
    return result, rec, prompts


async def test_the_new_best_s_limits_reach_the_next_prompt_and_the_store(tmp_path, llm_server, replayed_ncu):
    result, rec, prompts = await session(tmp_path, llm_server, "best", replayed_ncu)
    assert result.status == "finished"
    (read,) = rec.of(ev.CountersRead)  # round 1's new best; round 2's best is the same kernel
    assert read.is_best and read.judgement.label == "r1-1"
    assert read.judgement.counters.ok
    assert "what limits it" not in prompts[0]
    assert "Hardware counters of this kernel" in prompts[1]
    assert "- what limits it: memory-bound: DRAM at 70% of peak (SM 42%)" in prompts[1]
    assert "- vector_add: 116.3 us, DRAM 70% / SM 42% of peak" in prompts[1]  # the launch as ncu named it
    store = SessionStore(tmp_path / "sessions.db")
    try:
        stored = {r.label: r.judgement for r in store.candidates(result.session_id)}
        report = session_report(store, result.session_id)
    finally:
        store.close()
    assert stored["r1-1"].counters == read.judgement.counters
    # The session's report and its Markdown (what `export` writes) carry them.
    assert report["best"]["counters"]["line"].startswith("what limits it: memory-bound: DRAM at 70% of peak")
    assert report["best"]["counters"]["kernels"][0]["values"]["dram__bytes_read.sum"] == 268_457_984
    assert "- hardware counters of the best: what limits it: memory-bound: DRAM at 70%" in markdown(report)
    row = next(h for h in report["history"] if h["label"] == "r1-1")
    assert row["counters"] == report["best"]["counters"]["line"]


async def test_all_reads_every_correct_candidate(tmp_path, llm_server, replayed_ncu):
    _result, rec, _prompts = await session(tmp_path, llm_server, "all", replayed_ncu, candidates=2, rounds=1)
    assert sorted((e.judgement.label, e.is_best) for e in rec.of(ev.CountersRead)) == [
        ("r1-1", True),
        ("r1-2", False),
    ]
    assert int((tmp_path / "runs").read_text()) == 2


async def test_off_reads_none(tmp_path, llm_server, replayed_ncu):
    _result, rec, prompts = await session(tmp_path, llm_server, "off", replayed_ncu)
    assert rec.of(ev.CountersRead) == []
    assert not (tmp_path / "runs").exists()
    assert "Hardware counters" not in prompts[1]


async def test_a_machine_without_counters_says_so_once_and_the_session_goes_on(tmp_path, llm_server):
    os.environ.pop("CUDA_LLM_NCU", None)
    result, rec, prompts = await session(tmp_path, llm_server, "all", None, candidates=2, rounds=2)
    assert result.status == "finished" and len(prompts) == 4
    (read,) = rec.of(ev.CountersRead)
    assert read.judgement.counters.unavailable is not None
    assert "Hardware counters" not in prompts[2]


async def test_the_run_option_sets_the_mode(tmp_path, llm_server, replayed_ncu):
    """`run --counters off` (SessionOptions.counters) wins over the settings' own mode."""
    llm_server.default = chunked(FAST_REPLY)
    settings = Settings(counters=CountersSettings(mode="all", ncu_path=str(replayed_ncu)))
    env = dataclasses.replace(fake_environment(FakeGpu()), counters=NcuCounters(settings.counters, settings.validation))
    opts = dataclasses.replace(
        options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), compile_only=False, counters="off"
    )
    _result, rec = await run_session(opts, host=llm_server.url, environment=env, settings=settings)
    assert rec.of(ev.CountersRead) == []


async def test_on_demand_counters_of_a_candidate_whatever_the_setting(tmp_path, llm_server, replayed_ncu):
    """The TUI's key: FsrLoop.read_counters_of reads one correct candidate's counters, records and
    announces them; a label that is no correct candidate gets None."""
    llm_server.default = chunked(FAST_REPLY)
    settings = Settings(counters=CountersSettings(mode="off", ncu_path=str(replayed_ncu)))
    env = dataclasses.replace(fake_environment(FakeGpu()), counters=NcuCounters(settings.counters, settings.validation))
    opts = dataclasses.replace(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), compile_only=False)
    rec = Recorder()
    session = await open_session(
        dataclasses.replace(opts, host=llm_server.url),
        Controller(auto_accept=True, stop_when_paused=True),
        settings=settings,
        environment=env,
    )
    session.bus.subscribe(rec)
    try:
        await session.run()
        assert rec.of(ev.CountersRead) == []  # mode off
        read = await session.read_counters("r1-1")
        assert await session.read_counters("no-such-label") is None
        stored = {r.label: r.judgement for r in session.store.candidates(session.id)}
    finally:
        await session.close()
    assert read is not None and read.counters is not None and read.counters.ok
    (event,) = rec.of(ev.CountersRead)
    assert event.judgement == read and event.is_best
    assert stored["r1-1"].counters == read.counters


async def test_a_session_opened_as_on_a_gpu_whose_first_kernel_is_near_the_roofline_carries_its_counters(
    tmp_path, llm_server, replayed_ncu, monkeypatch
):
    """The GPU test's session on the fake GPU, opened the same way: no environment given, so the real
    open_environment builds it (its ncu reader found through $CUDA_LLM_NCU), with the same options().
    Round 1's kernel reaches 91% of the achievable roofline, as the float4 add's 92.6% on an H200 did:
    the 90% target stopped that session after round 1, and its second prompt never came."""
    monkeypatch.setattr(judge_environment, "gpu_unavailable_reason", lambda: None)
    monkeypatch.setattr(judge_environment, "visible_gpu_count", lambda: 1)
    monkeypatch.setattr(judge_environment, "GpuPool", FakeGpuPool)
    monkeypatch.setenv("CUDA_LLM_NCU", str(replayed_ncu))
    near = "vadd4_us22"  # vector_add's floor at the fake's 20 TB/s is 20.1 us
    llm_server.default = chunked(
        reply(GOOD_KERNEL.replace("vadd4", near), {"launches": [dict(GOOD_PLAN["launches"][0], kernel=near)]})
    )
    opts = dataclasses.replace(options(tmp_path, "ollama:loop-model", candidates=1, rounds=2), compile_only=False)
    result, rec = await run_session(opts, host=llm_server.url)
    assert result.status == "finished"
    reads = rec.of(ev.CountersRead)
    assert reads and reads[0].is_best and reads[0].judgement.counters.ok
    assert reads[0].judgement.figures.roofline_share >= 0.9
    second = llm_server.chat_requests[1].messages[-1]["content"]
    assert "Hardware counters of this kernel" in second and "- what limits it: memory-bound: DRAM at 70%" in second
