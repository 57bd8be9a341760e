"""Defects of the run screen found by using it as a daily user would, each pinned by a test that
fails without its fix: the loopback model server, the real compiler, the fake GPU."""

from __future__ import annotations

from textual.widgets import TextArea

from cuda_llm.app import drafts
from cuda_llm.app.screens.modals import ConfirmScreen, EditScreen
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from tui.helpers import by_request, make_app, streamed, wait_for

SETTINGS = {"task": "vector_add", "model": "ollama:loop-model", "target_roofline": 0.0}


def awaiting(app) -> str | None:
    v = getattr(app.screen, "view", None)
    return v.awaiting.judgement.label if v is not None and v.awaiting is not None else None


async def start(pilot, app) -> None:
    await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
    await pilot.press("s")
    await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")


async def test_quit_twice_in_the_editor_then_yes_twice_keeps_the_draft_and_quits(tmp_path, llm_server, monkeypatch):
    # Ctrl+Q, Ctrl+Q asked twice; answering both dismissed the editor twice (InvalidStateError, exit 1).
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=1, **SETTINGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot, app)
        await wait_for(pilot, lambda: awaiting(app) == "r1-1", "the decision")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EditScreen), "the editor")
        area = app.screen.query_one("#edit-source", TextArea)
        area.text = area.text + "\n// mine"
        await pilot.press("ctrl+q", "ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("y", "y")
        await wait_for(pilot, lambda: not app.is_running, "the quit", 30)
    assert app.return_code in (0, None), app.return_code
    kept = drafts.kept(str(tmp_path / "sessions.db"))
    assert len(kept) == 1 and "// mine" in kept[0].source
