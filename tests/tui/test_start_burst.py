"""The start screen takes a burst of keys as a terminal delivers it: `/` and the filter's text typed
at once. Focus moved by widget.focus() lands only when the app is next idle, after the burst's other
keys had gone to the task list (found driving the app in tmux: the filter stayed empty and Enter
chose the first task)."""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from cuda_llm.app.screens.start import StartScreen
from tui.helpers import make_app, wait_for


async def test_slash_and_the_filter_s_text_in_one_burst_all_reach_the_filter(tmp_path):
    app = make_app(tmp_path, None)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        start = app.screen
        box = start.query_one("#task-filter", Input)
        # One burst: every key queued before the first is handled.
        for key, char in (("slash", "/"), ("v", "v"), ("e", "e"), ("c", "c")):
            app.post_message(events.Key(key, char))
        await wait_for(pilot, lambda: box.value == "vec", f"the filter to read 'vec' (it reads {box.value!r})")
        assert start.focused is box


async def test_the_sessions_filter_takes_a_burst_too(tmp_path):
    app = make_app(tmp_path, None)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        start = app.screen
        await pilot.press("l")  # the Sessions tab
        box = start.query_one("#sessions-filter", Input)
        for key, char in (("slash", "/"), ("n", "n"), ("o", "o")):
            app.post_message(events.Key(key, char))
        await wait_for(pilot, lambda: box.value == "no", f"the filter to read 'no' (it reads {box.value!r})")
