"""`manual`: the person is the model. Each request waits until its reply text is supplied.

The TUI shows the prompt and opens an editor for every request; what the person writes (or pastes)
goes through `provide(key, text)` and is then judged by the same three checks and recorded like a
model's reply, so the application is useful with no model server at all. UI-free: the waiting is
plain asyncio, keyed by the request key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from cuda_llm.engine.core.settings import GenerateOptions
from cuda_llm.engine.llm.base import Completion, Message, ModelError, ModelProvider, RequestKey, TokenCallback
from cuda_llm.engine.llm.spec import ModelBackend, ModelSpec, ReplayLoader

MANUAL_SPEC = "manual"


class ManualProvider(ModelBackend):
    kind = MANUAL_SPEC
    takes_name = False
    person_writes = True
    spec = MANUAL_SPEC
    where = "the editor"

    @classmethod
    def create(cls, spec: ModelSpec, server: str | None, load_replay: ReplayLoader | None) -> ModelProvider:
        return cls()

    def __init__(self) -> None:
        self._waiting: dict[RequestKey, asyncio.Future[str]] = {}
        # Text supplied before its request was made (a person who is faster than the loop).
        self._early: dict[RequestKey, str] = {}
        self.prompts: dict[RequestKey, tuple[Message, ...]] = {}

    def __repr__(self) -> str:
        return f"ManualProvider(waiting={self.waiting()})"

    def waiting(self) -> list[RequestKey]:
        """The requests that wait for a person's text, oldest round first."""
        return sorted((k for k, f in self._waiting.items() if not f.done()), key=lambda k: (k.round, k.attempt, k.slot))

    def provide(self, key: RequestKey, text: str) -> None:
        """Answer request `key` with `text` (the whole reply: a cuda block and a json block)."""
        future = self._waiting.get(key)
        if future is not None and not future.done():
            future.set_result(text)
        else:
            self._early[key] = text

    def skip(self, key: RequestKey, reason: str = "skipped by the person") -> None:
        """Give up on one request: the loop records it as a failed request, not as a candidate."""
        future = self._waiting.get(key)
        if future is not None and not future.done():
            # Not a retryable kind: a retry would only ask the same person again at once.
            future.set_exception(ModelError("bad_request", f"no candidate written: {reason}"))

    def cancel_all(self, reason: str = "the session is stopping") -> None:
        for key in list(self._waiting):
            self.skip(key, reason)

    async def complete(
        self,
        messages: Sequence[Message],
        options: GenerateOptions,
        key: RequestKey,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        loop = asyncio.get_running_loop()
        started = loop.time()
        self.prompts[key] = tuple(messages)
        text = self._early.pop(key, None)
        if text is None:
            future: asyncio.Future[str] = loop.create_future()
            self._waiting[key] = future
            try:
                text = await future
            finally:
                self._waiting.pop(key, None)
        if on_token is not None and text:
            on_token(text)
        return Completion(
            text=text,
            model=MANUAL_SPEC,
            prompt_tokens=None,
            completion_tokens=None,
            elapsed_s=loop.time() - started,
            first_token_s=None,
            finish_reason="stop",
        )

    async def list_models(self) -> list[str]:
        return [MANUAL_SPEC]

    async def close(self) -> None:
        self.cancel_all("the session was closed")
