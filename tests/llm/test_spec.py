"""--model SPEC to a provider."""

from __future__ import annotations

import pytest

from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.llm.base import RequestKey
from cuda_llm.engine.llm.ollama_provider import OllamaProvider
from cuda_llm.engine.llm.openai_provider import OpenAIProvider
from cuda_llm.engine.llm.replay_provider import ReplayProvider
from cuda_llm.engine.llm.spec import parse_model_spec


async def test_ollama_model_keeps_its_tag() -> None:
    provider = parse_model_spec("ollama:qwen2.5-coder:32b", host="gpu-box:11500")
    try:
        assert isinstance(provider, OllamaProvider)
        assert provider.model == "qwen2.5-coder:32b"
        assert provider.spec == "ollama:qwen2.5-coder:32b"
        assert provider.where == "http://gpu-box:11500"
    finally:
        await provider.close()


async def test_openai_model_and_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    provider = parse_model_spec("openai:gpt-4.1", base_url="http://vllm.lan:8000/v1/")
    try:
        assert isinstance(provider, OpenAIProvider)
        assert (provider.model, provider.spec, provider.where) == (
            "gpt-4.1",
            "openai:gpt-4.1",
            "http://vllm.lan:8000/v1",
        )
    finally:
        await provider.close()


async def test_replay_asks_the_loader_for_the_session() -> None:
    asked: list[str] = []
    replies = {RequestKey(1, 0, 0): "recorded"}

    def load(session: str) -> dict[RequestKey, str]:
        asked.append(session)
        return replies

    provider = parse_model_spec("replay:12", load_replay=load)

    assert isinstance(provider, ReplayProvider)
    assert asked == ["12"]
    assert (provider.spec, provider.where) == ("replay:12", "session 12")


def test_replay_without_a_loader_is_a_user_error() -> None:
    with pytest.raises(UserError, match="sessions database"):
        parse_model_spec("replay:12")


@pytest.mark.parametrize("spec", ["", "qwen2.5-coder", "ollama:", "ollama:  ", "gemini:pro", ":x", "openai"])
def test_bad_spec_is_one_clear_line(spec: str) -> None:
    with pytest.raises(UserError) as caught:
        parse_model_spec(spec)

    assert str(caught.value) == f"unknown model spec {spec!r}: use ollama:MODEL, openai:MODEL or replay:SESSION"


async def test_the_kind_is_case_insensitive() -> None:
    provider = parse_model_spec("Ollama:llama3")
    try:
        assert provider.spec == "ollama:llama3"
    finally:
        await provider.close()
