"""Defects of the run screen found by using it as a daily user would, each pinned by a test that
fails without its fix: the loopback model server, the real compiler, the fake GPU."""

from __future__ import annotations

from textual import events
from textual.widgets import TextArea, Tree

from cuda_llm.app import drafts
from cuda_llm.app.screens.modals import ConfirmScreen, EditScreen
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from tui.helpers import broken, by_request, make_app, screen_text, stalled, streamed, wait_for

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


def visible_lines(log) -> range:
    top = round(log.scroll_y)
    return range(top, top + log.scrollable_content_region.height)


def highlighted(log, line: int, term: str) -> bool:
    """Whether the shown row of `line` styles the term apart from the text around it."""
    strip = log.render_line(line - round(log.scroll_y))
    styles = {seg.style for seg in strip if term.lower() in seg.text.lower()}
    plain = {seg.style for seg in strip if seg.text.strip() and term.lower() not in seg.text.lower()}
    return bool(styles) and not styles & plain


async def test_search_in_the_prompt_and_the_log_scrolls_to_the_match_and_highlights_it(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    # Four rounds in 20 rows: a log longer than its pane.
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=4, auto_accept=True, **SETTINGS)
    async with app.run_test(size=(100, 20)) as pilot:
        await start(pilot, app)
        await wait_for(pilot, lambda: not app.screen.view.running, "the end", 40)
        for key, selector in (("1", "#prompt-log"), ("7", "#event-log")):
            await pilot.press(key)
            log = app.screen.query_one(selector)
            await wait_for(pilot, lambda log=log: log.has_focus, f"{selector} focused")
            log.scroll_end(animate=False, immediate=True)
            await pilot.pause()
            # A word of the first line: far above the end in a pane showing its end.
            term = next(w for w in log.lines[0].split() if len(w) >= 4 and w.isalpha())
            assert 0 not in visible_lines(log), (selector, log.line_count)
            await pilot.press("slash", *term, "enter")
            await wait_for(pilot, lambda log=log: 0 in visible_lines(log), f"{selector} scrolled to line 1")
            await pilot.pause()  # the search field's closing re-lays the pane out: the match stays shown
            assert 0 in visible_lines(log), (selector, log.scroll_y)
            assert highlighted(log, 0, term), selector
            await pilot.press("escape")  # the search ends: the pane follows its end again
            await wait_for(pilot, lambda log=log: not log.highlight, f"{selector} unmarked")
            assert log.auto_scroll and 0 not in visible_lines(log)


async def test_f5_takes_back_a_pause_request_and_f9_turns_follow_off(tmp_path, llm_server):
    # The key table says F5 matches p and F9 matches f: each of the two states a letter toggles.
    llm_server.default = by_request({}, default=stalled("vadd_us40", 30))
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=2, **SETTINGS)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot, app)
        await wait_for(pilot, lambda: "r1-1" in app.screen.view.candidates, "the request streaming")
        screen = app.screen
        await pilot.press("f5")
        await wait_for(pilot, lambda: screen.control.paused, "the pause requested")
        await pilot.press("f5")
        await wait_for(pilot, lambda: not screen.control.paused, "the pause taken back")
        assert not screen.pause_requested and screen.view.state == "running"
        await pilot.press("f9")
        await wait_for(pilot, lambda: not screen.view.follow, "following off")
        await pilot.press("f9")
        await wait_for(pilot, lambda: screen.view.follow, "following again")
        await pilot.press("s")
        await wait_for(pilot, lambda: not screen.view.running, "the stop")


async def test_a_filter_that_matches_nothing_says_so_and_esc_clears_it(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=1, auto_accept=True, **SETTINGS)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot, app)
        await wait_for(pilot, lambda: not app.screen.view.running, "the end", 60)
        await pilot.press("6", "slash", *"zzz", "enter")
        tree = app.screen.query_one("#candidates", Tree)
        await wait_for(pilot, lambda: tree.has_focus and tree.filter_text == "zzz", "the filter applied")
        said = "no candidate matches 'zzz'"
        await wait_for(pilot, lambda: said in screen_text(app, "#candidates"), "why it is empty")
        await pilot.press("escape")  # from the tree, where Enter left the focus
        await wait_for(pilot, lambda: tree.filter_text == "", "the filter cleared")
        await wait_for(pilot, lambda: "r1-1" in screen_text(app, "#candidates"), "the candidates again")
        assert "no candidate matches" not in screen_text(app, "#candidates")
        assert not app.screen.query_one("#candidate-filter").display
        assert isinstance(app.screen, RunScreen)  # Esc took back the filter, not the screen


async def test_a_jump_from_a_compiler_error_shows_the_line_from_its_first_column(tmp_path, llm_server):
    llm_server.default = by_request({}, default=broken())
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=1, repairs=0, **SETTINGS)
    async with app.run_test(size=(100, 30)) as pilot:  # narrow: one pane at a time
        await start(pilot, app)
        await wait_for(pilot, lambda: not app.screen.view.running, "the end", 60)
        app.screen.view.set_focus("r1-1", by_person=True)
        app.screen.redraw({"tree", "prompt", "kernel", "compiler", "validation", "status"})
        await pilot.press("3")
        options = app.screen.query_one("#compiler-pane OptionList")
        await wait_for(pilot, lambda: options.has_focus and options.option_count > 0, "the diagnostics")
        options.highlighted = 0
        await pilot.press("enter")
        area = app.screen.query_one("#kernel-source", TextArea)
        await wait_for(pilot, lambda: area.has_focus and area.cursor_location[0] == 6, "the error's line")
        await pilot.pause()
        assert area.scroll_x == 0, area.scroll_x
        assert area.cursor_location[0] in range(round(area.scroll_y), round(area.scroll_y) + area.size.height)


async def test_two_keys_in_one_burst_both_act(tmp_path, llm_server):
    # `2v` typed at once: the digit shows the kernel pane and v must reach it, not the pane left.
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=1, auto_accept=True, **SETTINGS)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot, app)
        await wait_for(pilot, lambda: not app.screen.view.running, "the end", 60)
        tabs = app.screen.query_one("#kernel-tabs")
        assert tabs.active == "kernel-source-tab"
        # One burst, as a terminal delivers it: both keys queued before either is handled.
        app.post_message(events.Key("2", "2"))
        app.post_message(events.Key("v", "v"))
        plan = app.screen.query_one("#kernel-plan")
        await wait_for(pilot, lambda: app.screen.focused is plan and tabs.active == "kernel-plan-tab", "the plan view")
        await pilot.pause()  # every focus change queued has landed: the plan stays
        assert app.screen.focused is plan and tabs.active == "kernel-plan-tab"


async def test_j_and_k_move_in_the_pane_a_bell_says_a_decision_waits_and_ctrl_z_suspends(tmp_path, llm_server):
    # What users of lazygit, k9s and btop reach for: vi's motions, a bell, Ctrl-Z.
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, candidates=2, rounds=1, **SETTINGS)
    bells: list[int] = []
    suspended: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    app.action_suspend_process = lambda: suspended.append(1)  # type: ignore[method-assign]
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot, app)
        await wait_for(pilot, lambda: app.screen.view.awaiting is not None, "the decision", 60)
        assert bells, "the bell rang when the decision began to wait"
        await pilot.press("6")
        tree = app.screen.query_one("#candidates", Tree)
        await wait_for(pilot, lambda: tree.has_focus, "the tree")
        tree.cursor_line = 0
        await pilot.press("j", "j")
        await wait_for(pilot, lambda: tree.cursor_line == 2, "two lines down")
        await pilot.press("k")
        await wait_for(pilot, lambda: tree.cursor_line == 1, "one line up")
        await pilot.press("ctrl+z")
        await wait_for(pilot, lambda: suspended, "the suspend")
        await pilot.press("a")
        await wait_for(pilot, lambda: not app.screen.view.running, "the end", 60)
