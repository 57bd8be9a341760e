"""The interface every model provider implements, and the errors they raise.

A provider streams one completion per call; the FSR loop calls it N times concurrently for the N
candidates of a round. Errors carry a `kind` (what went wrong), `retryable`, and a one-line message
that names the server and says what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.settings import RETRYABLE, GenerateOptions

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class RequestKey:
    """Which request of a session this is: lets the replay provider find the recorded reply."""

    round: int
    attempt: int  # 0 for the round's first request, 1.. for repairs
    slot: int  # 0..N-1, the candidate index within the request batch


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    elapsed_s: float  # request start to last token
    first_token_s: float | None  # request start to first token
    finish_reason: str | None  # "stop", "length" (cut at max_tokens), ...
    retries: int = 0


ErrorKind = Literal[
    "unreachable",  # connection refused, DNS failure
    "timeout",  # no first token in time, or silence mid-reply (GenerateOptions.idle_timeout_s)
    "too_slow",  # still streaming timeout_s after the first token: not retried
    "not_found",  # unknown model (HTTP 404)
    "auth",  # 401/403: missing or wrong key
    "rate_limited",  # 429
    "server_error",  # 5xx
    "bad_request",  # 400: the server refused the request (context too long...)
    "protocol",  # malformed stream (bad NDJSON/SSE)
    "cut_off",  # the stream ended before the server said it was done
    "empty",  # a reply with no text
    "too_large",  # the response passed GenerateOptions.max_response_bytes
]


class ModelError(UserError):
    def __init__(self, kind: ErrorKind, message: str, retry_after_s: float | None = None) -> None:
        self.kind = kind
        self.retry_after_s = retry_after_s
        super().__init__(message)

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE


TokenCallback = Callable[[str], None]


class ModelProvider(Protocol):
    spec: str  # "ollama:qwen2.5-coder:32b", "openai:gpt-4.1", "replay:<session id>"
    where: str  # the server, for messages ("http://127.0.0.1:11434"), or "session <id>"

    async def complete(
        self,
        messages: Sequence[Message],
        options: GenerateOptions,
        key: RequestKey,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        """Stream one completion; call on_token with each text delta; raise ModelError."""
        ...

    async def list_models(self) -> list[str]:
        """Models the server offers (for the start screen); raise ModelError if unreachable."""
        ...

    async def close(self) -> None: ...
