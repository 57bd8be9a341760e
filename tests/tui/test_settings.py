"""A round paused by a model fault is fixed in place: F7 (or m, or the palette) sets another model,
and another server in the host field, and "retry now" asks again for the same round, which goes on
to its decision. No new session is needed."""

from __future__ import annotations

from llm_servers import LoopbackLLMServer, Reply
from textual.widgets import Button, Input

from cuda_llm.app.screens.modals import SettingsScreen
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from cuda_llm.engine.store.sessions import SessionStore
from tui.helpers import by_request, make_app, screen_text, streamed, wait_for

UNKNOWN = "ollama:qwen2.5-coder-unknown:32b-instruct-q8_0"  # long: the dialog must show it whole


async def test_f7_fixes_a_round_paused_by_an_unknown_model(tmp_path, llm_server):
    llm_server.default = lambda rec: Reply.not_found()  # this server has no such model
    # ... though it listed it when the session started (engine/llm/preflight.py): it went since.
    llm_server.models = (*llm_server.models, UNKNOWN.split(":", 1)[1])
    with LoopbackLLMServer() as good:
        good.default = by_request({}, default=streamed("vadd_us40"))
        good_url = good.url
        app = make_app(tmp_path, llm_server.url, task="vector_add", candidates=1, rounds=1, model=UNKNOWN)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
            assert app.screen.query_one("#model-spec", Input).value == UNKNOWN  # the last one used
            await pilot.press("f5")
            await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
            run = app.screen
            await wait_for(pilot, lambda: run.view.state == "paused", "the round paused by the fault")
            status = screen_text(app, "#status")
            assert "paused:" in status and "not found" in status and "m changes the model" in status, status

            await pilot.press("f7")
            await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen), "the settings dialog")
            dialog = app.screen
            model = dialog.query_one("#settings-model", Input)
            server = dialog.query_one("#settings-server", Input)
            await pilot.pause()
            assert model.value == UNKNOWN and model.region.width > len(UNKNOWN), model.region  # not cut
            assert server.value == llm_server.url  # where it is now, to change
            assert "retry now" in str(dialog.query_one("#settings-retry", Button).label)
            model.value = "ollama:loop-model"
            server.value = good_url
            await pilot.press("enter")  # Enter: apply and retry now
            await wait_for(pilot, lambda: run.view.awaiting is not None, "round 1 asked again, to its decision")
            assert run.view.round == 1 and "r1-1 40.0 us" in screen_text(app, "#candidates")
            assert "ollama:loop-model" in screen_text(app, "#bar-context")
            assert [r.model for r in good.chat_requests] == ["loop-model"]
            await pilot.press("a")
            await wait_for(pilot, lambda: run.view.state == "finished", "the end of the session")
            session_id = run.view.session_id
    store = SessionStore(tmp_path / "sessions.db")
    try:
        record = store.session(session_id)
        assert (record.model, record.server, record.status) == ("ollama:loop-model", good_url, "finished")
    finally:
        store.close()


async def test_settings_while_running_apply_from_the_next_round(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: getattr(app.screen, "view", None) is not None, "the run screen")
        await wait_for(pilot, lambda: app.screen.view.awaiting is not None, "the decision")
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen), "the settings dialog")
        assert not app.screen.query("#settings-retry")  # nothing paused: nothing to retry
        # N's range is the one engine/core/settings.py LOOP_KNOBS declares, worded as the CLI words it.
        app.screen.query_one("#settings-n", Input).value = "40"
        await pilot.press("enter")
        assert screen_text(app, "#settings-error") == "N must be between 1 and 32, got 40"
        app.screen.query_one("#settings-n", Input).value = "1"
        app.screen.query_one("#settings-model", Input).value = "gpt-4"
        await pilot.press("enter")
        assert "ollama:MODEL, openai:MODEL or replay:ID" in screen_text(app, "#settings-error")
        app.screen.query_one("#settings-model", Input).value = "ollama:qwen2.5-coder:32b"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen again")
        assert "it takes effect at the next round" in screen_text(app, "#event-log")
        await pilot.press("a")
        await wait_for(pilot, lambda: app.screen.view.state == "finished", "the end")
        assert [r.model for r in llm_server.chat_requests] == ["loop-model", "qwen2.5-coder:32b"]
        assert "qwen2.5-coder:32b" in screen_text(app, "#bar-context")
