"""The person's decisions, through the engine's Controller: accept or reject a round's winner,
pause, go on, auto-accept, stop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuda_llm.app.screens.modals import RejectScreen
from cuda_llm.app.screens.runscreen import worker
from cuda_llm.app.state import LOG, STATUS

if TYPE_CHECKING:
    from cuda_llm.app.screens.run import RunScreen


def allowed(screen: RunScreen, action: str) -> bool:
    """Whether a key's action applies now (the footer shows those that do)."""
    view = screen.view
    live = view.running and view.state != "opening" and not view.stopping
    paused = view.state == "paused" or screen.pause_requested
    rules = {
        "accept": view.awaiting is not None,
        "reject": view.awaiting is not None,
        "explain": view.awaiting is None,
        "edit": live,
        "pause": live and not paused,
        "resume": live and view.state == "paused",
        "cancel_pause": live and screen.pause_requested and view.state != "paused",
        "stop": view.running,
        "settings": view.running,
        "auto_accept": live and not view.manual,
        "follow": not view.follow,
        "unfollow": view.follow,
        "back": not view.running,
    }
    return rules.get(action, True)


def explain(screen: RunScreen, what: str) -> None:
    """a or r with no winner waiting: say why there is nothing to decide."""
    view = screen.view
    if view.compile_only:
        why = "compile-only: nothing is timed, so no round has a winner to decide on"
    elif screen.control.auto_accept:
        key = screen.keys()["auto_accept"]
        why = f"auto-accept is on: each round's winner is accepted as it comes ({key} turns it off)"
    elif not view.running:
        why = "the session has ended"
    else:
        why = "no round's winner is waiting for a decision yet"
    screen.notify(f"nothing to {what}: {why}", timeout=4, markup=False)


def accept(screen: RunScreen) -> None:
    if screen.view.awaiting is not None:
        screen.control.accept(screen.view.awaiting.judgement.label)


def reject(screen: RunScreen) -> None:
    awaiting = screen.view.awaiting
    if awaiting is None:
        return
    label = awaiting.judgement.label

    def rejected(reason: str | None) -> None:
        if reason is not None:
            screen.control.reject(label, reason)

    screen.app.push_screen(RejectScreen(label), rejected)


def pause(screen: RunScreen) -> None:
    screen.pause_requested = True
    screen.control.pause()
    screen.update_status()


def resume(screen: RunScreen) -> None:
    """Go on, or take back a pause the loop has not reached yet."""
    screen.pause_requested = False
    screen.control.resume()
    screen.update_status()


def auto_accept(screen: RunScreen) -> None:
    control = screen.control
    control.set_auto_accept(not control.auto_accept)
    screen.view.log.append(f"auto-accept {'on' if control.auto_accept else 'off'}")
    screen.redraw({STATUS, LOG})


def stop(screen: RunScreen) -> None:
    if screen.view.stopping and worker.running(screen):  # pressed again: do not wait any more
        screen.view.log.append("stopping at once")
        screen.redraw({LOG})
        worker.force_stop(screen)
        return
    worker.request_stop(screen)
