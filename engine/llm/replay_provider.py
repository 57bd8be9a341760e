"""`replay:SESSION`: the model replies recorded in a stored session, played back by request key so
a session can be re-judged (on another GPU, with a newer judge) with no model at all."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.settings import GenerateOptions
from cuda_llm.engine.llm.base import Completion, Message, ModelError, ModelProvider, RequestKey, TokenCallback
from cuda_llm.engine.llm.spec import ModelBackend, ModelSpec, ReplayLoader

# Replies stream in pieces of this size so the UI shows them arriving as it does for a live
# model; 64 characters is about a line of code.
REPLAY_CHUNK_CHARS = 64
# A pause between pieces keeps the replay watchable without making it slow: an 8 KB reply plays
# in about a quarter of a second. Tests pass 0.
REPLAY_CHUNK_DELAY_S = 0.002


class ReplayProvider(ModelBackend):
    kind = "replay"
    name_hint = "SESSION"
    replays = True

    @classmethod
    def create(cls, spec: ModelSpec, server: str | None, load_replay: ReplayLoader | None) -> ModelProvider:
        if load_replay is None:
            raise UserError(f"model spec {str(spec)!r} replays a stored session, which needs the sessions database")
        replies = load_replay(spec.name)
        if not replies:
            # A replay of nothing would be recorded as a session and paused at its first request.
            raise UserError(
                f"session {spec.name} has no recorded model replies: there is nothing to replay (`cuda-llm "
                f"sessions` lists the sessions; `cuda-llm run --resume {spec.name}` continues it with its model)"
            )
        return cls(replies, source=spec.name)

    def __init__(
        self, replies: Mapping[RequestKey, str], source: str, chunk_delay_s: float = REPLAY_CHUNK_DELAY_S
    ) -> None:
        self._replies = dict(replies)  # a copy: the recording must not change under the replay
        self.source = source
        self.spec = f"replay:{source}"
        self.where = f"session {source}"
        self._chunk_delay_s = chunk_delay_s

    def __repr__(self) -> str:
        return f"ReplayProvider({self.spec!r}, {len(self._replies)} replies)"

    async def complete(
        self,
        messages: Sequence[Message],
        options: GenerateOptions,
        key: RequestKey,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        text = self._replies.get(key)
        if text is None:
            raise ModelError(
                "not_found",
                f"session {self.source} has no recorded reply for round {key.round}, attempt {key.attempt}, "
                f"candidate {key.slot}: a replay can only repeat the requests the session made "
                "(same candidates, rounds and repairs)",
            )
        loop = asyncio.get_running_loop()
        started = loop.time()
        first: float | None = None
        for i in range(0, len(text), REPLAY_CHUNK_CHARS):
            if first is None:
                first = loop.time() - started
            if on_token is not None:
                on_token(text[i : i + REPLAY_CHUNK_CHARS])
            # Yield to the event loop between pieces even with no delay, so the UI can redraw.
            await asyncio.sleep(self._chunk_delay_s)
        return Completion(
            text=text,
            model=self.spec,
            prompt_tokens=None,
            completion_tokens=None,
            elapsed_s=loop.time() - started,
            first_token_s=first,
            finish_reason="stop",
        )

    async def list_models(self) -> list[str]:
        return [self.spec]

    async def close(self) -> None:
        return None
