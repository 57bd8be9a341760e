"""Small terminals: at 40 columns the header keeps the session and the footer keeps Quit (the
program's name, the GPU line and the palette's key give way first). The loopback model server, the
real compiler, the fake GPU."""

from __future__ import annotations

from textual.widgets import Footer

from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from tui.helpers import by_request, make_app, stalled, wait_for


def shown_line(widget) -> str:
    """The first line a widget draws, as the terminal shows it (cut, with its ellipsis)."""
    return widget.render_line(0).text


def footer_line(app) -> str:
    footer = app.screen.query_one(Footer)
    width = footer.region.width
    shown = [k for k in footer.children if k.region.x + k.region.width <= width and k.region.width]
    return " ".join(shown_line(k).strip() for k in sorted(shown, key=lambda k: k.region.x))


async def test_at_40_columns_the_header_keeps_the_session_and_the_footer_quit(tmp_path, llm_server):
    llm_server.default = by_request({}, default=stalled("vadd_us40", 5.0))
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=1, task="vector_add", model="ollama:loop-model")
    async with app.run_test(size=(40, 20)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.pause()
        assert "q Quit" in footer_line(app), footer_line(app)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        session = app.screen
        await wait_for(pilot, lambda: session.view.session_id is not None, "the session opened")
        await pilot.pause()
        header = shown_line(app.screen.query_one("#bar-context"))
        assert header.startswith(f"session {session.view.session_id} · "), header
        assert "q Quit" in footer_line(app), footer_line(app)
