"""The interface every model provider implements, and the errors they raise.

A provider streams one completion per call; the FSR loop calls it N times concurrently for the N
candidates of a round. Errors carry a `kind` (what went wrong), `retryable`, and a one-line message
that names the server and says what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from cuda_llm.engine.core.errors import UserError

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
class GenerateOptions:
    temperature: float | None = None
    num_ctx: int | None = None  # ollama only: the context window
    seed: int | None = None
    # A reply longer than this is cut off (an endless reply must not run forever); kernels with a
    # plan and a short explanation fit in a few thousand tokens.
    max_tokens: int = 8192
    # Wall-clock limit for one completion, first token to last.
    timeout_s: float = 600.0
    # Time allowed for the connection and the first token (a cold model may load for a while).
    first_token_timeout_s: float = 180.0
    # Bytes one response body may bring, counted as received and again as decoded (a compressed body
    # is inflated piece by piece: engine/llm/bounded.py). A reply of max_tokens tokens is a
    # few hundred KB of text plus a hundred or so bytes of framing per streamed chunk: a few MB at
    # most. A server that sends more is runaway or hostile, and nothing past this is held.
    max_response_bytes: int = 16 * 1024 * 1024
    # Servers enforce max_tokens themselves (num_predict, max_tokens); the client also counts so that
    # a server that ignores it cannot stream forever. Each streamed chunk carries at least one token,
    # so counting chunks never cuts a reply early; a server that sends few, huge chunks is caught by
    # this character cap instead (max_tokens x this). Code averages about 4 characters per token, so
    # 32 per token leaves a wide margin while still bounding memory.
    max_chars_per_token: int = 32


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
    "timeout",  # no first token, or no completion, in time
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
RETRYABLE: frozenset[str] = frozenset(
    {"unreachable", "timeout", "rate_limited", "server_error", "protocol", "cut_off", "empty"}
)


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


@dataclass(frozen=True)
class RetryPolicy:
    # Three tries with exponential backoff ride out a restarting server or a brief 429 without
    # leaving a person waiting minutes before they are told what is wrong.
    attempts: int = 3
    base_delay_s: float = 2.0
    max_delay_s: float = 30.0
    retry_kinds: frozenset[str] = field(default_factory=lambda: RETRYABLE)
