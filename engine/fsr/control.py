"""How a person (the TUI) or a policy (headless, auto-accept) steers the FSR loop.

Commands are queued and taken by the loop at safe points: between requests, between stages, and
while it waits for a decision. Nothing here touches the GPU or the network.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Literal, TypeVar

T = TypeVar("T")

DecisionKind = Literal["accept", "reject"]


@dataclass(frozen=True)
class Decision:
    label: str
    kind: DecisionKind
    reason: str = ""


@dataclass(frozen=True)
class Edit:
    """A kernel the person wrote or changed, submitted through the same three checks."""

    source: str
    plan_json: str
    based_on: str | None = None  # the label it was edited from


class Controller:
    def __init__(self, auto_accept: bool = True, stop_when_paused: bool = False) -> None:
        self.auto_accept = auto_accept
        # Headless runs have nobody to press "resume": a pause (server down, disk full) ends the
        # run with the session marked paused, to be continued with --resume.
        self.stop_when_paused = stop_when_paused
        self._decisions: asyncio.Queue[Decision] = asyncio.Queue()
        self._edits: asyncio.Queue[Edit] = asyncio.Queue()
        self._running = asyncio.Event()
        self._running.set()
        self._stopped = asyncio.Event()
        self._wake = asyncio.Event()
        self.pending: dict[str, object] = {}  # setting changes taken at the next round

    # ---- commands (from the UI or a policy) ------------------------------------------------
    def accept(self, label: str) -> None:
        self._decisions.put_nowait(Decision(label, "accept"))
        self._wake.set()

    def reject(self, label: str, reason: str = "") -> None:
        self._decisions.put_nowait(Decision(label, "reject", reason))
        self._wake.set()

    def submit_edit(self, source: str, plan_json: str, based_on: str | None = None) -> None:
        self._edits.put_nowait(Edit(source, plan_json, based_on))
        self._wake.set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()
        self._wake.set()

    def stop(self) -> None:
        self._stopped.set()
        self._running.set()
        self._wake.set()

    def set_candidates(self, n: int) -> None:
        self.pending["candidates"] = n

    def set_rounds(self, d: int) -> None:
        self.pending["rounds"] = d

    def set_model(self, spec: str, server: str | None = None) -> None:
        """A model for the requests still to come; `server` (an ollama host or an OpenAI-compatible
        base URL) moves it to another server. Taken at the next round, or at once by a paused one."""
        self.pending["model"] = spec
        if server:
            self.pending["server"] = server

    def set_auto_accept(self, on: bool) -> None:
        self.auto_accept = on
        self._wake.set()

    # ---- what the loop asks ----------------------------------------------------------------
    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def take_pending(self) -> dict[str, object]:
        changes, self.pending = self.pending, {}
        return changes

    def next_edit(self) -> Edit | None:
        try:
            return self._edits.get_nowait()
        except asyncio.QueueEmpty:
            return None

    async def wait_running(self) -> None:
        """Return when not paused (or stopped)."""
        await self._running.wait()

    async def unless_stopped(self, work: Awaitable[T]) -> T | None:
        """`work`'s result, or None if the session is stopped first, in which case `work` is
        cancelled at once: a request to a hung server, or one waiting to be retried, must not hold
        a stop for minutes."""
        if self.stopped:
            if asyncio.iscoroutine(work):
                work.close()
            return None
        task = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the caller itself was cancelled: the work goes down with it
            task.cancel()
            raise
        finally:
            stop.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return None

    async def wait_decision(self, label: str) -> Decision | Edit | None:
        """The person's decision on `label`, an edit they submitted meanwhile, or None when stopped
        or when auto-accept was switched on while waiting."""
        while True:
            while not self._decisions.empty():
                d = self._decisions.get_nowait()
                if d.label == label:
                    return d
            edit = self.next_edit()
            if edit is not None:
                return edit
            if self.stopped or self.auto_accept:
                return None
            self._wake.clear()
            await self._wake.wait()
