"""The OpenAI key comes from the environment only and never shows in an error, a repr or a log
line, even when a server quotes it back."""

from __future__ import annotations

import logging
import traceback

import pytest
from llm_servers import UNRESOLVABLE_URL, LoopbackLLMServer, Reply

from cuda_llm.engine.llm.base import ModelError
from cuda_llm.engine.llm.ollama_provider import OllamaProvider
from cuda_llm.engine.llm.openai_provider import PLACEHOLDER_KEY, OpenAIProvider
from cuda_llm.engine.llm.retry import complete_with_retries

from .wire import FAST, FAST_RETRY, KEY, PROMPT

SENTINEL = "sk-SENTINEL-7f3a9c-do-not-print"

# Every reply a server could answer with, several quoting the key they received.
LEAKY_REPLIES = [
    Reply.status_error(401, "Incorrect API key provided: {key}"),
    Reply.status_error(403, "key {key} may not use this model"),
    Reply.status_error(400, "bad request from {key}"),
    Reply.not_found("no model for {key}"),
    Reply.rate_limited(retry_after=0),
    Reply.server_error(500, "{key} exploded"),
    Reply.error_line("stream error for {key}"),
    Reply.malformed(),
    Reply.cut(),
    Reply.empty(),
    Reply.unfinished(),
]


def everything_said(error: BaseException) -> str:
    """All the text an error could put in front of someone: str, repr, args, the formatted
    traceback with its whole chain."""
    parts = [str(error), repr(error), repr(error.args), "".join(traceback.format_exception(error))]
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)


@pytest.mark.usefixtures("keyed")
async def test_the_key_is_sent_but_never_shown(llm_server: LoopbackLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    provider = OpenAIProvider("loop-model", base_url=llm_server.openai_url)
    said: list[str] = [repr(provider), str(vars(provider))]
    try:
        for reply in LEAKY_REPLIES:
            llm_server.script(reply)
            with pytest.raises(ModelError) as caught:
                await provider.complete(PROMPT, FAST, KEY)
            said.append(everything_said(caught.value))
        # And through the retry helper, which rewrites the message when it gives up.
        llm_server.script(*[Reply.server_error(500, "{key} again")] * 3)
        with pytest.raises(ModelError) as caught:
            await complete_with_retries(provider, PROMPT, FAST, KEY, policy=FAST_RETRY)
        said.append(everything_said(caught.value))
    finally:
        await provider.close()

    # The sentinel really was in use: the server received it and quoted it back.
    assert all(r.headers["authorization"] == f"Bearer {SENTINEL}" for r in llm_server.chat_requests)
    assert "[redacted]" in "\n".join(said)
    said += [record.getMessage() for record in caplog.records] + [caplog.text]
    leaks = [text for text in said if SENTINEL in text]
    assert leaks == []


@pytest.mark.usefixtures("keyed")
@pytest.mark.parametrize("url", ["refused", UNRESOLVABLE_URL + "/v1"])
async def test_the_key_is_not_shown_when_the_server_is_unreachable(url: str, refused_url: str) -> None:
    provider = OpenAIProvider("m", base_url=f"{refused_url}/v1" if url == "refused" else url)
    try:
        with pytest.raises(ModelError) as caught:
            await provider.complete(PROMPT, FAST, KEY)
    finally:
        await provider.close()

    assert caught.value.kind == "unreachable"
    assert SENTINEL not in everything_said(caught.value)


async def test_a_local_server_without_a_key_gets_a_placeholder(
    llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm_server.script(Reply.text("ok"))
    provider = OpenAIProvider("loop-model", base_url=llm_server.openai_url)
    try:
        done = await provider.complete(PROMPT, FAST, KEY)
    finally:
        await provider.close()

    assert done.text == "ok"
    assert llm_server.chat_requests[0].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"


async def test_the_key_variable_can_be_named(llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_KEY", SENTINEL)
    llm_server.script(Reply.status_error(401, "bad key {key}"))
    provider = OpenAIProvider("loop-model", base_url=llm_server.openai_url, api_key_env="VLLM_KEY")
    try:
        with pytest.raises(ModelError) as caught:
            await provider.complete(PROMPT, FAST, KEY)
    finally:
        await provider.close()

    assert caught.value.kind == "auth"
    assert "check VLLM_KEY" in str(caught.value)
    assert SENTINEL not in everything_said(caught.value)
    assert llm_server.chat_requests[0].headers["authorization"] == f"Bearer {SENTINEL}"


async def test_a_missing_key_is_named_when_the_server_wants_one(
    llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm_server.script(Reply.status_error(401, "You didn't provide an API key."))
    provider = OpenAIProvider("loop-model", base_url=llm_server.openai_url)
    try:
        with pytest.raises(ModelError) as caught:
            await provider.complete(PROMPT, FAST, KEY)
    finally:
        await provider.close()

    assert caught.value.kind == "auth"
    assert str(caught.value).endswith(": set OPENAI_API_KEY")


async def test_ollama_scrubs_its_key_too(llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_API_KEY", SENTINEL)
    llm_server.script(Reply.status_error(401, "unknown key {key}"), Reply.error_line("bad {key}"))
    provider = OllamaProvider("loop-model", host=llm_server.url)
    said = [repr(provider), str(vars(provider))]
    try:
        for _ in range(2):
            with pytest.raises(ModelError) as caught:
                await provider.complete(PROMPT, FAST, KEY)
            said.append(everything_said(caught.value))
    finally:
        await provider.close()

    assert llm_server.chat_requests[0].headers["authorization"] == f"Bearer {SENTINEL}"
    assert "OLLAMA_API_KEY" in said[2]
    assert [text for text in said if SENTINEL in text] == []
