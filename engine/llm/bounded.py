"""Every byte a model server sends is counted before it is held.

The client libraries read a streamed line whole before handing it over (httpx's line iterator), so
a server that sends one 300 MB line makes the process hold 300 MB before any check of ours sees a
character. The transport every provider's HTTP client uses counts the bytes of each response body
as they arrive and ends the request once they pass the cap: a runaway or hostile server costs at
most that much memory, and its reply is refused with one line.

(An HTTP proxy from the environment gets a transport of httpx's own, which this cap does not see;
the character cap on the reply text, engine/llm/stream.py, still bounds what is kept.)
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import httpx

from cuda_llm.engine.llm.base import GenerateOptions

# The cap of the request being made: set by a provider around each completion (its GenerateOptions),
# read by the transport; listing models and other small requests get the default.
response_cap: contextvars.ContextVar[int] = contextvars.ContextVar(
    "cuda_llm_response_cap", default=GenerateOptions().max_response_bytes
)


class ResponseTooLarge(Exception):
    """A response body passed the cap; the request was ended."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"the response passed {limit:,} bytes")


def too_large(exc: BaseException) -> ResponseTooLarge | None:
    """The ResponseTooLarge behind an exception a client library raised (they wrap transport errors)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ResponseTooLarge):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def capped_transport(lib: ModuleType = httpx) -> Any:
    """The HTTP library's own async transport, with every response body counted against
    `response_cap`. `lib` is the library the client uses: httpx (ollama) or httpx2 (openai 3),
    which share this interface but not their classes."""

    class CappedStream(lib.AsyncByteStream):  # type: ignore[name-defined, misc]
        def __init__(self, inner: Any, limit: int) -> None:
            self._inner = inner
            self._limit = limit

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            async for chunk in self._inner:
                seen += len(chunk)
                if seen > self._limit:
                    raise ResponseTooLarge(self._limit)
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    class CappedTransport(lib.AsyncBaseTransport):  # type: ignore[name-defined, misc]
        def __init__(self) -> None:
            self._inner = lib.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            response = await self._inner.handle_async_request(request)
            response.stream = CappedStream(response.stream, response_cap.get())
            return response

        async def aclose(self) -> None:
            await self._inner.aclose()

    return CappedTransport()
