"""Normal replies through both protocols: streaming order, counts, request options, concurrency,
long and endless replies, model lists."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools

import pytest
from llm_servers import BIG_CHUNK_CHARS, Reply

from cuda_llm.engine.core.settings import GenerateOptions
from cuda_llm.engine.llm.base import ModelError, RequestKey

from .wire import FAST, KEY, MODEL, PROMPT, Wire


async def test_reply_streams_in_order_with_counts(wire: Wire) -> None:
    wire.server.script(Reply.text("__global__ ", "void ", "add", "()"))
    tokens: list[str] = []

    done = await wire.provider().complete(PROMPT, FAST, KEY, tokens.append)

    assert tokens == ["__global__ ", "void ", "add", "()"]
    assert done.text == "__global__ void add()"
    assert done.finish_reason == "stop"
    assert done.model == MODEL
    assert done.completion_tokens == 4  # the server counts one token per chunk
    assert done.prompt_tokens == 10  # ... and one per whitespace-separated word of the prompt
    assert done.first_token_s is not None
    assert 0 <= done.first_token_s <= done.elapsed_s
    assert done.retries == 0


async def test_the_server_receives_the_prompt_and_options(wire: Wire) -> None:
    wire.server.script(Reply.text("ok"))
    options = dataclasses.replace(FAST, temperature=0.25, seed=7, num_ctx=16384, max_tokens=1234)

    await wire.provider().complete(PROMPT, options, KEY)

    (req,) = wire.server.chat_requests
    assert req.model == MODEL
    assert req.messages == [{"role": m.role, "content": m.content} for m in PROMPT]
    assert req.body["stream"] is True
    if wire.name == "ollama":
        assert req.path == "/api/chat"
        assert req.body["options"] == {"temperature": 0.25, "seed": 7, "num_ctx": 16384, "num_predict": 1234}
        assert "think" not in req.body
    else:
        assert req.path == "/v1/chat/completions"
        assert (req.body["temperature"], req.body["seed"], req.body["max_tokens"]) == (0.25, 7, 1234)
        assert req.body["stream_options"] == {"include_usage": True}


async def test_four_concurrent_requests_overlap_on_the_server(wire: Wire) -> None:
    # Each reply takes about 0.4 s, so four requests sent at once must be in flight together.
    wire.server.script(*(Reply.text(f"r{i} ", "a ", "b ", "c", chunk_delay_s=0.1) for i in range(4)))
    provider = wire.provider()

    results = await asyncio.gather(*(provider.complete(PROMPT, FAST, RequestKey(1, 0, slot)) for slot in range(4)))

    assert sorted(r.text for r in results) == [f"r{i} a b c" for i in range(4)]
    requests = wire.server.chat_requests
    assert len(requests) == 4
    assert wire.server.peak_concurrency == 4
    assert all(a.overlaps(b) for a, b in itertools.combinations(requests, 2))


async def test_code_blocks_arrive_intact(wire: Wire) -> None:
    reply = Reply.code_blocks(10)
    wire.server.script(reply)

    done = await wire.provider().complete(PROMPT, FAST, KEY)

    assert done.text == reply.text_content()
    assert done.text.count("```cuda\n") == 10
    assert done.text.count("\n```\n") == 10


async def test_a_one_megabyte_reply_arrives_whole_when_max_tokens_allows(wire: Wire) -> None:
    reply = Reply.big(1_000_000)
    wire.server.script(reply)

    done = await wire.provider().complete(PROMPT, dataclasses.replace(FAST, max_tokens=50_000), KEY)

    assert len(done.text) == 1_000_000
    assert done.text == reply.text_content()
    assert done.finish_reason == "stop"


async def test_a_one_megabyte_reply_is_cut_at_max_tokens(wire: Wire) -> None:
    reply = Reply.big(1_000_000)
    wire.server.script(reply)
    options = dataclasses.replace(FAST, max_tokens=100)

    done = await wire.provider().complete(PROMPT, options, KEY)

    # A kilobyte per chunk is far above any real token: the character cap cuts it, within one chunk.
    assert reply.text_content().startswith(done.text)
    cap = 100 * options.max_chars_per_token
    assert cap <= len(done.text) < cap + BIG_CHUNK_CHARS
    assert done.finish_reason == "length"
    assert wire.server.wait_idle()
    # Loopback socket buffers can take the whole megabyte before the client hangs up, so the
    # server may have finished writing; either way it is done and not stuck.
    assert wire.server.chat_requests[0].outcome in ("client_gone", "complete")


async def test_an_endless_reply_is_cut_at_max_tokens_and_the_server_stops(wire: Wire) -> None:
    wire.server.script(Reply.endless("again "))

    done = await wire.provider().complete(PROMPT, dataclasses.replace(FAST, max_tokens=40), KEY)

    assert done.text == "again " * 40
    assert done.finish_reason == "length"
    assert done.completion_tokens is None  # the server never said; the client cut it
    assert wire.server.wait_idle(timeout=3.0)
    (req,) = wire.server.chat_requests
    assert req.outcome == "client_gone"
    assert req.chunks_sent < 100_000  # stopped by the hang-up, not by the server's own bound


async def test_done_reason_length_is_reported(wire: Wire) -> None:
    wire.server.script(Reply.text("partial kernel", done_reason="length"))

    done = await wire.provider().complete(PROMPT, FAST, KEY)

    assert (done.text, done.finish_reason) == ("partial kernel", "length")


async def test_completion_tokens_at_max_tokens_mean_length(wire: Wire) -> None:
    # A server that stops at max_tokens but calls it "stop": the counts show it was cut.
    wire.server.script(Reply.text("a", "b", "c"))

    done = await wire.provider().complete(PROMPT, dataclasses.replace(FAST, max_tokens=3), KEY)

    assert done.text == "abc"
    assert done.finish_reason == "length"


async def test_reasoning_keeps_the_request_alive_but_is_not_the_reply(wire: Wire) -> None:
    # Thinking for 0.5 s before the first text token, with a 0.3 s first-token limit: reasoning
    # is generation, not a stalled server.
    wire.server.script(Reply.thinking(("hmm ",) * 5, "kernel ", "text", chunk_delay_s=0.1))
    tokens: list[str] = []
    options = dataclasses.replace(FAST, first_token_timeout_s=0.3)

    done = await wire.provider().complete(PROMPT, options, KEY, tokens.append)

    assert tokens == ["kernel ", "text"]
    assert done.text == "kernel text"
    assert done.first_token_s is not None and done.first_token_s >= 0.4


async def test_reasoning_counts_towards_max_tokens(wire: Wire) -> None:
    wire.server.script(Reply.thinking(("hmm ",) * 10, "never reached"))

    with pytest.raises(ModelError) as caught:
        await wire.provider().complete(PROMPT, dataclasses.replace(FAST, max_tokens=5), KEY)

    assert caught.value.kind == "empty"  # cut at max_tokens while still thinking: no text
    assert "used all 5 max_tokens without writing any text" in str(caught.value)
    assert str(caught.value).endswith(": raise --max-tokens")


async def test_list_models(wire: Wire) -> None:
    assert await wire.provider().list_models() == list(wire.server.models)


async def test_openai_falls_back_when_stream_options_are_rejected(llm_server) -> None:
    llm_server.reject_stream_options = True
    llm_server.script(Reply.text("one"), Reply.text("two"))
    wire = Wire("openai", llm_server)
    provider = wire.provider()
    try:
        first = await provider.complete(PROMPT, FAST, KEY)
        second = await provider.complete(PROMPT, FAST, KEY)
    finally:
        await wire.close()

    assert (first.text, second.text) == ("one", "two")
    assert first.completion_tokens is None  # no usage without stream_options
    sent = ["stream_options" in r.body for r in llm_server.chat_requests]
    assert sent == [True, False, False]  # asked once, then remembered


async def test_generation_options_reach_ollama_without_optional_ones(llm_server) -> None:
    llm_server.script(Reply.text("ok"))
    wire = Wire("ollama", llm_server)
    try:
        await wire.provider().complete(PROMPT, GenerateOptions(max_tokens=99), KEY)
    finally:
        await wire.close()

    assert llm_server.chat_requests[0].body["options"] == {"num_predict": 99}
