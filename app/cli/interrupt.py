"""Ctrl-C in the headless commands that run sessions (`run --headless`, `bench`, `replay`): the first
press stops cleanly (requests in flight and their retries are cancelled at once, everything recorded
stays, the session can be resumed), the second quits at once (exit code 130): through `quit_now` where
the caller has one (a headless run still says where it stopped and how to continue), else by
KeyboardInterrupt."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

FIRST_PRESS = (
    "\ncuda-llm: stopping: requests in flight are cancelled, everything recorded stays (Ctrl-C again to quit now)"
)


@contextmanager
def ctrl_c_stops(stop: Callable[[], None], quit_now: Callable[[], None] | None = None) -> Iterator[None]:
    """Within the running event loop: the first SIGINT calls `stop` (and says so on stderr), the
    second calls `quit_now`, or raises KeyboardInterrupt without one."""
    loop = asyncio.get_running_loop()
    presses = 0

    def on_interrupt() -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            print(FIRST_PRESS, file=sys.stderr)
            stop()
        elif quit_now is not None:
            quit_now()
        else:
            raise KeyboardInterrupt

    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
