"""`--model SPEC` to a provider: ollama:MODEL, openai:MODEL, replay:SESSION, or manual (the TUI)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.llm.base import ModelProvider, RequestKey

SPEC_HELP = "use ollama:MODEL, openai:MODEL or replay:SESSION"

ReplayLoader = Callable[[str], Mapping[RequestKey, str]]


def parse_model_spec(
    spec: str,
    host: str | None = None,
    base_url: str | None = None,
    load_replay: ReplayLoader | None = None,
) -> ModelProvider:
    """The provider for a spec. Only the first ':' separates the kind, so ollama model tags stay
    whole (ollama:qwen2.5-coder:32b). `load_replay` reads a session's recorded replies (the
    sessions store supplies it); a replay spec without one is a UserError."""
    kind, sep, name = spec.strip().partition(":")
    kind, name = kind.strip().lower(), name.strip()
    if kind == "manual":  # the person writes each candidate (the TUI supplies the text)
        from cuda_llm.engine.llm.manual_provider import ManualProvider

        return ManualProvider()
    if not sep or not name or kind not in ("ollama", "openai", "replay"):
        raise UserError(f"unknown model spec {spec!r}: {SPEC_HELP}")
    if kind == "ollama":
        from cuda_llm.engine.llm.ollama_provider import OllamaProvider

        return OllamaProvider(name, host=host)
    if kind == "openai":
        from cuda_llm.engine.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(name, base_url=base_url)
    if load_replay is None:
        raise UserError(f"model spec {spec!r} replays a stored session, which needs the sessions database")
    from cuda_llm.engine.llm.replay_provider import ReplayProvider

    return ReplayProvider(load_replay(name), source=name)


def server_of(provider: ModelProvider) -> str | None:
    """The server a provider talks to, as recorded with its session (never a key, nor a user name
    or password in the URL); None for providers with no server (replay, manual)."""
    from cuda_llm.engine.llm.http_errors import display_url

    where = getattr(provider, "where", None)
    if provider.spec.split(":", 1)[0] not in ("ollama", "openai") or not where:
        return None
    return display_url(where)
