"""Retrying a completion: exponential backoff with jitter for the retryable error kinds, honouring
a server's Retry-After, and telling the UI about each retry before it starts."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Awaitable, Callable, Sequence

from cuda_llm.engine.core.settings import GenerateOptions, RetryPolicy
from cuda_llm.engine.llm.base import Completion, Message, ModelError, ModelProvider, RequestKey, TokenCallback

# on_retry(retry number from 1, the error that caused it, seconds until the new attempt starts).
RetryCallback = Callable[[int, ModelError, float], None]
# Equal jitter: each delay is between half and all of the exponential step, so N candidates that
# failed together do not retry in lockstep, and the UI can still promise a minimum wait.
JITTER_LOW = 0.5


def backoff_delay(policy: RetryPolicy, retry: int, error: ModelError, rng: random.Random) -> float:
    """Seconds to wait before retry number `retry` (1-based)."""
    if error.retry_after_s is not None:
        # The server said when; cap it so a huge Retry-After cannot park a session for hours.
        return min(max(error.retry_after_s, 0.0), policy.max_delay_s)
    step = min(policy.base_delay_s * 2 ** (retry - 1), policy.max_delay_s)
    return step * rng.uniform(JITTER_LOW, 1.0)


async def complete_with_retries(
    provider: ModelProvider,
    messages: Sequence[Message],
    options: GenerateOptions,
    key: RequestKey,
    on_token: TokenCallback | None = None,
    policy: RetryPolicy | None = None,
    on_retry: RetryCallback | None = None,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Completion:
    """provider.complete with retries. A retry restarts the stream from nothing: on_retry is
    called before the new attempt streams its first token, so a consumer that shows tokens clears
    what the failed attempt sent when it is called. Raises the last ModelError (its message notes
    how many tries were made when there was more than one)."""
    policy = policy or RetryPolicy()
    rng = rng or random.Random()
    attempts = max(1, policy.attempts)
    retry = 0
    while True:
        try:
            completion = await provider.complete(messages, options, key, on_token)
        except ModelError as exc:
            if exc.kind not in policy.retry_kinds or retry + 1 >= attempts:
                if retry == 0:
                    raise
                error = ModelError(exc.kind, f"{exc} (gave up after {retry + 1} tries)", exc.retry_after_s)
            else:
                retry += 1
                delay = backoff_delay(policy, retry, exc, rng)
                if on_retry is not None:
                    on_retry(retry, exc, delay)
                await sleep(delay)
                continue
        else:
            return dataclasses.replace(completion, retries=retry)
        raise error
