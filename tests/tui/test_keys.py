"""Every key of both screens, as letters and as F-keys: a whole session driven by keys alone (the
loopback model server, the real compiler, the fake GPU), the footer at 80 columns, the digits and
Tab in both layouts, and keys moved by the config's [keys] table."""

from __future__ import annotations

import pytest
from textual.color import Color
from textual.widgets import DataTable, Input, OptionList, Tree
from textual.widgets._footer import FooterKey

from cuda_llm.app.screens.modals import EditScreen, HelpScreen, RejectScreen, SettingsScreen
from cuda_llm.app.screens.run import PANES, RunScreen
from cuda_llm.app.screens.start import StartScreen
from tui.helpers import by_request, make_app, screen_text, stalled, streamed, wait_for

# The same actions on the two layers of keys.
KEYS = {
    "letters": {
        "start": "s",
        "help": "question_mark",
        "settings": "m",
        "edit": "e",
        "reject": "r",
        "accept": "a",
        "pause": "p",
        "resume": "p",
        "auto": "A",
        "follow": "f",
        "stop": "s",
        "quit": "q",
        "sessions": "l",
        "new": "n",
        "resume_session": "r",
    },
    "fkeys": {
        "start": "f5",
        "help": "f1",
        "settings": "f7",
        "edit": "f4",
        "reject": "f3",
        "accept": "f2",
        "pause": "f5",
        "resume": "f5",
        "auto": "f6",
        "follow": "f9",
        "stop": "f8",
        "quit": "ctrl+q",
        "sessions": "f3",
        "new": "f2",
        "resume_session": "f6",
    },
}


def view(app):
    return app.screen.view


def awaiting(app) -> str | None:
    v = getattr(app.screen, "view", None)
    return v.awaiting.judgement.label if v is not None and v.awaiting is not None else None


@pytest.mark.parametrize("layer", ["letters", "fkeys"])
async def test_a_session_by_keys_alone(tmp_path, llm_server, monkeypatch, layer):
    keys = KEYS[layer]
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    llm_server.default = by_request(
        {
            (1, 0, 0): streamed("vadd_us40"),
            (2, 0, 0): streamed("vadd_us30"),
            (3, 0, 0): stalled("vadd_us50", 1.5),  # no better: no decision; the pause is taken after it
            (4, 0, 0): streamed("vadd_us20"),  # auto-accepted
            (5, 0, 0): stalled("vadd_us10", 30.0),  # in flight when the session is stopped
        }
    )
    settings = {"task": "vector_add", "model": "ollama:loop-model", "candidates": 1, "rounds": 5}
    app = make_app(tmp_path, llm_server.url, target_roofline=0.0, **settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press(keys["start"])
        await wait_for(pilot, lambda: awaiting(app) == "r1-1", "the round 1 decision")

        await pilot.press(keys["help"])
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        assert any(row[1] == "Accept" for row in app.screen.rows)
        await pilot.press("escape")
        await pilot.press(keys["settings"])
        await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen), "the settings")
        assert app.screen.query_one("#settings-model", Input).value == "ollama:loop-model"
        await pilot.press("escape")
        await pilot.press(keys["edit"])
        await wait_for(pilot, lambda: isinstance(app.screen, EditScreen), "the editor")
        await pilot.press("escape")  # nothing changed: it closes without asking
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")

        await pilot.press(keys["reject"])
        await wait_for(pilot, lambda: isinstance(app.screen, RejectScreen), "the reason dialog")
        await pilot.press(*"not with float4", "enter")
        await wait_for(pilot, lambda: awaiting(app) == "r2-1", "the round 2 decision")
        assert "r1-1 40.0 us · rejected" in screen_text(app, "#candidates")
        await pilot.press(keys["accept"])
        await wait_for(pilot, lambda: "r3-1" in view(app).candidates, "round 3 under way")
        await pilot.press(keys["pause"])
        assert "pause requested" in screen_text(app, "#status")
        await wait_for(pilot, lambda: view(app).state == "paused", "the pause after round 3")
        assert "★ r2-1 30.0 us best · accepted" in screen_text(app, "#candidates")
        await pilot.press(keys["auto"])
        assert "auto-accept on" in screen_text(app, "#status")
        await pilot.press(keys["resume"])
        await wait_for(pilot, lambda: "r4-1 20.0 us best · auto-accepted" in screen_text(app, "#candidates"), "r4-1")

        tree = app.screen.query_one("#candidates", Tree)
        node = next(n for n in tree.root.children[1].children if n.data == "r1-1")  # round 1's leaf
        tree.select_node(node)
        await wait_for(pilot, lambda: not view(app).follow, "the candidate picked")
        assert app.screen.query_one("#prompt-title").render().plain.startswith("r1-1")
        await pilot.press(keys["follow"])
        await wait_for(pilot, lambda: view(app).follow and view(app).focus == "r5-1", "following again")

        await wait_for(pilot, lambda: "r5-1" in view(app).candidates, "round 5 in flight")
        said: list[str] = []
        status = app.screen.query_one("#status")
        original = status.show

        def show(*args, **kwargs) -> None:
            original(*args, **kwargs)
            said.append(status.render().plain)

        monkeypatch.setattr(status, "show", show)
        await pilot.press(keys["stop"])
        await wait_for(pilot, lambda: view(app).state == "stopped", "the stop")
        # Said at once, before the session had ended; then how it ended.
        assert said[0].startswith("■ stopping: requests in flight are cancelled"), said
        assert said[-1].startswith("■ stopped: stopped by the user"), said
        await pilot.press(keys["quit"])
        await wait_for(pilot, lambda: not app.is_running, "the app to quit")
    assert app.return_code == 0


@pytest.mark.parametrize("layer", ["letters", "fkeys"])
async def test_start_screen_keys(tmp_path, llm_server, layer):
    keys = KEYS[layer]
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=1)
    app.config = app.config.__class__(**{**app.config.__dict__, "auto_accept": True})
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        start = app.screen
        await pilot.press(keys["start"])
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: view(app).state == "finished", "the session's end")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is start, "the start screen again")
        assert isinstance(start.focused, OptionList), "back from a session, the letters act on the lists"

        await pilot.press(keys["sessions"])
        assert start.query_one("#start-tabs").active == "tab-sessions"
        assert isinstance(start.focused, DataTable)
        if layer == "letters":
            await pilot.press("slash", *"no such")  # the sessions' filter
            assert start.query_one("#sessions", DataTable).row_count == 0
            await pilot.press("escape")
            assert start.query_one("#sessions", DataTable).row_count == 1
        await pilot.press(keys["resume_session"])
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the resumed session")
        await wait_for(pilot, lambda: not view(app).running, "its end (nothing was left to do)")
        assert "resumed" in screen_text(app, "#event-log")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is start, "the start screen again")

        await pilot.press(keys["new"])
        assert start.query_one("#start-tabs").active == "tab-new"
        if layer == "letters":
            await pilot.press("slash", *"prefix")
            assert start.focused is start.query_one("#task-filter")
            assert "y[i] = x[0] + ... + x[i]" in screen_text(app, "#task-summary")
            await pilot.press("escape")
            assert isinstance(start.focused, OptionList)
        await pilot.press(keys["help"])
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is start, "the start screen again")
        await pilot.press(keys["quit"])
        await wait_for(pilot, lambda: not app.is_running, "the app to quit")
    assert app.return_code == 0


def near(a: Color, b: Color) -> bool:
    """The same colour, give or take the rounding of a blend."""
    return max(abs(a.r - b.r), abs(a.g - b.g), abs(a.b - b.b)) <= 3


def footer_keys(screen) -> dict[str, FooterKey]:
    return {k.description: k for k in screen.query(FooterKey)}


async def test_footer_at_80_columns_keeps_accept_reject_and_quit_whole(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: awaiting(app) == "r1-1", "the decision")
        screen = app.screen
        for pane, _title in PANES:  # whichever pane has the keys, the footer holds
            await pilot.press(str([p for p, _ in PANES].index(pane) + 1))
            await wait_for(pilot, lambda: "Accept" in footer_keys(screen), "the footer, rebuilt")
            shown = footer_keys(screen)
            for name in ("Accept", "Reject", "Quit"):
                key = shown.get(name)
                assert key is not None, (pane, sorted(shown))
                text = f"{key.key_display} {name}"
                assert key.region.right <= 80 and key.region.width >= len(text), (pane, name, key.region)
        footer = screen.query_one("Footer")
        assert footer.virtual_size.width <= 80, "the footer overflows"

        # `/` in the candidates pane filters them; in the field the letters type, and the footer shows
        # the F-keys, Quit (F10) among them, still whole at 80 columns.
        await pilot.press("6", "slash")
        await wait_for(pilot, lambda: screen.focused is not None and screen.focused.id == "candidate-filter", "filter")
        await pilot.press(*"r1-1")
        await wait_for(pilot, lambda: "r1-1" in screen_text(app, "#candidates"), "the filtered tree")
        assert "baseline" not in screen_text(app, "#candidates"), "the filter keeps only what matches"
        await wait_for(pilot, lambda: "Quit" in footer_keys(screen), "the footer of the text field")
        shown = footer_keys(screen)
        for name in ("Accept", "Reject", "Quit"):
            key = shown.get(name)
            assert key is not None and key.key_display.lower().startswith("f"), (name, sorted(shown))
            assert key.region.right <= 80 and key.region.width >= len(f"{key.key_display} {name}"), (name, key.region)
        await pilot.press("escape")
        await wait_for(pilot, lambda: "baseline" in screen_text(app, "#candidates"), "the filter cleared")

        # `v` in the kernel pane steps through source, plan, diff against the parent and against the best.
        await pilot.press("2")
        kernel = screen.panes["kernel-pane"]
        tabs = kernel.query_one("#kernel-tabs")
        seen = [tabs.active]
        for _ in range(4):
            await pilot.press("v")
            await pilot.pause()
            seen.append(tabs.active)
        assert len(set(seen[:4])) == 4 and seen[4] == seen[0], seen


async def test_digits_and_tab_focus_panes_in_both_layouts(tmp_path, refused_url):
    from cuda_llm.app.options import SessionRequest
    from cuda_llm.engine.fsr.session import SessionOptions

    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = RunScreen(SessionRequest(SessionOptions("vector_add", "manual")), autostart=False)
        await app.push_screen(screen)
        await pilot.pause()
        accent = Color.parse(app.current_theme.accent)
        for size in ((80, 24), (200, 60)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            for i, (pane_id, _title) in enumerate(PANES):
                await pilot.press(str(i + 1))
                pane = screen.panes[pane_id]
                await wait_for(
                    pilot, lambda pane=pane: pane in (screen.focused.ancestors_with_self if screen.focused else ()), ""
                )
                assert screen.active_pane == pane_id and pane.display, (size, pane_id)
                assert screen.focused is not None and pane in screen.focused.ancestors_with_self, (size, pane_id)
                others = [p for p in screen.panes.values() if p is not pane]
                if size == (80, 24):
                    assert not any(p.display for p in others)
                    assert screen.query_one("#pane-tabs").active == f"tab-{pane_id}"
                else:  # the focused pane's border, and only its, in the accent colour
                    assert near(pane.styles.border_top[1], accent), (pane_id, pane.styles.border_top)
                    assert not any(near(p.styles.border_top[1], accent) for p in others)
            await pilot.press("1")
            await wait_for(pilot, lambda: screen.active_pane == PANES[0][0], "the first pane")
            order = []
            for i in range(len(PANES)):
                await pilot.press("tab")
                want = PANES[(i + 1) % len(PANES)][0]
                await wait_for(pilot, lambda want=want: screen.active_pane == want, f"Tab to {want}")
                order.append(screen.active_pane)
            assert order == [p for p, _ in PANES[1:]] + [PANES[0][0]], order
            await pilot.press("shift+tab")
            await wait_for(pilot, lambda: screen.active_pane == PANES[-1][0], "Shift+Tab back")


async def test_keys_moved_in_the_config(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    (tmp_path / "tui.toml").write_text(
        '[keys]\n"run.accept" = "y"\n"run.reject" = "x"\n"start.start" = "g"\n"run.nonsense" = "z"\n"run.pause" = "w"\n'
    )
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        warnings = [n.message for n in app._notifications]
        assert any("unknown binding id(s) run.nonsense" in m for m in warnings), warnings
        await pilot.press("s")  # moved away: nothing happens
        await pilot.pause()
        assert isinstance(app.screen, StartScreen)
        await pilot.press("g")
        await wait_for(pilot, lambda: awaiting(app) == "r1-1", "the decision")
        assert "y accept · x reject" in screen_text(app, "#status")
        await wait_for(pilot, lambda: "Accept" in footer_keys(app.screen), "the footer, rebuilt")
        shown = footer_keys(app.screen)
        assert shown["Accept"].key_display == "y" and shown["Reject"].key_display == "x"
        await pilot.press("a")  # no longer accepts
        await pilot.pause()
        assert awaiting(app) == "r1-1"
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        rows = {row[1]: row for row in app.screen.rows}
        assert rows["Accept"][0] == "y / f2" and rows["Accept"][3] == "run.accept"
        await pilot.press("escape")
        await pilot.press("w")  # pause and resume moved together
        assert "pause requested" in screen_text(app, "#status")
        await pilot.press("w")
        assert "pause requested" not in screen_text(app, "#status")
        await pilot.press("y")
        await wait_for(pilot, lambda: view(app).state == "finished", "the accepted session's end")
        assert "accepted" in screen_text(app, "#candidates")


def test_the_readme_lists_every_key_id():
    """The README's key tables name every binding id, and no id that does not exist."""
    import re
    from pathlib import Path

    from cuda_llm.app.app import CudaLlmApp, screen_pane_classes
    from cuda_llm.app.keys import binding_ids
    from cuda_llm.app.screens.modals import EditScreen

    known = set(binding_ids([CudaLlmApp, StartScreen, RunScreen, EditScreen, *screen_pane_classes()]))
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    keys = readme[readme.index("## Keys") : readme.index("## What a candidate is")]
    named = set(re.findall(r"`((?:run|start|app|edit|kernel)\.\w+)`", keys))
    panes = {f"run.pane{i}" for i in range(1, 8)}  # written as run.pane1 ... run.pane7
    assert named | panes == known, (sorted(known - named - panes), sorted(named - known))


async def test_pane_titles_and_the_help_name_the_moved_digit_keys(tmp_path, llm_server):
    llm_server.default = by_request({}, default=stalled("vadd_us40", 5.0))
    (tmp_path / "tui.toml").write_text('[keys]\n"run.pane6" = "9"\n"run.pane1" = "8"\n')
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=1)
    async with app.run_test(size=(160, 48)) as pilot:  # wide: every pane with its border title
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        screen = app.screen
        await wait_for(pilot, lambda: screen.view.session_id is not None, "the session opened")
        await pilot.pause()
        titles = {pane_id: str(pane.border_title) for pane_id, pane in screen.panes.items()}
        assert titles["prompt-pane"] == "8 prompt" and titles["kernel-pane"] == "2 kernel", titles
        assert titles["candidates-pane"].startswith(f"9 session {screen.view.session_id}: vector_add"), titles
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        panes = next(row for row in app.screen.rows if row[1] == "panes")
        assert panes[0] == "8 / 2 / 3 / 4 / 5 / 9 / 7" and "9 Candidates" in panes[2], panes
