"""A session is never left marked `running`: a crash in the UI records it as stopped (crashed: why),
and the next start says so; a quit that does not wait for the work in flight records it as
stopped too. Both resume."""

from __future__ import annotations

import pytest
from fakes.fake_gpu import FakeGpu

from cuda_llm.app.running import INTERRUPTED, RunningSessions
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from cuda_llm.engine.store.sessions import CRASH_PREFIX, SessionStore
from tui.helpers import by_request, make_app, screen_text, stalled, streamed, wait_for


def record(tmp_path, session_id: int):
    store = SessionStore(tmp_path / "sessions.db")
    try:
        return store.session(session_id)
    finally:
        store.close()


class UiBug(RuntimeError):
    pass


async def test_a_crash_is_recorded_and_said_on_the_next_start(tmp_path, llm_server):
    asked = []

    def respond(rec):
        asked.append(rec)
        return stalled("vadd_us40", 30.0) if len(asked) == 1 else streamed("vadd_us40")  # in flight at the crash

    llm_server.default = respond
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1)
    with pytest.raises(UiBug):
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
            await pilot.press("s")
            await wait_for(pilot, lambda: "1 streaming" in screen_text(app, "#status"), "a reply in flight")
            session_id = app.screen.view.session_id

            def bug() -> None:
                raise UiBug("a widget fell over")

            app.call_later(bug)
            await wait_for(pilot, lambda: not app.is_running, "the crash")
    assert app.running_sessions.crashed_sessions == [session_id]
    crashed = record(tmp_path, session_id)
    assert crashed.status == "stopped" and crashed.status_message == f"{CRASH_PREFIX}UiBug: a widget fell over"

    app = make_app(tmp_path, llm_server.url)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        messages = [str(n.message) for n in app._notifications]
        assert any(
            m.startswith(f"session {session_id} (vector_add) stopped when cuda-llm crashed (UiBug: a widget fell over)")
            for m in messages
        ), messages
        assert "stopped (crashed)" in screen_text(app, "#sessions")
        await pilot.press("l", "r")  # and it resumes
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the resumed session")
        # The start screen's toast about the crash is withdrawn inside the session (kept in the history).
        assert not any("crashed" in str(n.message) for n in app._notifications), list(app._notifications)
        assert any("crashed" in m.text for m in app.messages.entries), "kept in the message history"
        await wait_for(pilot, lambda: app.screen.view.awaiting is not None, "round 1 asked again, to its decision")
        await pilot.press("s")
        await wait_for(pilot, lambda: not app.screen.view.running, "the stop")
    assert record(tmp_path, session_id).status == "stopped"


async def test_quit_twice_leaves_at_once_and_records_the_session_stopped(tmp_path, llm_server):
    # The GPU takes 30 s over every job: a stop must wait for it, a second quit does not.
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    gpu = FakeGpu(delay_s=30.0)
    app = make_app(tmp_path, llm_server.url, gpu, task="vector_add", model="ollama:loop-model", candidates=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: app.screen.view.state == "running", "the session")
        session_id = app.screen.view.session_id
        await pilot.press("q")
        messages = [str(n.message) for n in app._notifications]
        assert any("stopping the session, then quitting · press q again to quit at once" in m for m in messages)
        # The status line names the key that asked: q again forces the quit.
        status = screen_text(app, "#status")
        assert app.is_running and status.startswith("■ quitting") and "q again: at once" in status, status
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "the quit", timeout=10)
    stopped = record(tmp_path, session_id)
    assert (stopped.status, stopped.status_message) == ("stopped", INTERRUPTED)


def test_only_the_crash_is_recorded_once_it_happened(tmp_path):
    """After a crash, the cancellation that follows must not overwrite why the session stopped."""
    from cuda_llm.engine.core.settings import LoopSettings

    store = SessionStore(tmp_path / "sessions.db")
    try:
        sid = store.create_session("vector_add", "tasks/vector_add", "f", "manual", LoopSettings(), "d", "sm_90")
    finally:
        store.close()
    sessions = RunningSessions()
    sessions.add(sid, str(tmp_path / "sessions.db"))
    assert sessions.crashed(KeyError("pane")) == [sid]
    sessions.interrupted(sid)
    assert record(tmp_path, sid).status_message == f"{CRASH_PREFIX}KeyError: 'pane'"
