"""A resumed session talks to the model server it was recorded with: not to a default, not to what
an environment variable says today. Another server only when asked for (--switch-server), and the
printed `continue with:` line names the database and the server."""

from __future__ import annotations

import dataclasses
import sqlite3
import uuid

import pytest
from llm_servers import LoopbackLLMServer
from scripted import chunked, reply
from session_driver import options, run_session

from cuda_llm.app.cli.run_cmd import resume_command
from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.llm.base import RequestKey
from cuda_llm.engine.llm.spec import parse_model_spec

from .helpers import resume, resume_options

GROUP = "host safety"
GOOD = chunked(reply())


def recorded_server(db) -> str | None:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT server FROM sessions WHERE id = 1").fetchone()[0]
    finally:
        con.close()


@pytest.mark.fault(
    GROUP,
    "resume of an OpenAI-compatible session while OPENAI_BASE_URL points at another server, OPENAI_API_KEY set",
    "refused in one line naming the recorded server until --base-url names it (the key would go there); then "
    "the prompts and the key go to the recorded server only; the key is in no database byte",
)
async def test_an_openai_session_resumes_with_its_own_server(tmp_path, monkeypatch, observed):
    key = f"sk-resume-marker-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with LoopbackLLMServer() as recorded, LoopbackLLMServer() as elsewhere:
        recorded.default = elsewhere.default = GOOD
        first, _ = await run_session(
            options(tmp_path, "openai:loop-model", candidates=1, rounds=1), base_url=recorded.openai_url
        )
        assert first.status == "finished"
        db = tmp_path / "sessions.db"
        assert recorded_server(db) == recorded.openai_url.rstrip("/")
        before = len(recorded.chat_requests)
        monkeypatch.setenv("OPENAI_BASE_URL", elsewhere.openai_url)  # what the environment says today
        with pytest.raises(UserError) as refused:
            await resume(db, rounds=2)
        message = str(refused.value)
        assert f"recorded with the server {recorded_server(db)}" in message and "$OPENAI_API_KEY" in message
        assert len(recorded.chat_requests) == before and not elsewhere.chat_requests, "nothing sent anywhere"
        resumed, _ = await resume(db, base_url=recorded.openai_url, rounds=2)  # named: consent
        assert resumed.status == "finished", resumed.reason
        assert len(recorded.chat_requests) > before and not elsewhere.chat_requests
    assert key.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("sessions"))
    observed(
        f"refused until --base-url named it; round 2 sent to the recorded {recorded_server(db)}; 0 requests "
        "elsewhere; key absent from the DB"
    )


@pytest.mark.fault(
    GROUP,
    "resume of an ollama session while OLLAMA_HOST points at another server",
    "the prompts go to the recorded server only",
)
async def test_an_ollama_session_resumes_with_its_own_server(tmp_path, monkeypatch, observed):
    with LoopbackLLMServer() as recorded, LoopbackLLMServer() as elsewhere:
        recorded.default = elsewhere.default = GOOD
        await run_session(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), host=recorded.url)
        db = tmp_path / "sessions.db"
        monkeypatch.setenv("OLLAMA_HOST", elsewhere.url)
        resumed, _ = await resume(db, rounds=2)
        assert resumed.status == "finished" and recorded.chat_requests and not elsewhere.chat_requests
    observed(f"round 2 sent to the recorded {recorded_server(db)}; 0 requests elsewhere")


@pytest.mark.fault(
    GROUP,
    "resume with --base-url naming another server, without --switch-server",
    "refused with one line naming both servers and the flag; nothing sent; with the flag it goes there",
)
async def test_another_server_needs_the_flag(tmp_path, observed):
    with LoopbackLLMServer() as recorded, LoopbackLLMServer() as other:
        recorded.default = other.default = GOOD
        await run_session(options(tmp_path, "openai:loop-model", candidates=1, rounds=1), base_url=recorded.openai_url)
        db = tmp_path / "sessions.db"
        with pytest.raises(UserError) as refused:
            await resume(db, base_url=other.openai_url, rounds=2)
        message = str(refused.value)
        assert "\n" not in message and "--switch-server" in message and recorded_server(db) in message
        assert not other.chat_requests
        switched, _ = await resume(db, base_url=other.openai_url, switch_server=True, rounds=2)
        assert switched.status == "finished" and other.chat_requests
        assert recorded_server(db) == other.openai_url.rstrip("/")
    observed(f"refused: {message!r}; with --switch-server: finished on the new server")


def test_the_continue_line_names_the_database_and_the_server():
    provider = parse_model_spec("openai:m", base_url="http://user:pw@gpu-box:8000/v1/")
    line = resume_command(12, "/data/my sessions.db", provider)
    assert line == "cuda-llm run --resume 12 --headless --db '/data/my sessions.db' --base-url http://gpu-box:8000/v1"
    ollama = parse_model_spec("ollama:qwen", host="10.0.0.5")
    assert resume_command(3, None, ollama) == "cuda-llm run --resume 3 --headless --host http://10.0.0.5:11434"
    assert resume_command(
        3, None, parse_model_spec("replay:2", load_replay=lambda _: {RequestKey(1, 0, 0): "a reply"})
    ) == ("cuda-llm run --resume 3 --headless")


@pytest.mark.fault(
    GROUP,
    "resume of an OpenAI-compatible session recorded without its server (an older cuda-llm), no --base-url",
    "refused with one line naming --base-url and --switch-server; nothing sent anywhere; with --base-url it "
    "goes there and records it",
)
async def test_a_session_recorded_without_its_server_needs_one_named(tmp_path, monkeypatch, observed):
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-old-session-{uuid.uuid4().hex}")
    with LoopbackLLMServer() as recorded, LoopbackLLMServer() as elsewhere:
        recorded.default = elsewhere.default = GOOD
        await run_session(options(tmp_path, "openai:loop-model", candidates=1, rounds=1), base_url=recorded.openai_url)
        db = tmp_path / "sessions.db"
        con = sqlite3.connect(db)
        with con:
            con.execute("UPDATE sessions SET server = NULL")  # as a cuda-llm before schema 3 left it
        con.close()
        before = len(recorded.chat_requests)
        monkeypatch.setenv("OPENAI_BASE_URL", elsewhere.openai_url)  # where the default would go today
        with pytest.raises(UserError) as refused:
            await resume(db, rounds=2)
        message = str(refused.value)
        assert "\n" not in message and "--base-url" in message and "--switch-server" in message
        assert len(recorded.chat_requests) == before and not elsewhere.chat_requests
        resumed, _ = await resume(db, base_url=recorded.openai_url, rounds=2)
        assert resumed.status == "finished" and len(recorded.chat_requests) > before and not elsewhere.chat_requests
        assert recorded_server(db) == recorded.openai_url.rstrip("/")
    observed(f"refused: {message!r}; with --base-url: finished there, server recorded")


@pytest.mark.fault(
    GROUP,
    "resume of an ollama session with --model openai:M (another kind of server), without --switch-server",
    "refused with one line naming the recorded server and the flag; nothing sent; with the flag it goes to the "
    "named --base-url",
)
async def test_another_kind_of_model_is_another_server(tmp_path, monkeypatch, observed):
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-kind-switch-{uuid.uuid4().hex}")
    with LoopbackLLMServer() as recorded, LoopbackLLMServer() as elsewhere:
        recorded.default = elsewhere.default = GOOD
        await run_session(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), host=recorded.url)
        db = tmp_path / "sessions.db"
        before = len(recorded.chat_requests)
        monkeypatch.setenv("OPENAI_BASE_URL", elsewhere.openai_url)  # where openai:M would go by default
        opts = dataclasses.replace(resume_options(db, rounds=2), model="openai:loop-model")
        with pytest.raises(UserError) as refused:
            await run_session(opts)
        message = str(refused.value)
        assert "\n" not in message and "--switch-server" in message and recorded_server(db) in message
        assert len(recorded.chat_requests) == before and not elsewhere.chat_requests
        switched, _ = await run_session(dataclasses.replace(opts, switch_server=True), base_url=elsewhere.openai_url)
        assert switched.status == "finished" and elsewhere.chat_requests
    observed(f"refused: {message!r}; with --switch-server: finished on the named server")
