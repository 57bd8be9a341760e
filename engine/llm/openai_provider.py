"""`openai:MODEL`: any OpenAI-compatible chat completions endpoint (vLLM, SGLang, llama.cpp server,
ollama's /v1, hosted APIs), streamed through `openai.AsyncOpenAI`.

The API key comes from the environment only and is never stored here: the client holds it, and
every text a server sends back is scrubbed of it before it goes into a message.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
from collections.abc import Sequence
from contextlib import aclosing
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cuda_llm.engine.core.settings import GenerateOptions
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
    import openai

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
# Where the openai library sends requests when neither --base-url nor OPENAI_BASE_URL names a server.
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
# Local servers need no key, but the client refuses to start without one.
PLACEHOLDER_KEY = "no-key-needed"
# A LAN or loopback connection opens in milliseconds; a host that drops packets is reported
# unreachable after this long instead of waiting out the first-token timeout (meant for loading).
CONNECT_TIMEOUT_S = 10.0
# Listing models is a quick metadata call; the start screen must not hang on a dead server.
LIST_TIMEOUT_S = 10.0
# What the client raises on an event it cannot parse: data that is not JSON, JSON that is not a
# chunk object, bytes that are not UTF-8 (its SSE decoder is strict).
_MALFORMED: tuple[type[Exception], ...] = (json.JSONDecodeError, UnicodeDecodeError, AttributeError, TypeError)


def _http_library() -> ModuleType:
    """The HTTP library the openai client is built on: httpx2 from openai 3, httpx before."""
    import openai

    return importlib.import_module(openai.DefaultAsyncHttpxClient.__mro__[1].__module__.split(".")[0])


class OpenAIProvider(HttpModelBackend):
    kind = "openai"
    server_option = "base_url"
    default_server = "OPENAI_BASE_URL or the default"
    key_env = DEFAULT_KEY_ENV

    @classmethod
    def create(cls, spec: ModelSpec, server: str | None, load_replay: ReplayLoader | None) -> ModelProvider:
        return cls(spec.name, base_url=server)

    @classmethod
    def unnamed_server(cls) -> str | None:
        return display_url(os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL)

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = DEFAULT_KEY_ENV) -> None:
        self.model = model
        self.spec = f"openai:{model}"
        # Imported here, not with this module (seconds): `--model` is checked before it loads.
        import openai

        key = os.environ.get(api_key_env) or None
        self._client = openai.AsyncOpenAI(
            api_key=key or PLACEHOLDER_KEY,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
            max_retries=0,  # retries are complete_with_retries' job, with the UI told about each one
            timeout=openai.Timeout(None, connect=CONNECT_TIMEOUT_S),
            default_headers=IDENTITY,
            # trust_env=False: the capped transport routes the environment's proxies itself.
            http_client=openai.DefaultAsyncHttpxClient(transport=capped_transport(_http_library()), trust_env=False),
        )
        self.where = display_url(str(self._client.base_url))
        self._server = Server(
            label=f"the OpenAI-compatible server at {self.where}",
            reach_hint="is it running? set --base-url or OPENAI_BASE_URL",
            host_hint="check the name in --base-url or OPENAI_BASE_URL",
            key_hint=f"check {api_key_env}" if key else f"set {api_key_env}",
            not_found=lambda m: (
                f"model '{m}' not found at {self.where}: check the name (`cuda-llm doctor` lists the server's "
                "models) and that the base URL ends in /v1"
            ),
            secret=key,
        )
        # Whether the server accepts stream_options (token counts in the stream); None until known.
        self._usage_supported: bool | None = None

    def __repr__(self) -> str:
        return f"OpenAIProvider({self.spec!r}, where={self.where!r})"

    async def _stream(
        self, messages: Sequence[Message], options: GenerateOptions, buffer: ReplyBuffer, deadlines: Deadlines
    ) -> Completion:
        finish: str | None = None
        usage: Any = None
        async with deadlines.watch():
            stream = await self._open(messages, options)
            buffer.connected = True
            async with aclosing(library_parts(stream, _MALFORMED)) as chunks:
                async for chunk in chunks:
                    usage = getattr(chunk, "usage", None) or usage
                    more = True
                    for choice in getattr(chunk, "choices", None) or ():
                        if getattr(choice, "index", 0) != 0:
                            continue
                        delta = getattr(choice, "delta", None)
                        more = buffer.add(getattr(delta, "content", None), _reasoning(delta))
                        finish = getattr(choice, "finish_reason", None) or finish
                    deadlines.tick()
                    if not more:
                        break
        if finish is None and not buffer.cut_at_max_tokens:
            raise self._server.cut_off("the stream ended without a finish_reason")
        if not buffer.text.strip():
            raise self._server.empty(self.model, options.max_tokens if buffer.cut_at_max_tokens else None)
        return buffer.completion(
            self.model,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            finish_reason=finish,
        )

    async def _open(self, messages: Sequence[Message], options: GenerateOptions) -> Any:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "stream": True,
            # max_tokens, not max_completion_tokens: the one every compatible server understands.
            "max_tokens": options.max_tokens,
        }
        if options.temperature is not None:
            request["temperature"] = options.temperature
        if options.seed is not None:
            request["seed"] = options.seed
        if self._usage_supported is False:
            return await self._client.chat.completions.create(**request)
        import openai

        try:
            stream = await self._client.chat.completions.create(**request, stream_options={"include_usage": True})
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            # Servers that predate stream_options either ignore it or reject it by name; a 400
            # that does not name it is about something else and must not be sent twice.
            if self._usage_supported or not _names_stream_options(exc):
                raise
            self._usage_supported = False
            return await self._client.chat.completions.create(**request)
        self._usage_supported = True
        return stream

    async def list_models(self) -> list[str]:
        try:
            async with asyncio.timeout(LIST_TIMEOUT_S):
                page = await self._client.models.list()
            return [m.id for m in page.data]
        except Exception as exc:
            error = self._failure(exc, None, connected=False)
            if error is None:
                raise
        if error.kind == "not_found" and (v1 := await self._answers_at_v1()) is not None:
            # Every request of a session would be a 404 too, retried and left paused: said now instead.
            raise ModelError(
                "bad_request",
                f"the OpenAI-compatible server at {self.where} answers at {v1}: use --base-url {v1} "
                "(OpenAI-compatible base URLs end in /v1)",
            )
        raise error

    async def _answers_at_v1(self) -> str | None:
        """The base URL with /v1 added, where the server lists its models there and not at the URL
        given (vLLM, llama.cpp and ollama all serve under /v1); None otherwise."""
        base = str(self._client.base_url).rstrip("/")
        if base.endswith("/v1"):
            return None
        with_v1 = f"{base}/v1"
        try:
            async with asyncio.timeout(LIST_TIMEOUT_S):
                await self._client.with_options(base_url=with_v1).models.list()
        except Exception:  # not there either: the first answer stands
            return None
        return display_url(with_v1)

    async def close(self) -> None:
        await self._client.close()

    def _failure(self, exc: Exception, deadlines: Deadlines | None, connected: bool) -> ModelError | None:
        """The ModelError for a failure, or None for an exception that is a bug, not a failure.
        `connected`: the server had answered with a stream when it happened."""
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
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return server.io_timeout() if connected else server.unreachable(exc, connect_timeout=True)
        if isinstance(exc, openai.APIConnectionError):
            return server.cut_off("the connection closed mid-reply") if connected else server.unreachable(exc)
        if isinstance(exc, openai.APIResponseValidationError | MalformedStream | json.JSONDecodeError):
            return server.malformed(exc)
        if isinstance(exc, openai.APIStatusError):
            return server.http_status(
                exc.status_code, _error_text(exc), self.model, retry_after_seconds(exc.response.headers)
            )
        if isinstance(exc, openai.APIError):  # an error event inside a 200 stream
            return server.stream_error(_error_text(exc))
        return None


def _reasoning(delta: Any) -> str | None:
    """Reasoning streamed beside the reply: vLLM and SGLang call it reasoning_content, some
    servers (ollama's /v1, OpenRouter) reasoning."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def _names_stream_options(exc: openai.APIError) -> bool:
    text = f"{exc.message} {exc.body}".lower()
    return "stream_options" in text or "include_usage" in text


def _error_text(exc: openai.APIError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    if isinstance(body, str) and body:
        return body
    return exc.message
