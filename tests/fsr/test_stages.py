"""A stage (the step of judging) and a status (its outcome) are two names: none is both, an event
refuses a status where a stage belongs, and a candidate on its way to the GPU is announced by an event
that carries no verdict (engine/core/status.py, engine/fsr/events.py)."""

from __future__ import annotations

import dataclasses
from typing import get_args

import pytest
from fakes.fake_gpu import FakeGpu, fake_environment
from scripted import chunked, reply
from session_driver import options, run_session

from cuda_llm.app.state import RESTORED_STAGE, SessionView, restored_events
from cuda_llm.engine.core.status import STAGES, STATUSES, Stage, Status
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.judge.judgement import Judgement
from cuda_llm.engine.store.sessions import SessionStore


def test_no_stage_is_named_as_a_status():
    assert get_args(Stage) == STAGES and set(STATUSES) == set(get_args(Status))
    assert not set(STAGES) & set(STATUSES), set(STAGES) & set(STATUSES)


@pytest.mark.parametrize("status", sorted(STATUSES))
def test_a_status_given_as_a_stage_is_refused(status):
    j = Judgement("r1-1", "compile_error", "error: x")
    with pytest.raises(ValueError, match="is not a stage of judging"):
        ev.CandidateJudged(1, status, j)  # type: ignore[arg-type]  # the mix-up this test is about


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_is_accepted(stage):
    assert ev.CandidateJudged(1, stage, Judgement("r1-1", "correct", "ok")).stage == stage


def _events_of(rec, label: str) -> list[ev.Event]:
    return [
        e
        for e in rec.events
        if (isinstance(e, ev.ValidationStarted) and e.label == label)
        or (isinstance(e, ev.CandidateJudged) and e.judgement.label == label)
    ]


async def test_a_gpu_session_sends_a_candidate_to_validation_without_a_verdict(tmp_path, llm_server):
    llm_server.default = chunked(reply())
    opts = dataclasses.replace(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), compile_only=False)
    result, rec = await run_session(opts, host=llm_server.url, environment=fake_environment(FakeGpu()))
    assert result.status == "finished", result.reason
    events = _events_of(rec, "r1-1")
    # Sent (no verdict), validated ("correct"), then timed: the first verdict is the GPU's.
    assert [type(e).__name__ for e in events] == ["ValidationStarted", "CandidateJudged", "CandidateJudged"], events
    sent, validated, profiled = events
    assert isinstance(sent, ev.ValidationStarted) and sent.compile.ok and sent.candidate.label == "r1-1"
    assert isinstance(validated, ev.CandidateJudged) and isinstance(profiled, ev.CandidateJudged)
    assert (validated.stage, validated.judgement.status) == ("validate", "correct")
    assert profiled.stage == "profile" and profiled.judgement.timing is not None
    assert not [e for e in rec.of(ev.CandidateJudged) if e.judgement.status == "compiled"]


async def test_a_compile_only_session_gives_its_verdict_at_once(tmp_path, llm_server):
    llm_server.default = chunked(reply())
    result, rec = await run_session(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), host=llm_server.url)
    assert result.status == "finished", result.reason
    assert not rec.of(ev.ValidationStarted)  # no GPU: nothing is sent to one
    (judged,) = _events_of(rec, "r1-1")
    assert isinstance(judged, ev.CandidateJudged)
    assert (judged.stage, judged.judgement.status) == ("validate", "compiled")
    # Read back as a resumed or opened session reads it: the stored verdict, folded in as "restore".
    store = SessionStore(tmp_path / "sessions.db")
    try:
        (record,) = [c for c in store.candidates(result.session_id) if c.label == "r1-1"]
    finally:
        store.close()
    assert record.judgement is not None and record.judgement.status == "compiled"
    view = SessionView()
    view.compile_only = True
    history = ev.HistoryRestored(
        1, (ev.RestoredCandidate("r1-1", 1, 0, 0, "a reply", record.judgement),), (), (), record.judgement, 0
    )
    restored = [e for e in restored_events(history) if isinstance(e, ev.CandidateJudged)]
    assert [e.stage for e in restored] == [RESTORED_STAGE] == ["restore"]
    for e in restored_events(history):
        view.apply(e)
    assert view.candidates["r1-1"].state == "compiled" and view.candidates["r1-1"].phase == "judged"
