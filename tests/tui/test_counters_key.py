"""The run screen's `c`: the shown candidate's hardware counters, read by the engine while the session
waits for a decision, and what limits it in the validation pane (ncu's recorded output replayed where
ncu would run: tests/counters/replay_ncu.py)."""

from __future__ import annotations

import dataclasses
import stat
import sys
from pathlib import Path

from fakes.fake_gpu import FakeGpu, fake_environment

from cuda_llm.app.app import CudaLlmApp
from cuda_llm.app.options import Defaults, SessionRequest
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.engine.core.settings import CountersSettings, ValidationSettings
from cuda_llm.engine.counters.runner import NcuCounters
from cuda_llm.engine.fsr.session import SessionOptions
from cuda_llm.engine.store.sessions import SessionStore

from .helpers import FAST_LOOP, by_request, screen_text, streamed, wait_for

COUNTERS = Path(__file__).resolve().parents[1] / "counters"


async def test_c_reads_the_shown_candidate_s_counters(tmp_path, llm_server, monkeypatch):
    exe = tmp_path / "ncu"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{COUNTERS / "replay_ncu.py"}" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("REPLAY_NCU_STATE", str(tmp_path / "runs"))
    monkeypatch.setenv("REPLAY_NCU_LOGS", str(COUNTERS / "recorded" / "h200_vector_add_baseline.csv"))
    llm_server.default = by_request({}, default=streamed("vadd_us40"))

    async def environment(_options):
        reader = NcuCounters(CountersSettings(ncu_path=str(exe)), ValidationSettings())
        return dataclasses.replace(fake_environment(FakeGpu()), counters=reader)

    db = tmp_path / "sessions.db"
    loop = dataclasses.replace(FAST_LOOP, candidates=1, rounds=1)
    options = SessionOptions("vector_add", "ollama:loop-model", loop=loop, db=str(db), host=llm_server.url)
    app = CudaLlmApp(
        Defaults(db=str(db), host=llm_server.url, loop=loop, arch="sm_90"),
        SessionRequest(options, auto_accept=False),
        config_path=tmp_path / "tui.toml",
        environment_factory=environment,
        poll_telemetry=False,
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: app.screen.view.awaiting is not None, "the round's winner waiting")
        assert app.screen.view.focused().label == "r1-1"
        assert "what limits it" not in screen_text(app, "#validation-summary")
        await pilot.press("c")
        await wait_for(pilot, lambda: "what limits it" in screen_text(app, "#validation-summary"), "the counters line")
        shown = screen_text(app, "#validation-summary")
        assert "what limits it: memory-bound: DRAM at 70% of peak" in shown
    store = SessionStore(db)
    try:
        (sid,) = [s.id for s in store.sessions()]
        stored = {c.label: c.judgement for c in store.candidates(sid)}
    finally:
        store.close()
    assert stored["r1-1"].counters is not None and stored["r1-1"].counters.ok
