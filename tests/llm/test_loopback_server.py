"""The loopback server's own promises, which other suites rely on: lines are flushed one at a
time, callables and defaults answer, and stopping is prompt even with a request stalled."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import AsyncIterator

import httpx
import pytest
from llm_servers import LoopbackLLMServer, RecordedRequest, Reply

from cuda_llm.engine.llm.base import Completion, ModelError, RequestKey

from .wire import FAST, KEY, PROMPT, Wire


async def test_chunks_are_flushed_one_at_a_time(wire: Wire) -> None:
    delay = 0.5
    wire.server.script(Reply.text("a", "b", "c", "d", chunk_delay_s=delay))

    done = await wire.provider().complete(PROMPT, FAST, KEY)

    # The first token arrives long before the last one is sent (three delays later): measured
    # against the delays, with half of them to spare for a busy machine.
    assert done.first_token_s is not None
    assert 3 * delay <= done.elapsed_s
    assert done.first_token_s < done.elapsed_s - 1.5 * delay


async def test_a_callable_reply_and_the_default_answer(wire: Wire) -> None:
    def echo(request: RecordedRequest) -> Reply:
        return Reply.text(request.messages[-1]["content"].upper())

    wire.server.script(Reply.text("scripted first"))
    wire.server.default = echo
    provider = wire.provider()

    first = await provider.complete(PROMPT, FAST, KEY)
    second = await provider.complete(PROMPT, FAST, KEY)
    third = await provider.complete(PROMPT, FAST, KEY)

    assert first.text == "scripted first"
    assert second.text == third.text == PROMPT[-1].content.upper()
    assert wire.server.pending == 0


async def test_get_routes_and_request_log(llm_server: LoopbackLLMServer) -> None:
    async with httpx.AsyncClient(base_url=llm_server.url) as client:
        version = (await client.get("/api/version")).json()
        tags = (await client.get("/api/tags")).json()
        models = (await client.get("/v1/models")).json()
        missing = await client.get("/nowhere")

    assert version == {"version": "0.0.0-loopback"}
    assert [m["name"] for m in tags["models"]] == list(llm_server.models)
    assert [m["id"] for m in models["data"]] == list(llm_server.models)
    assert missing.status_code == 404
    assert [(r.method, r.path, r.outcome) for r in llm_server.requests] == [
        ("GET", "/api/version", "complete"),
        ("GET", "/api/tags", "complete"),
        ("GET", "/v1/models", "complete"),
        ("GET", "/nowhere", "status"),
    ]
    assert llm_server.chat_requests == []


# Long enough that no scripted wait in these tests trips the client's own first-token limit.
PATIENT = dataclasses.replace(FAST, first_token_timeout_s=60.0)


@contextlib.asynccontextmanager
async def in_flight(wire: Wire, key: RequestKey = KEY) -> AsyncIterator[asyncio.Task[Completion]]:
    """A chat request sent in the background, yielded once the server has it; cancelled and its
    providers closed on the way out."""
    request = asyncio.create_task(wire.provider().complete(PROMPT, PATIENT, key))
    try:
        while not wire.server.chat_requests:
            await asyncio.sleep(0.01)
        yield request
    finally:
        request.cancel()
        await asyncio.gather(request, return_exceptions=True)
        await wire.close()


async def test_stop_is_prompt_with_a_request_stalled() -> None:
    server = LoopbackLLMServer().start()
    stall = 60.0
    server.script(Reply.stall_first(stall))
    async with in_flight(Wire("ollama", server)):
        await asyncio.to_thread(server.stop)
        # An order, not a time: stop() has returned and the stalled request already ended as
        # "shutdown". A stop that only waited out its join limit would have found the request still
        # in its 60 s stall, its outcome not yet set.
        assert server.chat_requests[0].outcome == "shutdown"


async def test_a_held_reply_sends_nothing_until_released(llm_server) -> None:
    release = threading.Event()
    llm_server.script(Reply.held(release, "at ", "last"))
    async with in_flight(Wire("ollama", llm_server)) as request:
        await asyncio.sleep(0.3)
        assert llm_server.chat_requests[0].chunks_sent == 0 and not request.done(), "held: nothing sent yet"
        release.set()
        done = await asyncio.wait_for(request, 60)
    # The client has the last chunk before the server's thread records how the request ended.
    assert await asyncio.to_thread(llm_server.wait_idle)
    assert done.text == "at last" and llm_server.chat_requests[0].outcome == "complete"


async def test_a_gathering_reply_waits_for_the_other_requests(llm_server) -> None:
    llm_server.default = Reply.gathered(2, "together")
    wire = Wire("ollama", llm_server)
    async with in_flight(wire) as first:
        await asyncio.sleep(0.3)
        assert llm_server.chat_requests[0].chunks_sent == 0 and not first.done(), "waits for the second"
        second = await asyncio.wait_for(wire.provider().complete(PROMPT, PATIENT, RequestKey(1, 0, 1)), 60)
        done = await asyncio.wait_for(first, 60)
    assert done.text == second.text == "together"
    a, b = llm_server.chat_requests
    assert a.overlaps(b)


async def test_a_stopped_server_refuses_connections() -> None:
    server = LoopbackLLMServer().start()
    url = server.url
    server.stop()
    wire = Wire("ollama", server)
    try:
        with pytest.raises(ModelError) as caught:
            await wire.provider(url=url).complete(PROMPT, FAST, KEY)
    finally:
        await wire.close()

    assert caught.value.kind == "unreachable"
