"""Running several coroutines as one job."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def gather_or_cancel(coroutines: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """asyncio.gather, except that when one raises (the GPUs lost, a store that failed), the others
    are cancelled and awaited before the error propagates. Left running, they would go on judging
    after the session closed its GPUs: on a Ray cluster, into a connection that is already gone."""
    jobs = [asyncio.ensure_future(c) for c in coroutines]
    try:
        return await asyncio.gather(*jobs)
    except BaseException:
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        raise
