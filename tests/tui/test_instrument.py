"""The run screen as an instrument: what is on it can be taken out (copied through OSC 52, saved as
the files `export` writes), any two candidates compared, long text wrapped and searched, every
message kept, no edit lost, the list holding still, the user's config untouched, key conflicts
named, and a line left behind on quit. The loopback model server, the real compiler, the fake GPU."""

from __future__ import annotations

import argparse
import base64
import re

from llm_servers import Reply
from textual.widgets import Log, TextArea, Tree

from cuda_llm.app import drafts
from cuda_llm.app.cli.sessions_cmd import export
from cuda_llm.app.options import Defaults, resume_session
from cuda_llm.app.screens.compare import CompareScreen
from cuda_llm.app.screens.modals import ConfirmScreen, EditScreen, HelpScreen, MessagesScreen
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from cuda_llm.app.screens.table import CandidateTableScreen
from tui.helpers import by_request, make_app, reply_for, screen_text, stalled, streamed, wait_for

SETTINGS = {"task": "vector_add", "model": "ollama:loop-model", "target_roofline": 0.0}


def awaiting(app) -> str | None:
    v = getattr(app.screen, "view", None)
    return v.awaiting.judgement.label if v is not None and v.awaiting is not None else None


def shown(app, selector: str, width: int = 160) -> str:
    """What a Static holding any rich renderable shows, as plain text."""
    from rich.console import Console

    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(app.screen.query_one(selector).content)
    return console.export_text()


def choose(app, label: str) -> None:
    app.screen.view.set_focus(label, by_person=True)
    app.screen.redraw({"tree", "prompt", "kernel", "compiler", "validation", "status"})


async def start(pilot, app) -> None:
    await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
    await pilot.press("s")
    await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")


async def test_copy_writes_osc52_and_save_writes_what_export_writes(tmp_path, llm_server, monkeypatch):
    monkeypatch.chdir(tmp_path)
    llm_server.default = by_request({(1, 0, 0): streamed("vadd_us40"), (1, 0, 1): streamed("vadd_us50")})
    app = make_app(tmp_path, llm_server.url, candidates=2, rounds=1, **SETTINGS)
    async with app.run_test(size=(100, 30)) as pilot:
        written: list[str] = []
        original = app._driver.write
        app._driver.write = lambda data: (written.append(data), original(data))[1]
        await start(pilot, app)
        await wait_for(pilot, lambda: awaiting(app) == "r1-1", "the decision", 90)
        choose(app, "r1-2")
        await pilot.press("y")
        sent = [w for w in written if w.startswith("\x1b]52;c;")]
        assert sent, "no OSC 52 sequence was written"
        copied = base64.b64decode(sent[-1][len("\x1b]52;c;") :].rstrip("\a")).decode()
        assert "vadd_us50" in copied and "```json" not in copied
        await pilot.press("Y")
        copied = base64.b64decode([w for w in written if w.startswith("\x1b]52;c;")][-1][7:].rstrip("\a")).decode()
        assert "```cuda" in copied and '"kernel": "vadd_us50"' in copied, "the kernel and its plan"

        await pilot.press("a")
        await wait_for(pilot, lambda: not app.screen.view.running, "the end")
        session_id = app.screen.view.session_id

        await pilot.press("x")
        await wait_for(pilot, lambda: app.screen.query_one("#ask-value").value.endswith("-r1-2"), "the folder asked")
        folder = app.screen.query_one("#ask-value").value
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("saved r1-2" in e.text for e in app.messages.entries), "the saved line")
        saved = {p.name: p.read_bytes() for p in (tmp_path / folder).iterdir()}
    assert set(saved) == {"kernel.cu", "plan.json", "report.md", "report.json"}
    assert b"vadd_us50" in saved["kernel.cu"]
    args = argparse.Namespace(db=str(tmp_path / "sessions.db"), id=session_id, candidate="r1-2", out="cli", json=False)
    assert export(args) == 0
    exported = {p.name: p.read_bytes() for p in (tmp_path / "cli").iterdir()}
    # The same files, byte for byte, but for the folder each names in its re-judge command.
    for name in saved:
        got, want = saved[name].replace(folder.encode(), b"cli"), exported[name]
        at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
        assert got == want, (name, got[at - 80 : at + 40] if at else None, want[at - 80 : at + 40] if at else None)


async def test_diff_of_two_candidates_side_by_side_and_unified(tmp_path, llm_server):
    llm_server.default = by_request(
        {(1, 0, 0): streamed("vadd_us40"), (1, 0, 1): streamed("vadd_wrong"), (1, 0, 2): streamed("vadd_us60")}
    )
    app = make_app(tmp_path, llm_server.url, candidates=3, rounds=1, **SETTINGS)
    async with app.run_test(size=(160, 48)) as pilot:
        await start(pilot, app)
        await wait_for(pilot, lambda: awaiting(app) == "r1-1", "the decision", 90)
        await pilot.press("d")
        assert any("mark a candidate first" in e.text for e in app.messages.entries)
        choose(app, "r1-2")
        await pilot.press("t")
        assert "r1-2 wrong ◆ marked" in screen_text(app, "#candidates")
        choose(app, "r1-3")
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen), "the comparison")
        verdicts = shown(app, "#compare-verdicts")
        assert "wrong" in verdicts and "correct" in verdicts and "60.00 us" in verdicts and "registers" in verdicts
        plan = shown(app, "#compare-plan")
        assert re.search(r'^-\s+"kernel": "vadd_wrong"', plan, re.M) and re.search(
            r'^\+\s+"kernel": "vadd_us60"', plan, re.M
        )
        source = shown(app, "#compare-source")
        assert " │ " in source and "vadd_wrong" in source and "vadd_us60" in source, "side by side at 160 columns"
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        source = shown(app, "#compare-source", 80)
        assert "--- r1-2" in source and "+++ r1-3" in source and " │ " not in source, "unified when narrow"
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "back")

        # The flat table, sorted by latency (the unmeasured last), then by status.
        await pilot.press("T")
        await wait_for(pilot, lambda: isinstance(app.screen, CandidateTableScreen), "the table")
        rows = screen_text(app, "#candidate-table").splitlines()
        assert [r.split(" | ")[0] for r in rows] == ["r1-1", "r1-3", "r1-2"], rows
        await pilot.press("s")
        assert app.screen.by == "status"
        await pilot.press("escape")
        await pilot.press("s")
        await wait_for(pilot, lambda: not app.screen.view.running, "the stop")


async def test_the_reply_wraps_and_a_pane_is_searched(tmp_path, llm_server):
    long_line = " ".join(f"word{i}" for i in range(120))
    text = reply_for("vadd_us40", note=long_line)
    llm_server.default = by_request({(1, 0, 0): Reply.text(*[text[i : i + 40] for i in range(0, len(text), 40)])})
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=1, **SETTINGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot, app)
        await wait_for(pilot, lambda: awaiting(app) == "r1-1", "the decision")
        log = app.screen.query_one("#prompt-log", Log)
        await wait_for(pilot, lambda: "word119" in "\n".join(log.lines), "the reply")
        width = log.size.width
        assert all(len(line) <= width for line in log.lines), "every line fits the pane"
        assert any(line.startswith("word") for line in log.lines), "the long line goes on below"
        await pilot.press("w")
        await pilot.pause()
        assert any(long_line in line for line in log.lines), "unwrapped: one line again"
        await pilot.press("w")

        await pilot.press("slash")
        await wait_for(
            pilot, lambda: app.screen.focused is not None and app.screen.focused.id == "pane-search", "search"
        )
        await pilot.press(*"vadd_us40", "enter")
        found = [e.text for e in app.messages.entries if "match" in e.text]
        assert found and re.search(r"match 1 of (\d+)", found[-1]), found
        count = int(re.search(r"of (\d+)", found[-1]).group(1))
        assert count >= 2
        await pilot.press("n")
        assert "match 2 of" in app.messages.entries[-1].text
        await pilot.press("N")
        assert "match 1 of" in app.messages.entries[-1].text

        # z maximizes the focused pane; again: back.
        await pilot.press("z")
        assert app.screen.maximized is not None
        await pilot.press("z")
        assert app.screen.maximized is None
        await pilot.press("s")
        await wait_for(pilot, lambda: not app.screen.view.running, "the stop")


async def test_messages_stay_after_their_toasts(tmp_path, llm_server):
    (tmp_path / "tui.toml").write_text('[keys]\n"run.nonesuch" = "y"\n')
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=1, compile_only=True, **SETTINGS)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot, app)
        app.notify("a short-lived toast", timeout=0.1)
        await wait_for(pilot, lambda: app.screen.view.compile_only, "the session open")
        await pilot.press("a")  # compile-only: nothing waits for a decision, and it says why
        await wait_for(pilot, lambda: not app._notifications or len(app._notifications) == 0, "the toasts gone", 30)
        await pilot.press("M")
        await wait_for(pilot, lambda: isinstance(app.screen, MessagesScreen), "the messages")
        shown = screen_text(app, "#messages-text")
        assert "unknown binding id(s) run.nonesuch" in shown
        assert "a short-lived toast" in shown
        assert "nothing to accept: compile-only" in shown
        assert re.search(r"\d\d:\d\d:\d\d", shown), "each with its time"
        await pilot.press("escape")


async def test_an_edit_outlives_its_session(tmp_path, llm_server, monkeypatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    llm_server.default = by_request({(1, 0, 0): streamed("vadd_us40"), (2, 0, 0): stalled("vadd_us30", 30.0)})
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=2, auto_accept=True, **SETTINGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot, app)
        await wait_for(pilot, lambda: "r2-1" in app.screen.view.candidates, "round 2 under way")
        choose(app, "r1-1")
        run = app.screen
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EditScreen), "the editor")
        area = app.screen.query_one("#edit-source", TextArea)
        area.text = area.text.replace("vadd_us40", "vadd_us20")
        run.request_stop()  # the session ends while the editor is open
        await wait_for(pilot, lambda: not run.view.running, "the session's end")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "back on the run screen")
        kept = drafts.kept(str(tmp_path / "sessions.db"))
        assert len(kept) == 1 and "vadd_us20" in kept[0].source and kept[0].based_on == "r1-1"
        assert any("it is kept in" in e.text for e in app.messages.entries)
        session_id = run.view.session_id

    # Resumed, the session offers it; e opens it, and once submitted it is gone.
    request = resume_session(Defaults(db=str(tmp_path / "sessions.db")), session_id, auto_accept=False)
    llm_server.default = by_request({}, default=stalled("vadd_us30", 30.0))
    app = make_app(tmp_path, llm_server.url, start=request)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: app.screen.draft is not None, "the draft offered")
        assert any("you did not submit is kept" in line for line in app.screen.view.log)
        await wait_for(pilot, lambda: app.screen.view.state == "running", "the session running")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EditScreen), "the editor")
        assert "vadd_us20" in app.screen.query_one("#edit-source", TextArea).text
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not drafts.kept(str(tmp_path / "sessions.db")), "the draft submitted")
        await pilot.press("s")
        await wait_for(pilot, lambda: not app.screen.view.running, "the stop")


async def test_quit_in_the_editor_with_unsaved_text_asks(tmp_path, llm_server, monkeypatch):
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
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, EditScreen), "still editing")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question again")
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running, "the quit", 30)
    kept = drafts.kept(str(tmp_path / "sessions.db"))
    assert len(kept) == 1 and "// mine" in kept[0].source
    line = app.quit_line()
    assert line is not None and re.search(
        r"session \d+ stopped with r1-1 awaiting your decision; resume it with: cuda-llm run --resume \d+", line
    )


async def test_the_cursor_stays_on_its_candidate_while_rounds_arrive(tmp_path, llm_server):
    # Rounds 2 to 6 each wait 1.5 s for their reply, so that r1-1 is in the tree before round 3 begins
    # on a loaded machine too (their kernel repeats r1-1's and is not compiled again: no time there).
    llm_server.default = by_request({(1, 0, 0): streamed("vadd_us40")}, default=stalled("vadd_us40", 1.5))
    settings = dict(SETTINGS, patience=0)
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=6, auto_accept=True, compile_only=True, **settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot, app)
        await wait_for(pilot, lambda: "r1-1" in app.screen.view.candidates, "round 1")
        await pilot.press("6")
        tree = app.screen.query_one("#candidates", Tree)
        await wait_for(pilot, lambda: any(n.data == "r1-1" for r in tree.root.children for n in r.children), "r1-1")
        leaf = next(n for r in tree.root.children for n in r.children if n.data == "r1-1")
        assert app.screen.view.round < 3, "the rounds that fold it are still to come"
        tree.move_cursor(leaf)
        await wait_for(pilot, lambda: not app.screen.view.running, "the end", 60)
        assert len(app.screen.view.rounds()) == 6
        assert tree.cursor_node is not None and tree.cursor_node.data == "r1-1", tree.cursor_node
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen.view.focus == "r1-1", "r1-1 shown")
        labels = [str(n.label) for n in tree.root.children if n.data != "r1-1"]
        assert any(re.match(r"round 2 · 1", label) for label in labels), labels


async def test_the_config_file_is_never_written(tmp_path, llm_server):
    config = tmp_path / "tui.toml"
    text = (
        "# my settings: keep this comment\n"
        'theme = "cuda-dark"  # dark, for the night\n'
        'future_option = "kept"\n\n'
        "[keys]\n"
        '"run.pause" = "s"   # s for suspend\n'
    )
    config.write_bytes(text.encode())
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=1, compile_only=True, **SETTINGS)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.theme == "cuda-light"
        assert config.read_bytes() == text.encode(), "the config is byte for byte what the user wrote"
        assert 'theme = "cuda-light"' in (tmp_path / "tui-state.toml").read_text()

        # The key given twice is reported by both names, and the help shows what is in force.
        conflict = [e.text for e in app.messages.entries if "takes s from run.stop" in e.text]
        assert conflict and "Stop is left on f8" in conflict[0], [e.text for e in app.messages.entries]
        await pilot.press("s")  # the start screen's s still starts
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        rows = {row[1]: row[0] for row in app.screen.rows}
        assert rows["Stop"] == "f8" and rows["Pause"].startswith("s"), rows
        await pilot.press("escape")
    # The next start reads the theme back from the state file.
    app = make_app(tmp_path, llm_server.url)
    assert app.theme == "cuda-light"


async def test_manual_mode_asks_for_one_kernel_a_round(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, candidates=4, rounds=1, **SETTINGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        specs = lambda: {m.spec for m in app.screen.models}  # noqa: E731
        await wait_for(pilot, lambda: {"manual", "ollama:loop-model"} <= specs(), "the model list")
        screen = app.screen
        n = screen.query_one("#opt-n")
        assert n.value == "4"
        screen.pick_model(next(i for i, m in enumerate(screen.models) if m.spec == "manual"))
        assert n.value == "1", "a person writes one kernel a round"
        screen.pick_model(next(i for i, m in enumerate(screen.models) if m.spec == "ollama:loop-model"))
        assert n.value == "4", "back to N for a model"
