"""The lines around the panes: the status line (what the session does, the keys that apply),
the telemetry bar's context, and the footer's keys, rebuilt only when what is allowed changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuda_llm.app.keys import key_of
from cuda_llm.app.screens.runscreen.worker import manual_waiting
from cuda_llm.app.widgets.status import StatusLine
from cuda_llm.app.widgets.telemetry import TelemetryBar
from cuda_llm.app.widgets.text import set_text

if TYPE_CHECKING:
    from cuda_llm.app.screens.run import RunScreen

# The actions the status line names a key for.
STATUS_ACTIONS = ("accept", "reject", "edit", "pause", "resume", "stop", "quit", "settings", "back", "auto_accept")


def keys(screen: RunScreen) -> dict[str, str]:
    """The key shown for each action the status line mentions (the config may have moved them)."""
    return {a: key_of(screen, a) for a in STATUS_ACTIONS}


def bar_context(screen: RunScreen) -> str:
    v = screen.view
    if not v.task:
        opts = screen.request.options
        what = f"session {opts.resume}" if opts.resume is not None else f"{opts.task} with {opts.model}"
        return f"cuda-llm · opening {what}"
    sid = f"session {v.session_id} · " if v.session_id is not None else ""
    return f"cuda-llm · {sid}{v.task} · {v.model} · {v.device}"


def update(screen: RunScreen) -> None:
    view = screen.view
    line = screen.lines.get("status")
    if isinstance(line, StatusLine):
        shown = keys(screen)
        line.show(view, screen.control.auto_accept, manual_waiting(screen), shown)
        if screen.pause_requested and view.state in ("running", "awaiting") and not view.stopping:
            set_text(line, f"‖ pause requested: the loop pauses before its next round ({shown['resume']} cancels)")
    # The footer is rebuilt on every refresh_bindings(): only when what is allowed changed.
    allowed = (
        view.state,
        view.awaiting is not None,
        view.follow,
        view.manual,
        screen.pause_requested,
        view.stopping,
    )
    if allowed != screen.allowed_now:
        screen.allowed_now = allowed
        screen.refresh_bindings()


def update_context(screen: RunScreen) -> None:
    bar = screen.lines.get("telemetry")
    if isinstance(bar, TelemetryBar):
        bar.set_context(bar_context(screen))
