"""What the two model-server backends (Ollama, OpenAI-compatible) share: one request for one reply,
streamed under the reply's byte cap, a failure turned into one ModelError that lists the server's
models where the model was not found. Each backend says how it streams and how it reads a failure."""

from __future__ import annotations

from collections.abc import Sequence

from cuda_llm.engine.core.settings import GenerateOptions
from cuda_llm.engine.llm.base import Completion, Message, ModelError, RequestKey, TokenCallback
from cuda_llm.engine.llm.bounded import response_cap
from cuda_llm.engine.llm.http_errors import Server, with_server_models
from cuda_llm.engine.llm.spec import ModelBackend
from cuda_llm.engine.llm.stream import Deadlines, ReplyBuffer


class HttpModelBackend(ModelBackend):
    """A backend that asks a model server over HTTP; subclasses set `model` and `_server`."""

    model: str
    _server: Server

    async def complete(
        self,
        messages: Sequence[Message],
        options: GenerateOptions,
        key: RequestKey,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        buffer = ReplyBuffer(options, on_token)
        deadlines = Deadlines(options, buffer)
        cap = response_cap.set(options.max_response_bytes)
        try:
            return await self._stream(messages, options, buffer, deadlines)
        except Exception as exc:
            error = self._failure(exc, deadlines, buffer.connected)
            if error is None:
                raise
        finally:
            response_cap.reset(cap)
        error = await with_server_models(error, self._server, self.model, self.list_models)
        raise error  # outside the except block: the library's exception (and its request) is not chained on

    async def _stream(
        self, messages: Sequence[Message], options: GenerateOptions, buffer: ReplyBuffer, deadlines: Deadlines
    ) -> Completion:
        raise NotImplementedError

    def _failure(self, exc: Exception, deadlines: Deadlines | None, connected: bool) -> ModelError | None:
        """The ModelError for a failure, or None for an exception that is a bug, not a failure.
        `connected`: whether the server had answered before it (a refusal then is not "cannot reach")."""
        raise NotImplementedError

    async def list_models(self) -> list[str]:
        raise NotImplementedError
