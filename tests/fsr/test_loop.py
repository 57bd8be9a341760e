"""The FSR loop end to end, compile-only (no GPU), against the loopback model servers through the real
ollama and openai client libraries, recording into a real SQLite store."""

from __future__ import annotations

import pytest
from llm_servers import Reply
from scripted import BROKEN_KERNEL, chunked, reply
from session_driver import options, run_session

from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.store.sessions import SessionStore


async def test_compile_error_reaches_the_repair_prompt(tmp_path, llm_server):
    llm_server.script(
        chunked(reply(BROKEN_KERNEL)),
        chunked(reply(BROKEN_KERNEL)),  # round 1: both fail to compile
        chunked(reply()),
        chunked(reply()),  # the repair: both compile
    )
    result, rec = await run_session(
        options(tmp_path, "ollama:loop-model", candidates=2, rounds=1, repairs=2), host=llm_server.url
    )
    assert result.status == "finished"
    chats = llm_server.chat_requests
    assert len(chats) == 4, "two first requests, two repair requests, and no second repair"
    repair_prompt = chats[2].messages[-1]["content"]
    assert "None of the last candidates was correct" in repair_prompt
    assert "undefined_thing" in repair_prompt and "compile error" in repair_prompt
    assert "line 7" in repair_prompt  # the error's line in the candidate, as NVRTC reports it
    assert "undefined_thing" not in chats[0].messages[-1]["content"]
    assert rec.final_statuses() == {
        "baseline": "compiled",
        "r1-1": "compile_error",
        "r1-2": "compile_error",
        "r1-fix1-1": "compiled",
        "r1-fix1-2": "compiled",
    }


async def test_format_error_is_explained_to_the_model(tmp_path, llm_server):
    llm_server.script(chunked(reply(plan=None)), chunked(reply()))
    llm_server.default = chunked(reply())
    _result, rec = await run_session(
        options(tmp_path, "ollama:loop-model", candidates=1, rounds=1, repairs=1), host=llm_server.url
    )
    first = next(e.judgement for e in rec.of(ev.CandidateJudged) if e.judgement.label == "r1-1")
    assert first.status == "format_error" and "plan" in first.message
    repair = llm_server.chat_requests[1].messages[-1]["content"]
    assert "format error" in repair and first.message in repair


async def test_n_requests_of_a_round_run_concurrently(tmp_path, llm_server):
    # Each reply waits until the round's four requests have all arrived, however slow the machine: a
    # round that sent them one after another would never send the second while the first waits.
    llm_server.default = Reply.gathered(4, reply())
    result, _rec = await run_session(
        options(tmp_path, "ollama:loop-model", candidates=4, rounds=1), host=llm_server.url
    )
    assert result.status == "finished"
    assert llm_server.peak_concurrency == 4
    chats = llm_server.chat_requests
    assert all(a.overlaps(b) for a in chats for b in chats if a is not b)


async def test_openai_protocol_and_the_key_never_reaches_the_database(tmp_path, llm_server, monkeypatch):
    secret = "sk-test-SENTINEL-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    llm_server.default = chunked(reply())
    result, _rec = await run_session(
        options(tmp_path, "openai:loop-model", candidates=2, rounds=2), base_url=llm_server.openai_url
    )
    assert result.status == "finished"
    assert any(r.headers.get("authorization") == f"Bearer {secret}" for r in llm_server.chat_requests)
    db = tmp_path / "sessions.db"
    store = SessionStore(db)
    store.close()  # checkpoint the WAL into the main file before reading its bytes
    for path in tmp_path.iterdir():
        assert secret.encode() not in path.read_bytes(), f"the API key leaked into {path.name}"


def _server_gone_after_the_check(monkeypatch) -> None:
    """The server answered the pre-session check (engine/llm/preflight.py) and then went away, or lost
    the model: what a session meets mid-way. (A server already gone refuses the session: test_preflight.)"""
    from cuda_llm.engine.fsr import session

    async def answered(provider) -> None:
        return None

    monkeypatch.setattr(session, "check_model", answered)


async def test_unreachable_server_pauses_and_loses_nothing(tmp_path, refused_url, monkeypatch):
    _server_gone_after_the_check(monkeypatch)
    result, rec = await run_session(options(tmp_path, "ollama:loop-model", candidates=2, rounds=2), host=refused_url)
    assert result.status == "paused"
    assert refused_url in result.reason and "ollama" in result.reason
    store = SessionStore(tmp_path / "sessions.db")
    try:
        s = store.session(result.session_id)
        assert s.status == "paused" and refused_url in s.status_message
        assert store.prompt(result.session_id, 1, 0) is not None, "the prompt was recorded before the failure"
    finally:
        store.close()
    assert rec.of(ev.ModelFailed) and rec.of(ev.SessionPaused)


async def test_unknown_model_says_how_to_get_it(tmp_path, llm_server, monkeypatch):
    _server_gone_after_the_check(monkeypatch)
    llm_server.default = Reply.not_found()
    result, _rec = await run_session(
        options(tmp_path, "ollama:no-such-model", candidates=1, rounds=1), host=llm_server.url
    )
    assert result.status == "paused"
    assert "no-such-model" in result.reason and "ollama pull" in result.reason


async def test_a_cut_stream_is_retried_and_the_session_goes_on(tmp_path, llm_server):
    llm_server.script(Reply.cut(*[reply()[i : i + 30] for i in range(0, 90, 30)], at=2))
    llm_server.default = chunked(reply())
    result, rec = await run_session(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), host=llm_server.url)
    assert result.status == "finished"
    assert rec.of(ev.RequestRetrying)
    assert rec.final_statuses() == {"baseline": "compiled", "r1-1": "compiled"}


async def test_prompt_carries_task_gpu_reference_and_baseline(tmp_path, llm_server):
    llm_server.default = chunked(reply())
    await run_session(options(tmp_path, "ollama:loop-model", candidates=1, rounds=2), host=llm_server.url)
    first, second = (r.messages for r in llm_server.chat_requests[:2])
    system, user = first[0]["content"], first[-1]["content"]
    assert 'extern "C" __global__' in system and "```json" in system
    assert "# Task: vector_add" in user and "def reference(" in user
    assert "__global__ void vector_add" in user  # the baseline as the calling-convention example
    assert "sm_90" in user and "compile-only" in user
    assert "# Round 2" in second[-1]["content"] and "History:" in second[-1]["content"]


async def test_every_reply_and_judgement_is_recorded_once(tmp_path, llm_server):
    llm_server.script(chunked(reply(BROKEN_KERNEL)), chunked(reply()))
    llm_server.default = chunked(reply())
    result, _rec = await run_session(
        options(tmp_path, "ollama:loop-model", candidates=2, rounds=2), host=llm_server.url
    )
    store = SessionStore(tmp_path / "sessions.db")
    try:
        cands = store.candidates(result.session_id)
        labels = [c.label for c in cands]
        assert labels == ["baseline", "r1-1", "r1-2", "r2-1", "r2-2"]
        assert all(c.reply and c.judgement and c.completion for c in cands if c.label != "baseline")
        assert store.integrity_ok()
        assert len(store.rounds(result.session_id)) == 2
    finally:
        store.close()


async def test_replay_makes_the_same_requests_without_a_model(tmp_path, llm_server):
    llm_server.script(chunked(reply(BROKEN_KERNEL)), chunked(reply()))
    llm_server.default = chunked(reply())
    first, _ = await run_session(options(tmp_path, "ollama:loop-model", candidates=2, rounds=2), host=llm_server.url)
    served = len(llm_server.chat_requests)
    again, _rec = await run_session(options(tmp_path, f"replay:{first.session_id}", candidates=2, rounds=2))
    assert again.status == "finished" and len(llm_server.chat_requests) == served
    store = SessionStore(tmp_path / "sessions.db")
    try:
        a = [(c.label, c.status) for c in store.candidates(first.session_id)]
        b = [(c.label, c.status) for c in store.candidates(again.session_id)]
    finally:
        store.close()
    assert a == b


@pytest.mark.parametrize("n", [0, 33])
async def test_bad_loop_settings_are_one_line(tmp_path, n):
    from cuda_llm.engine.core.errors import UserError

    with pytest.raises(UserError, match="--candidates"):
        await run_session(options(tmp_path, "ollama:m", candidates=n))
