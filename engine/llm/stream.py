"""What every streaming provider does with the text it receives: collect it, pass each delta to the
consumer, time the first token, cut a reply that runs past max_tokens, and keep the deadlines."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cuda_llm.engine.core.settings import GenerateOptions
from cuda_llm.engine.llm.base import Completion, TokenCallback

T = TypeVar("T")


class MalformedStream(Exception):
    """The client library could not make sense of a line or event the server sent."""


async def library_parts(stream: AsyncIterator[T], malformed: tuple[type[Exception], ...]) -> AsyncGenerator[T, None]:
    """Iterate a client library's stream, turning the exceptions its parser raises on a bad line
    into MalformedStream. Only the library's own step is guarded, so an exception in the
    consumer's code (on_token) is never mistaken for a bad server. Closing this closes `stream`,
    which hangs up the connection."""
    try:
        while True:
            try:
                part = await anext(stream)
            except StopAsyncIteration:
                return
            except malformed as exc:
                raise MalformedStream(f"{type(exc).__name__}: {exc}") from None
            yield part
    finally:
        aclose = getattr(stream, "aclose", None) or getattr(stream, "close", None)
        if aclose is not None:
            await aclose()


@dataclass
class ReplyBuffer:
    """The text of one reply as it streams in."""

    options: GenerateOptions
    on_token: TokenCallback | None
    started: float = field(default_factory=lambda: asyncio.get_running_loop().time())
    parts: list[str] = field(default_factory=list)
    chunks: int = 0
    chars: int = 0
    first_token_s: float | None = None  # the first text token
    # The first sign of generation, text or reasoning: a reasoning model may think for minutes
    # before its first text token, and that is not a stalled server.
    first_activity_s: float | None = None
    cut_at_max_tokens: bool = False
    # The server has answered with a stream: a connection error after this is a cut reply, not
    # an unreachable server.
    connected: bool = False

    def add(self, text: str | None, reasoning: str | None = None) -> bool:
        """Take one delta (its text, and any reasoning the server streams separately, which is
        not part of the reply); False once the reply has reached max_tokens and must be cut.
        Reasoning tokens count towards max_tokens, as they do on the servers."""
        if text or reasoning:
            if self.first_activity_s is None:
                self.first_activity_s = self.elapsed()
            self.chunks += 1
        limit = self.options.max_tokens
        max_chars = limit * self.options.max_chars_per_token  # its reason: GenerateOptions
        if text:
            if self.first_token_s is None:
                self.first_token_s = self.elapsed()
            # Cut before holding it: one huge chunk must not be kept whole past the cap.
            text = text[: max(0, max_chars - self.chars)]
            self.parts.append(text)
            self.chars += len(text)
            if self.on_token is not None and text:
                self.on_token(text)
        if self.chunks >= limit or self.chars >= max_chars:
            self.cut_at_max_tokens = True
            return False
        return True

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def elapsed(self) -> float:
        return asyncio.get_running_loop().time() - self.started

    def completion(
        self, model: str, prompt_tokens: int | None, completion_tokens: int | None, finish_reason: str | None
    ) -> Completion:
        if self.cut_at_max_tokens or (completion_tokens is not None and completion_tokens >= self.options.max_tokens):
            finish_reason = "length"
        return Completion(
            text=self.text,
            model=model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            elapsed_s=self.elapsed(),
            first_token_s=self.first_token_s,
            finish_reason=finish_reason,
        )


class Deadlines:
    """first_token_timeout_s from the start until generation begins (the first text or reasoning
    token), then timeout_s from there to the last token (GenerateOptions' meaning), and from then on
    never more than idle_timeout_s between two pieces of the stream. Raises TimeoutError out of
    `watch()`; `expired` says which limit it was."""

    def __init__(self, options: GenerateOptions, buffer: ReplyBuffer) -> None:
        self.options = options
        self.buffer = buffer
        self._timeout: asyncio.Timeout | None = None
        self._last_token: float | None = None  # (the loop's clock)

    @asynccontextmanager
    async def watch(self) -> AsyncIterator[Deadlines]:
        async with asyncio.timeout_at(self.buffer.started + self.options.first_token_timeout_s) as cm:
            self._timeout = cm
            yield self

    def tick(self) -> None:
        """Call after each piece of the stream: once generation has begun, the deadline is the
        sooner of the whole reply's (first token + timeout_s) and the next piece's (now + idle)."""
        first = self.buffer.first_activity_s
        if first is None or self._timeout is None:
            return
        self._last_token = asyncio.get_running_loop().time()
        self._timeout.reschedule(min(self._reply_deadline(first), self._last_token + self.options.idle_timeout_s))

    def _reply_deadline(self, first: float) -> float:
        return self.buffer.started + first + self.options.timeout_s

    @property
    def waiting_for_first_token(self) -> bool:
        return self.buffer.first_activity_s is None

    @property
    def stalled(self) -> bool:
        """Whether the limit that ran out was the silence between two pieces, not the whole reply's."""
        first = self.buffer.first_activity_s
        if first is None or self._last_token is None:
            return False
        return self._last_token + self.options.idle_timeout_s < self._reply_deadline(first)

    def expired(self, server: Any) -> Any:
        """The ModelError (from engine/llm/http_errors.py's Server) for the limit that ran out."""
        if self.waiting_for_first_token:
            return server.timeout(True, self.options.first_token_timeout_s)
        if self.stalled:
            return server.stalled(self.options.idle_timeout_s)
        return server.timeout(False, self.options.timeout_s)

    def limit_s(self) -> float:
        """The limit that ran out (for the message)."""
        if self.stalled:
            return self.options.idle_timeout_s
        return self.options.first_token_timeout_s if self.waiting_for_first_token else self.options.timeout_s
