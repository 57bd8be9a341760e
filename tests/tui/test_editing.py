"""Editing a kernel: in $EDITOR (a script stands in for the person's editor) or, without one, the
built-in editor, which asks before it throws edits away; in manual mode a repair starts from the
candidate that failed, with its errors beside it."""

from __future__ import annotations

import shlex
import sys

from textual.widgets import TextArea

from cuda_llm.app.screens.modals import ConfirmScreen, EditScreen
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from tui.helpers import by_request, make_app, screen_text, streamed, wait_for

# The person's editor: records what it was given, then replaces OLD with NEW in the file (or exits
# with a status, or leaves the file alone).
EDITOR = """\
import pathlib, sys
seen, old, new, status = sys.argv[1:5]
path = pathlib.Path(sys.argv[5])
text = path.read_text()
pathlib.Path(seen).write_text(text)
if old:
    path.write_text(text.replace(old, new))
sys.exit(int(status))
"""


def editor(tmp_path, old: str = "", new: str = "", status: int = 0) -> str:
    script = tmp_path / "editor.py"
    script.write_text(EDITOR)
    argv = (sys.executable, str(script), str(tmp_path / "seen.md"), old, new, str(status))
    return " ".join(shlex.quote(a) for a in argv)


def awaiting(app) -> str | None:
    v = getattr(app.screen, "view", None)
    return v.awaiting.judgement.label if v is not None and v.awaiting is not None else None


def notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_edit_in_the_persons_editor(tmp_path, llm_server, monkeypatch):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: awaiting(app) == "r1-1", "the decision")

        # An editor that fails, one that changes nothing: nothing is submitted, and it says why.
        monkeypatch.setenv("EDITOR", editor(tmp_path, status=1))
        await pilot.press("e")
        await wait_for(pilot, lambda: any("exited with status 1" in n for n in notes(app)), "the failed editor")
        monkeypatch.setenv("EDITOR", editor(tmp_path))
        await pilot.press("e")
        await wait_for(pilot, lambda: any("unchanged: nothing was submitted" in n for n in notes(app)), "unchanged")
        assert awaiting(app) == "r1-1" and isinstance(app.screen, RunScreen)

        # $VISUAL first, as editors' own convention has it: the kernel renamed, so the fake GPU times it at 20 us.
        monkeypatch.setenv("EDITOR", "false")
        monkeypatch.setenv("VISUAL", editor(tmp_path, "vadd_us40", "vadd_us20"))
        await pilot.press("e")
        await wait_for(pilot, lambda: awaiting(app) == "r1-edit1", "the edited kernel judged")
        seen = (tmp_path / "seen.md").read_text()
        assert seen.startswith("Edit r1-1.") and "```cuda" in seen and '"kernel": "vadd_us40"' in seen
        assert "r1-edit1 20.0 us" in screen_text(app, "#candidates")
        await pilot.press("a")
        await wait_for(pilot, lambda: app.screen.view.state == "finished", "the end")
        assert "★ r1-edit1 20.0 us best · accepted" in screen_text(app, "#candidates")


async def test_the_built_in_editor_asks_before_discarding(tmp_path, llm_server, monkeypatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: awaiting(app) == "r1-1", "the decision")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EditScreen), "the editor")
        edit = app.screen
        source = edit.query_one("#edit-source", TextArea)
        plan = edit.query_one("#edit-plan", TextArea)
        assert source.has_focus
        await pilot.press("ctrl+o")  # the plan
        assert plan.has_focus
        await pilot.press("ctrl+o")
        assert source.has_focus
        await pilot.press(*"// mine")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("n")  # keep editing: nothing lost
        await wait_for(pilot, lambda: app.screen is edit, "the editor again")
        assert "// mine" in source.text
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question again")
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await pilot.pause(0.3)
        assert awaiting(app) == "r1-1" and "edit" not in screen_text(app, "#candidates")  # nothing submitted


async def test_a_manual_repair_starts_from_the_failed_kernel(tmp_path, refused_url, monkeypatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    app = make_app(tmp_path, refused_url, task="vector_add", model="manual", candidates=1, rounds=1, repairs=1)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: "r1-1 waiting for your kernel" in screen_text(app, "#status"), "r1-1 asked")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EditScreen), "the editor")
        assert not app.screen.query("#edit-errors")  # a first kernel: nothing went wrong yet
        source = app.screen.query_one("#edit-source", TextArea)
        source.text = source.text.replace("c[i] = a[i] + b[i];", "c[i] = a[i] + undefined_thing;")
        await pilot.press("ctrl+s")
        await wait_for(
            pilot, lambda: "r1-fix1-1 waiting for your kernel" in screen_text(app, "#status"), "the repair asked"
        )
        assert "r1-1 compile error" in screen_text(app, "#candidates")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EditScreen), "the repair's editor")
        edit = app.screen
        assert "repair of r1-1" in str(edit.query_one(".dialog-title").render())
        source = edit.query_one("#edit-source", TextArea)
        assert "undefined_thing" in source.text  # the failed kernel, not the baseline
        errors = screen_text(app, "#edit-errors-text")
        assert "r1-1: compile error" in errors and "undefined_thing" in errors and "line " in errors, errors
        # The baseline again would be a repeat, not judged again: the comment makes it another program.
        source.text = source.text.replace("undefined_thing", "b[i] /* repaired */")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: awaiting(app) == "r1-fix1-1", "the repaired kernel's decision")


async def test_a_manual_repair_in_the_persons_editor_gets_the_errors(tmp_path, refused_url, monkeypatch):
    monkeypatch.setenv("EDITOR", editor(tmp_path, "c[i] = a[i] + b[i];", "c[i] = a[i] + nope;"))
    app = make_app(tmp_path, refused_url, task="vector_add", model="manual", candidates=1, rounds=1, repairs=1)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: "r1-1 waiting for your kernel" in screen_text(app, "#status"), "r1-1 asked")
        await pilot.press("e")  # the editor writes a kernel that does not compile
        await wait_for(pilot, lambda: "r1-fix1-1 waiting" in screen_text(app, "#status"), "the repair asked")
        monkeypatch.setenv("EDITOR", editor(tmp_path, "nope", "b[i] /* repaired */"))  # not the baseline again
        await pilot.press("e")
        await wait_for(pilot, lambda: awaiting(app) == "r1-fix1-1", "the repaired kernel's decision")
        seen = (tmp_path / "seen.md").read_text()
        assert seen.startswith("Write r1-fix1-1 (round 1, a repair of r1-1)")
        assert "What went wrong with the kernel you start from:" in seen and '"nope"' in seen
        assert "c[i] = a[i] + nope;" in seen  # the failed kernel is what the person starts from
