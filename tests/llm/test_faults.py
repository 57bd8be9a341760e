"""Every fault the loopback server can play, through both protocols: the ModelError kind, a
one-line message that names the server and says what to do, and retries where they make sense."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from llm_servers import UNRESOLVABLE_URL, Reply

from cuda_llm.engine.core.settings import GenerateOptions, RetryPolicy
from cuda_llm.engine.llm.base import ModelError
from cuda_llm.engine.llm.retry import complete_with_retries

from .wire import FAST, FAST_RETRY, KEY, PROMPT, Wire

# Stalls are shorter than the server's own stall, and the server's stall ends at teardown.
STALL_S = 2.0
TIGHT = dataclasses.replace(FAST, first_token_timeout_s=0.5, timeout_s=0.5)
IDLE = dataclasses.replace(FAST, idle_timeout_s=0.5)
TRICKLE = dataclasses.replace(FAST, timeout_s=1.0, idle_timeout_s=0.6)
# A response cap small enough to test with a reply of a few MB (the default is 16 MiB).
CAPPED = dataclasses.replace(FAST, max_response_bytes=1 << 20)


@dataclass(frozen=True)
class Fault:
    name: str
    reply: Reply
    kind: str
    # What the message must tell the user, per protocol (one text for both when equal).
    hint: str | tuple[str, str]
    options: GenerateOptions = FAST

    def hint_for(self, wire: Wire) -> str:
        if isinstance(self.hint, str):
            return self.hint
        return self.hint[0] if wire.name == "ollama" else self.hint[1]


FAULTS = [
    Fault("404", Reply.not_found(), "not_found", ("`ollama pull loop-model`", "check the name")),
    Fault("401", Reply.status_error(401, "invalid key"), "auth", ("OLLAMA_API_KEY", "OPENAI_API_KEY")),
    Fault("403", Reply.status_error(403, "forbidden"), "auth", ("OLLAMA_API_KEY", "OPENAI_API_KEY")),
    Fault("400", Reply.status_error(400, "context too long"), "bad_request", "context too long"),
    Fault("429", Reply.rate_limited(retry_after=0.05), "rate_limited", "lower --candidates"),
    Fault("500", Reply.server_error(500, "out of memory"), "server_error", "out of memory"),
    Fault("503", Reply.server_error(503, "loading"), "server_error", "check the server's log"),
    Fault("stall-first", Reply.stall_first(STALL_S), "timeout", "within 0.5 s", TIGHT),
    # Silence after the first token: given up on after idle_timeout_s (not the whole reply's limit), retried.
    Fault("stall-mid", Reply.stall_mid(STALL_S), "timeout", "sent nothing for 0.5 s", IDLE),
    # A token every 0.2 s, never silent for the idle limit: ended at the reply's limit and not retried (each
    # try would take as long: three of 600 s held one request 30 minutes).
    Fault("trickle", Reply.text(*["tok "] * 25, chunk_delay_s=0.2), "too_slow", "lower max_tokens", TRICKLE),
    Fault("cut", Reply.cut("partial ", "rest"), "cut_off", "connection closed mid-reply"),
    Fault("unfinished", Reply.unfinished("no end"), "cut_off", "stopped before it was done"),
    Fault("malformed", Reply.malformed(), "protocol", "right kind of server"),
    Fault("error-line", Reply.error_line("model runner crashed"), "server_error", "model runner crashed"),
    Fault("empty", Reply.empty(), "empty", "try another model"),
    Fault("whitespace", Reply.text("  \n", "\n"), "empty", "try another model"),
    # One streamed line of 3 MB: held by nobody past the 1 MiB cap, and not asked for again.
    Fault("one-chunk flood", Reply.text("x" * (3 << 20)), "too_large", "passed 1 MiB", CAPPED),
    # 64 MiB in one line, gzip-compressed to 64 KB (under the cap on the wire): counted as it inflates.
    Fault("gzip bomb", Reply.gzip_bomb(64 << 20), "too_large", "passed 1 MiB", CAPPED),
    Fault("gzip bomb as an error body", Reply.gzip_bomb(64 << 20, status=500), "too_large", "passed 1 MiB", CAPPED),
    # A coding that is not inflated here is refused, not handed to httpx to inflate unbounded.
    Fault("unasked-for encoding", Reply.text("ok", encoding="br"), "protocol", "Content-Encoding 'br'"),
]
RETRYABLE = [f for f in FAULTS if ModelError(f.kind, "").retryable]  # type: ignore[arg-type]
FINAL = [f for f in FAULTS if f not in RETRYABLE]


def check_message(error: ModelError, wire: Wire, hint: str) -> None:
    text = str(error)
    assert wire.url in text, text
    assert hint in text, text
    assert "\n" not in text


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name)
async def test_fault_gives_its_kind_and_a_message(wire: Wire, fault: Fault) -> None:
    wire.server.script(fault.reply)

    with pytest.raises(ModelError) as caught:
        await wire.provider().complete(PROMPT, fault.options, KEY)

    assert caught.value.kind == fault.kind
    check_message(caught.value, wire, fault.hint_for(wire))


@pytest.mark.parametrize("fault", RETRYABLE, ids=lambda f: f.name)
async def test_retryable_fault_is_retried_and_the_retry_succeeds(wire: Wire, fault: Fault) -> None:
    wire.server.script(fault.reply, Reply.text("second ", "try"))
    retries: list[tuple[int, str, float]] = []

    done = await complete_with_retries(
        wire.provider(),
        PROMPT,
        fault.options,
        KEY,
        policy=FAST_RETRY,
        on_retry=lambda n, err, delay: retries.append((n, err.kind, delay)),
    )

    assert done.text == "second try"
    assert done.retries == 1
    assert [(n, kind) for n, kind, _ in retries] == [(1, fault.kind)]
    requests = wire.server.chat_requests
    assert len(requests) == 2
    assert requests[0].body == requests[1].body  # the same request again


@pytest.mark.parametrize("fault", FINAL, ids=lambda f: f.name)
async def test_final_fault_is_not_retried(wire: Wire, fault: Fault) -> None:
    wire.server.script(fault.reply, Reply.text("never asked for"))
    retries: list[int] = []

    with pytest.raises(ModelError) as caught:
        await complete_with_retries(
            wire.provider(), PROMPT, fault.options, KEY, policy=FAST_RETRY, on_retry=lambda n, e, d: retries.append(n)
        )

    assert caught.value.kind == fault.kind
    assert not caught.value.retryable
    assert retries == []
    assert len(wire.server.chat_requests) == 1
    assert wire.server.pending == 1


async def test_retries_give_up_with_the_last_error(wire: Wire) -> None:
    wire.server.script(*(Reply.server_error(500, f"failure {i}") for i in range(3)), Reply.text("too late"))
    delays: list[float] = []

    with pytest.raises(ModelError) as caught:
        await complete_with_retries(
            wire.provider(), PROMPT, FAST, KEY, policy=FAST_RETRY, on_retry=lambda n, e, d: delays.append(d)
        )

    assert caught.value.kind == "server_error"
    assert "failure 2" in str(caught.value)
    assert "gave up after 3 tries" in str(caught.value)
    check_message(caught.value, wire, "check the server's log")
    assert len(wire.server.chat_requests) == 3
    assert len(delays) == 2
    # Exponential with equal jitter: each delay within [half, all] of its step.
    assert 0.005 <= delays[0] <= 0.01
    assert 0.01 <= delays[1] <= 0.02


async def test_retry_after_is_honoured(wire: Wire) -> None:
    wire.server.script(Reply.rate_limited(retry_after=0.3), Reply.text("ok"))
    delays: list[float] = []

    done = await complete_with_retries(
        wire.provider(), PROMPT, FAST, KEY, policy=FAST_RETRY, on_retry=lambda n, e, d: delays.append(d)
    )

    assert done.text == "ok"
    assert delays == [pytest.approx(0.3)]
    first, second = wire.server.chat_requests
    assert first.finished is not None
    assert second.started - first.finished >= 0.25  # the server was left alone as it asked


async def test_retry_after_is_capped(wire: Wire) -> None:
    wire.server.script(Reply.rate_limited(retry_after=3600), Reply.text("ok"))
    delays: list[float] = []
    policy = dataclasses.replace(FAST_RETRY, max_delay_s=0.1)

    done = await complete_with_retries(
        wire.provider(), PROMPT, FAST, KEY, policy=policy, on_retry=lambda n, e, d: delays.append(d)
    )

    assert done.text == "ok"
    assert delays == [0.1]


async def test_retry_after_as_an_http_date_is_read(wire: Wire) -> None:
    wire.server.script(Reply.status_error(429, "slow down", retry_after="Wed, 21 Oct 2015 07:28:00 GMT"))

    with pytest.raises(ModelError) as caught:
        await wire.provider().complete(PROMPT, FAST, KEY)

    assert caught.value.kind == "rate_limited"
    assert caught.value.retry_after_s == 0.0  # a date in the past: retry now


async def test_tokens_of_a_failed_attempt_come_before_on_retry(wire: Wire) -> None:
    # The consumer sees: the failed attempt's tokens, then on_retry (clear the buffer), then the
    # new attempt's tokens from the start.
    wire.server.script(Reply.cut("lost ", "never", at=1), Reply.text("kept ", "reply"))
    events: list[str] = []

    done = await complete_with_retries(
        wire.provider(),
        PROMPT,
        FAST,
        KEY,
        on_token=events.append,
        policy=FAST_RETRY,
        on_retry=lambda n, e, d: events.append(f"<retry {n}: {e.kind}>"),
    )

    assert events == ["lost ", "<retry 1: cut_off>", "kept ", "reply"]
    assert done.text == "kept reply"
    assert done.retries == 1


async def test_connection_refused(wire: Wire, refused_url: str) -> None:
    url = refused_url if wire.name == "ollama" else f"{refused_url}/v1"
    provider = wire.provider(url=url)

    with pytest.raises(ModelError) as caught:
        await provider.complete(PROMPT, FAST, KEY)

    assert caught.value.kind == "unreachable"
    assert caught.value.retryable
    assert str(caught.value).startswith(f"cannot reach the {_server_name(wire)} at {url}: ")
    hint = "is `ollama serve` running? set --host or OLLAMA_HOST" if wire.name == "ollama" else "OPENAI_BASE_URL"
    assert hint in str(caught.value)


async def test_connection_refused_is_retried_then_reported(wire: Wire, refused_url: str) -> None:
    url = refused_url if wire.name == "ollama" else f"{refused_url}/v1"
    retries: list[int] = []

    with pytest.raises(ModelError) as caught:
        await complete_with_retries(
            wire.provider(url=url), PROMPT, FAST, KEY, policy=FAST_RETRY, on_retry=lambda n, e, d: retries.append(n)
        )

    assert caught.value.kind == "unreachable"
    assert retries == [1, 2]
    assert "gave up after 3 tries" in str(caught.value)


async def test_dns_failure(wire: Wire) -> None:
    url = UNRESOLVABLE_URL if wire.name == "ollama" else f"{UNRESOLVABLE_URL}/v1"
    provider = wire.provider(url=url)

    with pytest.raises(ModelError) as caught:
        await provider.complete(PROMPT, FAST, KEY)

    assert caught.value.kind == "unreachable"
    text = str(caught.value)
    assert text.startswith(f"cannot resolve the host name of the {_server_name(wire)} at {url}: ")
    assert ("--host or OLLAMA_HOST" if wire.name == "ollama" else "--base-url or OPENAI_BASE_URL") in text


async def test_list_models_when_unreachable(wire: Wire, refused_url: str) -> None:
    url = refused_url if wire.name == "ollama" else f"{refused_url}/v1"

    with pytest.raises(ModelError) as caught:
        await wire.provider(url=url).list_models()

    assert caught.value.kind == "unreachable"
    assert url in str(caught.value)


async def test_no_scripted_reply_is_a_clear_test_failure(wire: Wire) -> None:
    # The loopback server's own guard: an unscripted request gets a 400 that says so.
    with pytest.raises(ModelError) as caught:
        await wire.provider().complete(PROMPT, FAST, KEY)

    assert caught.value.kind == "bad_request"
    assert "no scripted reply left" in str(caught.value)


async def test_an_error_in_the_consumer_is_not_a_model_error(wire: Wire) -> None:
    # on_token belongs to the caller: its bugs must surface as themselves, not as a bad server.
    wire.server.script(Reply.text("a", "b"))

    def broken(_: str) -> None:
        raise KeyError("consumer bug")

    with pytest.raises(KeyError, match="consumer bug"):
        await wire.provider().complete(PROMPT, FAST, KEY, broken)


def _server_name(wire: Wire) -> str:
    return "ollama server" if wire.name == "ollama" else "OpenAI-compatible server"


def test_every_error_kind_but_one_is_played_by_a_fault() -> None:
    # The table above covers the kinds a server can cause; "unreachable" has its own tests.
    kinds = {f.kind for f in FAULTS} | {"unreachable"}
    assert kinds == {
        "unreachable",
        "timeout",
        "too_slow",
        "not_found",
        "auth",
        "rate_limited",
        "server_error",
        "bad_request",
        "protocol",
        "cut_off",
        "empty",
        "too_large",
    }
    assert RetryPolicy().retry_kinds == {f.kind for f in RETRYABLE} | {"unreachable"}
