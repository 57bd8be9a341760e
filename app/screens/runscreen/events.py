"""The worker's messages folded into the session view (app/state.py), and the panes they name
redrawn. A pane never holds session state: it reads the view when the registry redraws it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.worker import Worker, WorkerState

from cuda_llm.app.messages import EngineEvent, SessionEnded, SessionError, SessionOpened, TokensArrived
from cuda_llm.app.screens.runscreen import edits, worker
from cuda_llm.app.state import LOG, PROMPT, STATUS, TREE
from cuda_llm.app.widgets.prompt import PromptPane
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.llm.spec import server_of

if TYPE_CHECKING:
    from cuda_llm.app.screens.run import RunScreen


def opened(screen: RunScreen, message: SessionOpened) -> None:
    view = screen.view
    view.session_id = message.session_id
    view.task, view.model = message.task, message.model
    view.manual = message.manual
    screen.server = message.server
    worker.note_last_session(screen)
    edits.offer_draft(screen, message.session_id)
    if message.notice:
        view.notice = message.notice
        view.log.append(message.notice)
    screen.redraw({STATUS, LOG, TREE})


def engine_event(screen: RunScreen, message: EngineEvent) -> None:
    event = message.event
    changed = screen.view.apply(event)
    if isinstance(event, ev.SessionPaused | ev.SessionResumed):
        screen.pause_requested = False
    if isinstance(event, ev.AwaitingDecision):
        screen.app.bell()  # a decision waits: the terminal (or tmux) marks the window for a person elsewhere
    if isinstance(event, ev.Notice | ev.SessionResumed | ev.RoundStarted) and screen.session is not None:
        # A model change is taken by the loop at a safe point; show the one in use.
        provider = screen.session.model_in_use()
        if provider.spec != screen.view.model:
            screen.view.model = provider.spec
            screen.server = server_of(provider) or ""
            changed |= {STATUS}
    screen.redraw(changed)


def tokens(screen: RunScreen, message: TokensArrived) -> None:
    """Streamed text goes straight into the prompt pane's log (a line refresh, not a redraw)."""
    first = screen.view.add_tokens(message.label, message.text)
    for pane in screen.panes.values():
        if isinstance(pane, PromptPane):
            pane.append(message.label, message.text)
    if first:
        screen.redraw({TREE, STATUS} | ({PROMPT} if message.label == screen.view.focus else set()))


def _ended(screen: RunScreen, changed: set[str]) -> None:
    screen.view.stopping = False
    screen.redraw(changed)
    worker.note_last_session(screen)
    if screen.quitting:
        screen.app.exit(0)


def ended(screen: RunScreen, message: SessionEnded) -> None:
    screen.view.stopping = False
    _ended(screen, screen.view.ended(message.status, message.reason) | {LOG})


def failed(screen: RunScreen, message: SessionError) -> None:
    screen.view.stopping = False
    _ended(screen, screen.view.failed(message.message))


def worker_changed(screen: RunScreen, event: Worker.StateChanged) -> None:
    """The session's worker ended without a word from the session (it was cancelled: a forced
    stop or quit): say so, and leave if that was the point."""
    if event.worker is not screen.worker or event.state not in (WorkerState.CANCELLED, WorkerState.ERROR):
        return
    screen.view.stopping = False
    changed: set[str] = set()
    if screen.view.running:
        changed = screen.view.ended("stopped", "stopped at once: the work in flight was dropped") | {LOG}
    _ended(screen, changed)
