"""The manual provider: the person's text answers each request, keyed by request; nothing waits
forever once the session stops."""

from __future__ import annotations

import asyncio

import pytest

from cuda_llm.engine.core.settings import GenerateOptions
from cuda_llm.engine.llm.base import Message, ModelError, RequestKey
from cuda_llm.engine.llm.manual_provider import ManualProvider
from cuda_llm.engine.llm.spec import parse_model_spec, person_writes

PROMPT = [Message("user", "write a kernel")]


async def test_complete_waits_for_the_text_of_its_own_key():
    p = ManualProvider()
    tokens: list[str] = []
    first = asyncio.create_task(p.complete(PROMPT, GenerateOptions(), RequestKey(1, 0, 0), tokens.append))
    second = asyncio.create_task(p.complete(PROMPT, GenerateOptions(), RequestKey(1, 0, 1)))
    await asyncio.sleep(0)
    assert p.waiting() == [RequestKey(1, 0, 0), RequestKey(1, 0, 1)]
    p.provide(RequestKey(1, 0, 1), "second")
    assert (await second).text == "second" and not first.done()
    p.provide(RequestKey(1, 0, 0), "first")
    done = await first
    assert done.text == "first" and tokens == ["first"] and done.finish_reason == "stop"
    assert p.prompts[RequestKey(1, 0, 0)] == tuple(PROMPT) and p.waiting() == []


async def test_text_given_before_the_request_is_kept():
    p = ManualProvider()
    p.provide(RequestKey(2, 0, 0), "early")
    assert (await p.complete(PROMPT, GenerateOptions(), RequestKey(2, 0, 0))).text == "early"


async def test_skip_and_close_end_the_wait_with_a_model_error():
    p = ManualProvider()
    task = asyncio.create_task(p.complete(PROMPT, GenerateOptions(), RequestKey(1, 0, 0)))
    await asyncio.sleep(0)
    await p.close()
    with pytest.raises(ModelError) as caught:
        await task
    assert caught.value.kind == "bad_request" and not caught.value.retryable


def test_manual_spec():
    assert isinstance(parse_model_spec("manual"), ManualProvider)
    assert person_writes("Manual") and not person_writes("ollama:manual") and not person_writes(None)
