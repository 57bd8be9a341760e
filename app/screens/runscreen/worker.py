"""The session's worker: opening the session, relaying its events as messages, stopping it.

The session runs in an async worker on the app's event loop; nothing here waits on the GPU or the
network in the UI, and a fault arrives as an event or an error line, never as an exception there.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from textual.worker import Worker

from cuda_llm.app.messages import EngineEvent, SessionEnded, SessionError, SessionOpened, TokensArrived
from cuda_llm.app.state import LOG, STATUS
from cuda_llm.engine.core.errors import describe
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.session import candidate_label, open_session
from cuda_llm.engine.llm.manual_provider import ManualProvider
from cuda_llm.engine.llm.spec import server_of

if TYPE_CHECKING:
    from cuda_llm.app.screens.run import RunScreen

# How long a stop may take before the session's worker is cancelled outright: a stop cancels the
# model requests at once; what remains is a compile or a GPU job finishing and being recorded.
STOP_GRACE_S = 3.0


def start(screen: RunScreen) -> Worker[None]:
    return screen.run_worker(run_session(screen), name="session", group="session", exclusive=True, exit_on_error=False)


def _opening(screen: RunScreen, line: str) -> None:
    """What the engine waits for while the session opens (a Ray cluster's GPUs): before the
    session's events flow, so it is a notification."""
    screen.notify(line, title="opening the session", timeout=30, markup=False)


async def run_session(screen: RunScreen) -> None:
    options = screen.request.options
    app = screen.app
    env = None
    try:
        env = await app.open_environment(options)  # type: ignore[attr-defined]  # the app is a CudaLlmApp
        session = await open_session(
            options, screen.control, environment=env, progress=lambda line: _opening(screen, line)
        )
    except Exception as exc:
        if env is not None:
            with contextlib.suppress(Exception):
                await env.close()
        screen.post_message(SessionError(describe(exc)))
        return
    screen.session = session
    sessions = app.running_sessions  # type: ignore[attr-defined]  # the app is a CudaLlmApp
    sessions.add(session.id, str(session.store.path))
    session.bus.subscribe(lambda event: relay(screen, event))
    manual = isinstance(session.provider, ManualProvider)
    screen.post_message(
        SessionOpened(
            session.id,
            session.task.name,
            session.provider.spec,
            session.env.notice,
            manual,
            server_of(session.provider) or "",
        )
    )
    try:
        result = await session.run()
    except asyncio.CancelledError:
        # The app is leaving (a forced quit or stop, or a crash): the session is recorded as
        # stopped, never left marked running; --resume continues it.
        sessions.interrupted(session.id)
        raise
    except Exception as exc:  # the loop recorded it and emitted Failed; say it, keep the app
        screen.post_message(SessionError(describe(exc)))
    else:
        screen.post_message(SessionEnded(result.status, result.reason))
    finally:
        sessions.discard(session.id)
        with contextlib.suppress(Exception):
            await session.close()


def relay(screen: RunScreen, event: ev.Event) -> None:
    """The engine's subscriber: runs inside the loop's emit, so it only posts."""
    if isinstance(event, ev.TokensStreamed):
        screen.post_message(TokensArrived(event.label, event.text))
    else:
        screen.post_message(EngineEvent(event))


def running(screen: RunScreen) -> bool:
    return screen.worker is not None and not screen.worker.is_finished


def request_stop(screen: RunScreen) -> None:
    """Stop the session: the loop cancels its model requests and records what is done. The
    status line says so at once."""
    screen.control.stop()
    manual = manual_provider(screen)
    if manual is not None:
        manual.cancel_all("stopped by the person")
    view = screen.view
    if view.running and not view.stopping:
        view.stopping = True
        view.log.append("stopping: requests in flight are cancelled, what is recorded stays")
    screen.redraw({LOG, STATUS})
    if running(screen):
        screen.set_timer(STOP_GRACE_S, lambda: _stop_overdue(screen))


def _stop_overdue(screen: RunScreen) -> None:
    """A stop that has not ended the session within the grace period: end it now (what is
    recorded stays; the work in flight is dropped)."""
    if running(screen) and screen.view.stopping:
        screen.view.log.append(f"the session did not stop within {STOP_GRACE_S:.0f} s: stopping it at once")
        screen.redraw({LOG})
        force_stop(screen)


def force_stop(screen: RunScreen) -> None:
    if screen.worker is not None and not screen.worker.is_finished:
        screen.worker.cancel()


async def shutdown(screen: RunScreen, grace_s: float) -> None:
    """Stop the session, give it `grace_s` to record what is in flight, then cancel it."""
    request_stop(screen)
    worker = screen.worker
    if worker is None or worker.is_finished:
        return
    with contextlib.suppress(Exception):
        await asyncio.wait_for(worker.wait(), grace_s)
    if not worker.is_finished:
        worker.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(worker.wait(), max(grace_s, 1.0))


def manual_provider(screen: RunScreen) -> ManualProvider | None:
    provider = screen.session.model_in_use() if screen.session is not None else None
    return provider if isinstance(provider, ManualProvider) else None


def manual_waiting(screen: RunScreen) -> list[str]:
    manual = manual_provider(screen)
    return [candidate_label(k) for k in manual.waiting()] if manual is not None else []


def note_last_session(screen: RunScreen) -> None:
    """What the quit line says about this screen's session (app.quit_line)."""
    view = screen.view
    sid = view.session_id
    if sid is None:
        return
    shown = {"finished": "finished", "failed": "failed", "paused": "paused"}.get(view.state, "stopped")
    if view.undecided is not None and shown != "failed":
        shown += f" with {view.undecided} awaiting your decision"
    screen.app.last_session = (sid, shown, screen.request.options.db)  # type: ignore[attr-defined]  # a CudaLlmApp
