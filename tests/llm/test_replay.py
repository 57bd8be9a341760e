"""replay:SESSION plays recorded replies back by request key."""

from __future__ import annotations

import pytest

from cuda_llm.engine.core.settings import GenerateOptions
from cuda_llm.engine.llm.base import Message, ModelError, RequestKey
from cuda_llm.engine.llm.replay_provider import REPLAY_CHUNK_CHARS, ReplayProvider
from cuda_llm.engine.llm.retry import complete_with_retries

PROMPT = [Message("user", "anything: a replay ignores the prompt")]
REPLY = "```cuda\n" + "x" * 300 + "\n```\n"


async def test_the_recorded_reply_streams_in_pieces() -> None:
    provider = ReplayProvider({RequestKey(2, 1, 3): REPLY}, source="12", chunk_delay_s=0)
    pieces: list[str] = []

    done = await provider.complete(PROMPT, GenerateOptions(), RequestKey(2, 1, 3), pieces.append)

    assert done.text == REPLY
    assert "".join(pieces) == REPLY
    assert len(pieces) == -(-len(REPLY) // REPLAY_CHUNK_CHARS) > 1
    assert (done.model, done.finish_reason, done.retries) == ("replay:12", "stop", 0)
    assert done.first_token_s is not None


async def test_a_request_the_session_never_made_is_not_found() -> None:
    provider = ReplayProvider({RequestKey(1, 0, 0): REPLY}, source="12", chunk_delay_s=0)

    with pytest.raises(ModelError) as caught:
        await provider.complete(PROMPT, GenerateOptions(), RequestKey(1, 0, 4))

    assert caught.value.kind == "not_found"
    assert not caught.value.retryable
    assert str(caught.value).startswith("session 12 has no recorded reply for round 1, attempt 0, candidate 4: ")


async def test_not_found_is_not_retried() -> None:
    provider = ReplayProvider({}, source="7", chunk_delay_s=0)
    retries: list[int] = []

    with pytest.raises(ModelError, match="session 7 has no recorded reply"):
        await complete_with_retries(
            provider, PROMPT, GenerateOptions(), RequestKey(1, 0, 0), on_retry=lambda n, e, d: retries.append(n)
        )

    assert retries == []


async def test_the_recording_is_copied() -> None:
    replies = {RequestKey(1, 0, 0): "first"}
    provider = ReplayProvider(replies, source="3", chunk_delay_s=0)
    replies[RequestKey(1, 0, 0)] = "changed later"

    done = await provider.complete(PROMPT, GenerateOptions(), RequestKey(1, 0, 0))

    assert done.text == "first"
    assert await provider.list_models() == ["replay:3"]
