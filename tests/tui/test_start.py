"""The start screen's defaults start a session: a model is always preselected (the last one used,
else the first the local ollama lists, else manual), so Enter, Enter, F5 starts."""

from __future__ import annotations

import asyncio
import dataclasses

from textual.widgets import Input, Static

from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from cuda_llm.engine.core.settings import KNOBS
from tui.helpers import by_request, make_app, streamed, text, wait_for


def spec(app) -> str:
    return app.screen.query_one("#model-spec", Input).value


async def test_enter_enter_f5_starts_with_ollamas_first_model(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=1)  # no model remembered
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await wait_for(pilot, lambda: spec(app) == "ollama:loop-model", "ollama's first model, preselected")
        await pilot.press("enter", "enter", "f5")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        # The first task (nothing remembered) with the first model: under way, asking that model.
        await wait_for(pilot, lambda: llm_server.chat_requests, "the session under way")
        assert app.screen.view.model == "ollama:loop-model" and app.screen.view.task == "black_scholes"
        assert llm_server.chat_requests[0].model == "loop-model"


async def test_without_a_server_manual_is_preselected(tmp_path, refused_url):
    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await wait_for(pilot, lambda: "no ollama server" in str(app.screen.query_one("#model-status").render()), "")
        assert spec(app) == "manual"
        await pilot.press("enter", "enter", "f5")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: "waiting for your kernel" in str(app.screen.query_one("#status").render()), "")


async def test_the_last_model_used_comes_first_and_a_late_server_replaces_manual(tmp_path, llm_server):
    app = make_app(tmp_path, llm_server.url, model="ollama:qwen2.5-coder:32b")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await wait_for(pilot, lambda: "2 model(s)" in str(app.screen.query_one("#model-status").render()), "")
        assert spec(app) == "ollama:qwen2.5-coder:32b"  # the last one used, not the first listed

    # The list arrives after the screen has chosen a default: held back until the test has seen that
    # default, so no machine is too busy (or too quick) for the order to hold.
    release_list = asyncio.Event()

    async def slow_lister(_host):
        await release_list.wait()
        return ["late-model"]

    app = make_app(tmp_path / "late", llm_server.url)
    app.ollama_lister = slow_lister
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        assert spec(app) == "manual"  # nothing listed yet
        release_list.set()
        await wait_for(pilot, lambda: spec(app) == "ollama:late-model", "the server's model, once listed")
        await pilot.pause()
        # Typed by the person: kept, whatever the server lists later.
        app.screen.query_one("#model-spec", Input).value = "openai:gpt-x"
        app.screen.list_ollama_models()
        await pilot.pause(0.8)
        assert spec(app) == "openai:gpt-x"


START_FIELDS = ("task-list", "model-list", "model-spec", "opt-n", "opt-d", "opt-r", "opt-k", "opt-target", "opt-auto")


def on_screen(app, widget) -> bool:
    """The widget is drawn where it is: inside the terminal and not scrolled or clipped away (what
    the terminal shows at its middle is the widget itself)."""
    region = widget.region
    if not region.area or not app.screen.region.contains_region(region):
        return False
    shown, _ = app.screen.get_widget_at(region.x + region.width // 2, region.y + region.height // 2)
    return shown is widget


async def test_at_60x20_tab_reaches_every_start_field_and_shows_it(tmp_path, refused_url):
    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(60, 20)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await wait_for(pilot, lambda: spec(app) == "manual", "manual, preselected")
        seen: list[str] = []
        while (focused := app.screen.focused) is not None and focused.id != "start":
            if focused.id in START_FIELDS:
                assert on_screen(app, focused), f"{focused.id} is focused but off the screen at {focused.region}"
                seen.append(focused.id)
            assert len(seen) <= 2 * len(START_FIELDS), f"Tab went round without reaching Start: {seen}"
            await pilot.press("tab")
            await pilot.pause()
        assert on_screen(app, app.screen.focused), "the Start button is focused but off the screen"
        assert seen == list(START_FIELDS)


async def test_the_number_fields_take_their_ranges_from_the_knobs(tmp_path, refused_url, monkeypatch):
    # The declaration is the one place a range is said: narrowed there, the start screen follows.
    monkeypatch.setitem(KNOBS, "candidates", dataclasses.replace(KNOBS["candidates"], high=8))
    # A model, not manual: manual puts N back to 1 whenever its line is highlighted again.
    app = make_app(tmp_path, refused_url, model="ollama:loop-model")
    async with app.run_test(size=(60, 20)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await wait_for(pilot, lambda: "no ollama server" in text(app.screen.query_one("#model-status")), "the models")
        message = app.screen.query_one("#start-message", Static)
        for field, typed, said in (
            ("opt-n", "9", "N must be between 1 and 8, got 9"),
            ("opt-d", "0", "D must be at least 1, got 0"),
            ("opt-k", "-1", "K must not be negative (0: never)"),
        ):
            app.screen.query_one(f"#{field}", Input).value = typed
            app.screen.query_one("#task-list").focus()  # scrolled to the top, the message far below
            await pilot.press("s")
            await wait_for(pilot, lambda said=said: said in text(message), said)
            await wait_for(pilot, lambda: on_screen(app, message), "the refusal scrolled into view")
            assert isinstance(app.screen, StartScreen)
            app.screen.query_one(f"#{field}", Input).value = "1"
