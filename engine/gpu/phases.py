"""Wall time per phase of a worker job (upload, run, compare...), reported with the job so that a
benchmark or a curious user can see where a validation or a profile spends its time."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class PhaseClock:
    def __init__(self) -> None:
        self.totals: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.totals[name] = self.totals.get(name, 0.0) + time.perf_counter() - start
