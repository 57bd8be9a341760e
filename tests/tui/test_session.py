"""A whole session through the TUI with Pilot: the loopback model server (real ollama client, real
wire), the real compiler, and the fake GPU. Asserts on what the panes show."""

from __future__ import annotations

import tomllib

from textual.widgets import OptionList, TextArea, Tree

from cuda_llm.app.screens.modals import EditScreen, RejectScreen
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from tui.helpers import broken, by_request, make_app, screen_text, stalled, streamed, wait_for


def choose(app, label: str) -> None:
    """Pick a candidate in the tree, as Enter on its node does."""
    tree = app.screen.query_one("#candidates", Tree)

    def find(node):
        if node.data == label:
            return node
        for child in node.children:
            hit = find(child)
            if hit is not None:
                return hit
        return None

    node = find(tree.root)
    assert node is not None, f"{label} is not in the tree"
    tree.select_node(node)


def awaiting(app) -> str | None:
    view = getattr(app.screen, "view", None)
    return view.awaiting.judgement.label if view is not None and view.awaiting is not None else None


async def test_a_whole_session(tmp_path, llm_server):
    llm_server.default = by_request(
        {
            (1, 0, 0): broken(),  # compile error at line 7
            (1, 0, 1): stalled("vadd_wrong", seconds=1.5),  # mismatches; stops mid-reply for a while
            (1, 1, 0): streamed("vadd_us40"),  # correct, 40 us
            (1, 1, 1): streamed("vadd_crash"),  # an illegal address
            (2, 0, 0): streamed("vadd_us30"),
            (2, 0, 1): streamed("vadd_hang"),  # timed out
        }
    )
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=2, rounds=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await wait_for(pilot, lambda: "loop-model" in screen_text(app, "#model-list"), "ollama's models")
        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        screen = app.screen
        assert screen.layout_mode == "narrow" and screen.query_one("#pane-tabs").display  # 80x24: tabs

        # Tokens stream into the prompt pane and the tree says so.
        await wait_for(pilot, lambda: "r1-2 streaming" in screen_text(app, "#candidates"), "a streaming candidate")
        choose(app, "r1-2")
        await pilot.pause()
        assert "Vectorised loads." in screen_text(app, "#prompt-log")  # the reply so far, under its prompt
        assert "# Task: vector_add" in screen_text(app, "#prompt-log")
        await wait_for(pilot, lambda: awaiting(app) == "r1-fix1-1", "the round 1 decision")
        tree = screen_text(app, "#candidates")
        for line in ("r1-1 compile error", "r1-2 wrong", "r1-fix1-1 40.0 us", "r1-fix1-2 crashed"):
            assert line in tree, tree
        assert "baseline 100.0 us" in tree
        prompt = screen_text(app, "#prompt-log")
        assert "# Task: vector_add" in prompt and "void vadd_us40" in prompt
        assert "r1-fix1-1 is 2.50x faster than the best" in screen_text(app, "#status")
        figures = screen_text(app, "#latency-figures")
        assert "best: the baseline, 100.0 us · 20% of the achievable roofline" in figures, figures

        # The compile error, with its line; choosing it puts the kernel's cursor there.
        choose(app, "r1-1")
        await pilot.pause()
        assert "compile error at line 7" in screen_text(app, "#compiler-summary")
        assert "line 7" in screen_text(app, "#compiler-diagnostics")
        await pilot.press("3")
        diagnostics = screen.query_one("#compiler-diagnostics", OptionList)
        diagnostics.focus()
        diagnostics.highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        assert screen.active_pane == "kernel-pane" and screen.panes["kernel-pane"].display
        source = screen.query_one("#kernel-source", TextArea)
        assert source.cursor_location[0] == 6 and "undefined_thing" in source.document.get_line(6)

        # The mismatch table, with indices as coordinates, and the pattern.
        choose(app, "r1-2")
        await pilot.pause()
        table = screen_text(app, "#mismatches")
        assert "n=1000 | 0 | c | (997) | 1.5 | 0 | 1.5 | 1" in table, table
        assert "(999) | 3.5 | NaN (unwritten)" in table, table
        summary = screen_text(app, "#validation-summary")
        assert "cases passed: 15 of 16 · unwritten outputs: 1" in summary, summary
        assert "pattern: the last 3 elements are wrong" in summary

        # The crash is a state in the panes, not an exception.
        choose(app, "r1-fix1-2")
        await pilot.pause()
        assert "CUDA_ERROR_ILLEGAL_ADDRESS" in screen_text(app, "#validation-summary")

        # Reject with a reason: it reaches the next prompt the server receives.
        await pilot.press("f9")  # follow the session again
        await pilot.press("f3")
        await wait_for(pilot, lambda: isinstance(app.screen, RejectScreen), "the reason dialog")
        await pilot.press(*"no float4 please", "enter")
        await wait_for(pilot, lambda: awaiting(app) == "r2-1", "the round 2 decision")
        round2 = [r for r in llm_server.chat_requests if "# Round 2" in r.messages[-1]["content"]]
        assert round2 and "no float4 please" in round2[0].messages[-1]["content"]
        assert "r1-fix1-1 40.0 us · rejected" in screen_text(app, "#candidates")
        assert "r2-2 timed out" in screen_text(app, "#candidates")

        # Edit the winner and submit it: it goes through the same checks and waits for a decision.
        await pilot.press("f4")
        await wait_for(pilot, lambda: isinstance(app.screen, EditScreen), "the editor")
        editor = app.screen
        for area_id in ("#edit-source", "#edit-plan"):
            area = editor.query_one(area_id, TextArea)
            area.text = area.text.replace("vadd_us30", "vadd_us20")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: awaiting(app) == "r2-edit1", "the edited kernel's decision")
        assert "r2-edit1 20.0 us" in screen_text(app, "#candidates")

        # Accept: the edit becomes the best; the session ends after D rounds.
        await pilot.press("f2")
        await wait_for(pilot, lambda: app.screen.view.state == "finished", "the end of the session")
        tree = screen_text(app, "#candidates")
        assert "★ r2-edit1 20.0 us best · accepted" in tree, tree
        assert "finished: 2 rounds done" in screen_text(app, "#status")
        assert "5.00x the baseline" in screen_text(app, "#latency-figures")

        # The kernel pane's plan and its diff against the best.
        choose(app, "r2-1")
        await pilot.pause()
        launches = screen_text(app, "#kernel-launches")
        assert launches == "vadd_us30<<<(cdiv(cdiv(n, 4), 256)), (256)>>>(a, b, c, n)", launches
        diff = screen_text(app, "#kernel-diff")
        assert "--- best r2-edit1" in diff and "-extern" in diff and "vadd_us20" in diff and "+extern" in diff

        # Theme switch at run time: the editor follows, and the choice is remembered.
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.theme == "cuda-light"
        assert screen.query_one("#kernel-source", TextArea).theme == "cuda-light-code"
        saved = tomllib.loads((tmp_path / "tui-state.toml").read_text())  # the app's own file
        assert not (tmp_path / "tui.toml").exists(), "the config file is the user's: never written"
        assert saved["theme"] == "cuda-light" and saved["task"] == "vector_add"

        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen again")
        assert "vector_add" in screen_text(app, "#sessions") and "finished" in screen_text(app, "#sessions")
        assert "5.00x" in screen_text(app, "#task-list")
