"""`ollama:MODEL`: the ollama server's native /api/chat, streamed through `ollama.AsyncClient`.

The native API (not ollama's /v1) is the one that carries num_ctx. Every failure becomes a
ModelError that names the server; see http_errors.Server for the wording.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from cuda_llm.engine.core.settings import GenerateOptions
from cuda_llm.engine.llm.addresses import ollama_url
from cuda_llm.engine.llm.base import Completion, Message, ModelError, ModelProvider
from cuda_llm.engine.llm.bounded import (
    IDENTITY,
    capped_transport,
    redirected,
    too_large,
    undecodable,
)
from cuda_llm.engine.llm.http_backend import HttpModelBackend
from cuda_llm.engine.llm.http_errors import Server, display_url, retry_after_seconds
from cuda_llm.engine.llm.spec import ModelSpec, ReplayLoader
from cuda_llm.engine.llm.stream import Deadlines, MalformedStream, ReplyBuffer, library_parts

if TYPE_CHECKING:
    # Imported with the client (ollama's own import needs it anyway): naming the backend (the start
    # screen's forms, a spec's check) loads no HTTP library.
    import httpx

# A LAN or loopback connection opens in milliseconds; a host that drops packets is reported
# unreachable after this long instead of waiting out the first-token timeout (meant for loading).
CONNECT_TIMEOUT_S = 10.0
# Listing models is a quick metadata call; the start screen must not hang on a dead server.
LIST_TIMEOUT_S = 10.0


def _malformed() -> tuple[type[Exception], ...]:
    """What the client raises on a stream line it cannot parse: not JSON, JSON that is not an object
    (AttributeError on .get), an object that is not a chat response."""
    from pydantic import ValidationError

    return (json.JSONDecodeError, ValidationError, AttributeError, TypeError)


class _HttpStatusError(Exception):
    """An HTTP error status, caught before the ollama client turns it into a ResponseError (which
    drops the headers, and with them Retry-After)."""

    def __init__(self, status: int, text: str, retry_after_s: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.text = text
        self.retry_after_s = retry_after_s


async def _raise_for_status(response: httpx.Response) -> None:
    # An httpx response hook runs inside the request's own task, so the error reaches the
    # caller that made this request even with many requests in flight on one client.
    if response.status_code < 400:
        return
    await response.aread()
    text = response.text
    try:
        body = json.loads(text)
        if isinstance(body, dict) and isinstance(body.get("error"), str):
            text = body["error"]
    except ValueError:
        pass
    raise _HttpStatusError(response.status_code, text, retry_after_seconds(response.headers))


class OllamaProvider(HttpModelBackend):
    kind = "ollama"
    server_option = "host"
    default_server = "OLLAMA_HOST or the local default"

    @classmethod
    def recorded_server(cls, address: str) -> str:
        return display_url(ollama_url(address))

    @classmethod
    def unnamed_server(cls) -> str | None:
        return display_url(ollama_url(None))

    @classmethod
    def create(cls, spec: ModelSpec, server: str | None, load_replay: ReplayLoader | None) -> ModelProvider:
        return cls(spec.name, host=server)

    def __init__(self, model: str, host: str | None = None) -> None:
        self.model = model
        self.spec = f"ollama:{model}"
        self.where = ollama_url(host)
        self._server = Server(
            label=f"the ollama server at {self.where}",
            reach_hint="is `ollama serve` running? set --host or OLLAMA_HOST",
            host_hint="check the name in --host or OLLAMA_HOST",
            key_hint="set OLLAMA_API_KEY if the server needs a key",
            not_found=lambda m: f"model '{m}' not found on the ollama server at {self.where}: `ollama pull {m}`",
            # The client sends $OLLAMA_API_KEY as a bearer token; a server may quote it back.
            secret=os.environ.get("OLLAMA_API_KEY") or None,
        )
        # Imported here, not with this module: the library reads OLLAMA_HOST when imported (checked
        # first, engine/llm/addresses.py), and `--model` is checked before any client library loads.
        import httpx
        import ollama

        self._client = ollama.AsyncClient(
            host=self.where,
            timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_S),
            headers=IDENTITY,
            event_hooks={"response": [_raise_for_status]},
            transport=capped_transport(httpx),
            trust_env=False,  # the capped transport routes the environment's proxies itself
        )

    def __repr__(self) -> str:
        return f"OllamaProvider({self.spec!r}, where={self.where!r})"

    async def _stream(
        self, messages: Sequence[Message], options: GenerateOptions, buffer: ReplyBuffer, deadlines: Deadlines
    ) -> Completion:
        final: Any = None
        async with deadlines.watch():
            stream = await self._client.chat(
                model=self.model,
                messages=[{"role": m.role, "content": m.content} for m in messages],
                stream=True,
                options=_options(options),
                think=None,
            )
            async with aclosing(library_parts(stream, _malformed())) as parts:
                async for part in parts:
                    message = part.message
                    more = buffer.add(message.content, message.thinking) if message else buffer.add(None)
                    deadlines.tick()
                    if part.done:
                        final = part
                        break
                    if not more:
                        break
        if final is None and not buffer.cut_at_max_tokens:
            raise self._server.cut_off("the stream ended without done:true")
        if not buffer.text.strip():
            raise self._server.empty(self.model, options.max_tokens if buffer.cut_at_max_tokens else None)
        return buffer.completion(
            self.model,
            prompt_tokens=getattr(final, "prompt_eval_count", None),
            completion_tokens=getattr(final, "eval_count", None),
            finish_reason=getattr(final, "done_reason", None) or ("stop" if final is not None else None),
        )

    async def list_models(self) -> list[str]:
        try:
            async with asyncio.timeout(LIST_TIMEOUT_S):
                listing = await self._client.list()
            return [m.model for m in listing.models if m.model]
        except Exception as exc:
            error = self._failure(exc, None)
            if error is None:
                raise
        raise error

    async def close(self) -> None:
        await self._client.close()

    def _failure(self, exc: Exception, deadlines: Deadlines | None, connected: bool = False) -> ModelError | None:
        """The ModelError for a failure, or None for an exception that is a bug, not a failure.
        (`connected` is not needed here: the library raises its connection errors before any reply.)"""
        server = self._server
        if isinstance(exc, ModelError):
            return exc
        if (moved := redirected(exc)) is not None:
            return server.redirected(moved.target)
        if (big := too_large(exc)) is not None:
            return server.too_large(big.limit)
        if (bad := undecodable(exc)) is not None:
            return server.malformed(bad)
        if isinstance(exc, TimeoutError):  # one of our deadlines
            if deadlines is None:
                return server.timeout(True, LIST_TIMEOUT_S)
            return deadlines.expired(server)
        if isinstance(exc, _HttpStatusError):
            return server.http_status(exc.status, exc.text, self.model, exc.retry_after_s)
        import httpx
        import ollama
        from pydantic import ValidationError

        if isinstance(exc, ollama.ResponseError):
            if exc.status_code < 0:  # an {"error": ...} line inside a 200 stream
                return server.stream_error(exc.error)
            return server.http_status(exc.status_code, exc.error, self.model)
        if isinstance(exc, httpx.ConnectTimeout):
            return server.unreachable(exc, connect_timeout=True)
        # The streaming call raises httpx.ConnectError; the plain calls, the builtin ConnectionError.
        if isinstance(exc, httpx.ConnectError | ConnectionError):
            return server.unreachable(exc)
        if isinstance(exc, httpx.TimeoutException):
            return server.io_timeout()
        if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
            return server.cut_off("the connection closed mid-reply")
        if isinstance(exc, MalformedStream | json.JSONDecodeError | ValidationError):
            return server.malformed(f"a line that is not a chat response: {exc}")
        if isinstance(exc, httpx.HTTPError):
            return server.malformed(type(exc).__name__)
        return None


def _options(options: GenerateOptions) -> dict[str, Any]:
    out: dict[str, Any] = {"num_predict": options.max_tokens}
    if options.temperature is not None:
        out["temperature"] = options.temperature
    if options.num_ctx is not None:
        out["num_ctx"] = options.num_ctx
    if options.seed is not None:
        out["seed"] = options.seed
    return out
