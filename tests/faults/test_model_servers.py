"""Model servers that fail: whole compile-only sessions against the loopback Ollama/OpenAI server
(the real client libraries, the real wire). Round 1 goes well and is recorded; the fault strikes in
round 2. Each test checks the session's outcome (retried and finished, or paused with one line that
names the server and says what to do) and that what round 1 recorded is still there."""

from __future__ import annotations

import asyncio
import time

import pytest
from llm_servers import UNRESOLVABLE_URL, LoopbackLLMServer, Reply
from scripted import chunked, reply
from session_driver import FAST_RETRY, options, run_session

from cuda_llm.engine.core.settings import GenerateOptions, RetryPolicy
from cuda_llm.engine.fsr import events as ev

from .helpers import RoundWatcher, assert_kept, integrity, one_line, resume, session_row, snapshot

GROUP = "model servers"
GOOD = chunked(reply())


async def fault_in_round_2(tmp_path, server: LoopbackLLMServer, *faults, model="ollama:loop-model", **loop):
    """Round 1 gets a good reply; round 2's first request(s) get `faults`; every later request a good
    reply. Returns (result, watcher holding the events and the snapshot taken after round 1)."""
    server.script(GOOD, *faults)
    server.default = GOOD
    db = tmp_path / "sessions.db"
    watcher = RoundWatcher(db)
    where = {"host": server.url} if model.startswith("ollama:") else {"base_url": server.openai_url}
    settings = {"candidates": 1, "rounds": 2, "repairs": 1, **loop}
    result, _ = await run_session(options(tmp_path, model, **settings), recorder=watcher, **where)
    return result, watcher


def assert_finished_and_kept(tmp_path, result, watcher: RoundWatcher, labels: set[str]) -> dict:
    db = tmp_path / "sessions.db"
    after = snapshot(db)
    assert result.status == "finished", result.reason
    assert set(after) == labels, "every candidate recorded once, none lost"
    assert_kept(watcher.before, after)
    assert integrity(db) == "ok"
    return after


def retries(watcher: RoundWatcher) -> list[ev.RequestRetrying]:
    return watcher.of(ev.RequestRetrying)


# ---- the session pauses -------------------------------------------------------------------------


@pytest.mark.fault(
    GROUP,
    "connection refused (the server stops between rounds)",
    "retried, then the session pauses with one line naming the server and what to do; round 1 kept; "
    "--resume against a live server finishes",
)
async def test_connection_refused(tmp_path, llm_server, observed):
    db = tmp_path / "sessions.db"
    url = llm_server.url
    llm_server.default = GOOD
    watcher = RoundWatcher(db, then=llm_server.stop)  # the server dies once round 1 is recorded
    result, _ = await run_session(
        options(tmp_path, "ollama:loop-model", candidates=2, rounds=2), host=url, recorder=watcher
    )
    assert result.status == "paused"
    assert one_line(result.reason) and url in result.reason and "OLLAMA_HOST" in result.reason
    assert session_row(db) == ("paused", result.reason)
    assert retries(watcher), "a refused connection is retried before the session pauses"
    assert_kept(watcher.before, snapshot(db))
    with LoopbackLLMServer() as again:
        again.default = GOOD
        resumed, _ = await resume(db, host=again.url, switch_server=True)  # a new server, asked for
    after = assert_finished_and_kept(tmp_path, resumed, watcher, {"baseline", "r1-1", "r1-2", "r2-1", "r2-2"})
    observed(f"paused: {result.reason!r}; resumed: {resumed.status}, {len(after)} candidates, round 1 intact")


@pytest.mark.fault(
    GROUP,
    "DNS failure (host name does not resolve)",
    "session pauses with one line naming the host and where it came from; round 1 kept; --resume finishes",
)
async def test_dns_failure(tmp_path, llm_server, observed):
    db = tmp_path / "sessions.db"
    llm_server.default = GOOD
    first, _ = await run_session(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), host=llm_server.url)
    assert first.status == "finished"
    before = snapshot(db)
    started = time.monotonic()
    result, _ = await resume(db, host=UNRESOLVABLE_URL, switch_server=True, rounds=2)
    took = time.monotonic() - started
    assert result.status == "paused"
    assert one_line(result.reason) and "cannot resolve the host name" in result.reason
    assert "cuda-llm-test.invalid" in result.reason and "OLLAMA_HOST" in result.reason
    assert_kept(before, snapshot(db))
    resumed, _ = await resume(db, host=llm_server.url, switch_server=True, rounds=2)
    assert resumed.status == "finished" and set(snapshot(db)) == {"baseline", "r1-1", "r2-1"}
    assert_kept(before, snapshot(db))
    observed(f"paused in {took:.1f} s: {result.reason!r}; resumed: finished")


@pytest.mark.fault(
    GROUP,
    "HTTP 404: unknown model (removed from the server mid-session)",
    "not retried; session pauses with one line saying how to get the model; round 1 kept",
)
async def test_unknown_model(tmp_path, llm_server, observed):
    result, watcher = await fault_in_round_2(tmp_path, llm_server, Reply.not_found())
    db = tmp_path / "sessions.db"
    assert result.status == "paused"
    assert one_line(result.reason) and "loop-model" in result.reason and "ollama pull" in result.reason
    assert not retries(watcher), "an unknown model does not appear by asking again"
    assert_kept(watcher.before, snapshot(db))
    resumed, _ = await resume(db, host=llm_server.url)
    assert_finished_and_kept(tmp_path, resumed, watcher, {"baseline", "r1-1", "r2-1"})
    observed(f"paused: {result.reason!r}; resumed: finished")


# ---- retried, and the session finishes ---------------------------------------------------------------


@pytest.mark.fault(
    GROUP,
    "timeout before the first token",
    "the request is abandoned at first_token_timeout_s and retried; the session finishes",
)
async def test_timeout_before_first_token(tmp_path, llm_server, observed):
    gen = GenerateOptions(timeout_s=10.0, first_token_timeout_s=0.5)
    result, watcher = await fault_in_round_2(tmp_path, llm_server, Reply.stall_first(3.0, reply()), generate=gen)
    assert_finished_and_kept(tmp_path, result, watcher, {"baseline", "r1-1", "r2-1"})
    (retry,) = retries(watcher)
    assert "no reply from" in retry.message and "0.5 s" in retry.message
    assert watcher.final_statuses()["r2-1"] == "compiled"
    observed(f"retried after {retry.message!r}; finished")


@pytest.mark.fault(GROUP, "stream cut mid-reply", "the partial reply is dropped and the request retried; finishes")
async def test_stream_cut_mid_reply(tmp_path, llm_server, observed):
    text = reply()
    cut = Reply.cut(*[text[i : i + 40] for i in range(0, len(text), 40)], at=5)
    result, watcher = await fault_in_round_2(tmp_path, llm_server, cut)
    after = assert_finished_and_kept(tmp_path, result, watcher, {"baseline", "r1-1", "r2-1"})
    (retry,) = retries(watcher)
    assert "stopped before it was done" in retry.message
    assert after["r2-1"] == ("compiled", text), "the recorded reply is the retried whole one, not the fragment"
    observed(f"retried after {retry.message!r}; finished with the whole reply recorded")


@pytest.mark.parametrize(
    ("model", "fault_name"),
    [
        pytest.param(
            "ollama:loop-model",
            "malformed NDJSON (Ollama)",
            marks=pytest.mark.fault(
                GROUP, "malformed NDJSON line (Ollama)", "protocol error naming the server, retried; finishes"
            ),
            id="ndjson",
        ),
        pytest.param(
            "openai:loop-model",
            "malformed SSE (OpenAI)",
            marks=pytest.mark.fault(
                GROUP, "malformed SSE event (OpenAI)", "protocol error naming the server, retried; finishes"
            ),
            id="sse",
        ),
    ],
)
async def test_malformed_stream(tmp_path, llm_server, observed, model, fault_name):
    malformed = Reply.malformed(*reply().partition("```"))  # a bad line after the explanation
    result, watcher = await fault_in_round_2(tmp_path, llm_server, malformed, model=model)
    assert_finished_and_kept(tmp_path, result, watcher, {"baseline", "r1-1", "r2-1"})
    (retry,) = retries(watcher)
    assert "malformed stream" in retry.message and llm_server.url in retry.message
    observed(f"{fault_name}: retried after {retry.message!r}; finished")


@pytest.mark.fault(
    GROUP,
    "HTTP 429 with Retry-After: 1",
    "retried after the server's delay (not before), then succeeds; the session finishes",
)
async def test_rate_limited_with_retry_after(tmp_path, llm_server, observed):
    policy = RetryPolicy(attempts=2, base_delay_s=0.01, max_delay_s=5.0)
    result, watcher = await fault_in_round_2(tmp_path, llm_server, Reply.rate_limited(retry_after=1), retry=policy)
    assert_finished_and_kept(tmp_path, result, watcher, {"baseline", "r1-1", "r2-1"})
    (retry,) = retries(watcher)
    assert retry.delay_s == pytest.approx(1.0) and "HTTP 429" in retry.message
    limited, again = llm_server.chat_requests[1:3]
    waited = again.started - limited.finished
    assert waited >= 0.95, f"the retry came {waited:.2f} s after the 429, before Retry-After allowed"
    observed(f"429 then retried {waited:.2f} s later; finished")


@pytest.mark.fault(GROUP, "HTTP 500", "retried with backoff; the session finishes")
async def test_server_error(tmp_path, llm_server, observed):
    result, watcher = await fault_in_round_2(tmp_path, llm_server, Reply.server_error())
    assert_finished_and_kept(tmp_path, result, watcher, {"baseline", "r1-1", "r2-1"})
    (retry,) = retries(watcher)
    assert "HTTP 500" in retry.message and "check the server's log" in retry.message
    observed(f"retried after {retry.message!r}; finished")


@pytest.mark.fault(
    GROUP,
    "HTTP 500 on every try",
    "retries exhausted, then the session pauses with one line saying how many tries were made; round 1 kept",
)
async def test_server_error_persists(tmp_path, llm_server, observed):
    llm_server.script(GOOD, Reply.server_error(), Reply.server_error())
    db = tmp_path / "sessions.db"
    watcher = RoundWatcher(db)
    opts = options(tmp_path, "ollama:loop-model", candidates=1, rounds=2, retry=FAST_RETRY)
    result, _ = await run_session(opts, host=llm_server.url, recorder=watcher)
    assert result.status == "paused"
    assert one_line(result.reason) and "HTTP 500" in result.reason and "gave up after 2 tries" in result.reason
    assert_kept(watcher.before, snapshot(db))
    observed(f"paused: {result.reason!r}")


# ---- replies that are too much -------------------------------------------------------------------------


@pytest.mark.fault(
    GROUP,
    "a reply of 1 MB (max_tokens large enough to take it whole)",
    "recorded whole; format error explained; the repair prompt stays small; the next good candidate compiles",
)
async def test_one_megabyte_reply(tmp_path, llm_server, observed):
    gen = GenerateOptions(timeout_s=10.0, first_token_timeout_s=5.0, max_tokens=40_000)
    result, watcher = await fault_in_round_2(tmp_path, llm_server, Reply.big(1_000_000), generate=gen)
    after = assert_finished_and_kept(tmp_path, result, watcher, {"baseline", "r1-1", "r2-1", "r2-fix1-1"})
    status, text = after["r2-1"]
    assert status == "format_error" and len(text) == 1_000_000, "the whole reply is recorded"
    assert watcher.final_statuses()["r2-fix1-1"] == "compiled"
    repair = llm_server.chat_requests[2].messages[-1]["content"]
    assert "no CUDA code block found" in repair
    assert len(repair) < 30_000, "the megabyte is not quoted back to the model"
    observed(f"format error recorded ({len(text):,} chars kept); repair prompt {len(repair):,} chars; next compiled")


@pytest.mark.fault(
    GROUP,
    "an endless reply",
    "cut at the token budget, recorded with finish_reason length and a message saying so; next compiles",
)
async def test_endless_reply(tmp_path, llm_server, observed):
    gen = GenerateOptions(timeout_s=10.0, first_token_timeout_s=5.0, max_tokens=300)
    result, watcher = await fault_in_round_2(tmp_path, llm_server, Reply.endless(), generate=gen)
    assert_finished_and_kept(tmp_path, result, watcher, {"baseline", "r1-1", "r2-1", "r2-fix1-1"})
    received = {e.label: e.completion for e in watcher.of(ev.ReplyReceived)}
    assert received["r2-1"].finish_reason == "length"
    assert await asyncio.to_thread(llm_server.wait_idle), "the server noticed every hang-up"
    assert llm_server.chat_requests[1].outcome == "client_gone", "the client hung up on the endless stream"
    judged = {e.judgement.label: e.judgement for e in watcher.of(ev.CandidateJudged)}
    assert judged["r2-1"].status == "format_error"
    assert judged["r2-1"].message.startswith("the reply reached the token limit (300 tokens)")
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(tmp_path / "sessions.db")
    try:
        rec = next(c for c in store.candidates(1) if c.label == "r2-1")
    finally:
        store.close()
    assert rec.completion is not None and rec.completion.finish_reason == "length"
    assert judged["r2-1"].message in llm_server.chat_requests[2].messages[-1]["content"]
    observed(f"cut after {len(rec.reply)} chars, finish_reason length, {judged['r2-1'].message[:80]!r}...")


@pytest.mark.fault(
    GROUP,
    "a reply with ten code blocks",
    "format error naming the ten blocks and their lines, carried to the model in the repair prompt; next compiles",
)
async def test_ten_code_blocks(tmp_path, llm_server, observed):
    result, watcher = await fault_in_round_2(tmp_path, llm_server, Reply.code_blocks(10))
    assert_finished_and_kept(tmp_path, result, watcher, {"baseline", "r1-1", "r2-1", "r2-fix1-1"})
    judged = {e.judgement.label: e.judgement for e in watcher.of(ev.CandidateJudged)}
    message = judged["r2-1"].message
    assert judged["r2-1"].status == "format_error" and "found 10 CUDA code blocks" in message
    repair = llm_server.chat_requests[2].messages[-1]["content"]
    assert "None of the last candidates was correct" in repair and message in repair
    assert judged["r2-fix1-1"].status == "compiled"
    observed(f"format error {message[:90]!r}... in the repair prompt; the repair compiled")


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(
            "ollama:loop-model",
            marks=pytest.mark.fault(
                GROUP,
                "a gzip bomb: one NDJSON line of 64 MiB gzip-compressed to 64 KB (Content-Encoding: gzip, though "
                "the client asked for identity)",
                "counted as it inflates, dropped at the 16 MiB response cap; not retried; the session pauses with "
                "one line; round 1 kept, nothing of the line stored",
            ),
            id="ndjson",
        ),
        pytest.param(
            "openai:loop-model",
            marks=pytest.mark.fault(
                GROUP,
                "a gzip bomb: one SSE event of 64 MiB gzip-compressed to 64 KB (OpenAI)",
                "counted as it inflates, dropped at the 16 MiB response cap; not retried; the session pauses with "
                "one line; round 1 kept, nothing of the line stored",
            ),
            id="sse",
        ),
    ],
)
async def test_gzip_bomb(tmp_path, llm_server, observed, model):
    result, watcher = await fault_in_round_2(tmp_path, llm_server, Reply.gzip_bomb(64 << 20), model=model)
    db = tmp_path / "sessions.db"
    assert result.status == "paused"
    assert one_line(result.reason) and "passed 16 MiB" in result.reason and llm_server.url in result.reason
    assert not retries(watcher), "a runaway reply is not asked for again"
    after = snapshot(db)
    assert_kept(watcher.before, after)
    assert set(after) == {"baseline", "r1-1"} and integrity(db) == "ok"
    asked = {r.headers.get("accept-encoding") for r in llm_server.chat_requests}
    assert asked == {"identity"}
    observed(f"paused: {result.reason!r}; asked for Accept-Encoding {asked.pop()}; round 1 intact, nothing stored")
