"""Taking a candidate out of the run screen and comparing: copy (OSC 52), save as `cuda-llm
export` does, mark one and diff another against it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuda_llm.app.clipboard import osc52_blocked
from cuda_llm.app.compare import Side
from cuda_llm.app.screens.compare import CompareScreen
from cuda_llm.app.screens.modals import AskScreen, compose_reply
from cuda_llm.app.state import TREE
from cuda_llm.app.widgets.kernel import plan_json, source_of
from cuda_llm.engine.core.errors import describe
from cuda_llm.engine.judge.judgement import BASELINE_LABEL

if TYPE_CHECKING:
    from cuda_llm.app.screens.run import RunScreen


def shown_label(screen: RunScreen) -> str | None:
    """The candidate the panes show (the best when none is picked)."""
    c = screen.view.focused()
    if c is not None:
        return c.label
    best = screen.view.best_source()
    return best.label if best is not None else None


def side(screen: RunScreen, label: str) -> Side | None:
    view = screen.view
    if label == BASELINE_LABEL:
        j = view.baseline
        if j is None or j.candidate is None:
            return None
        return Side(label, j.candidate.source, plan_json(j.candidate.plan), j)
    c = view.candidates.get(label)
    if c is None:
        return None
    source, plan = source_of(c)
    return Side(label, source, plan, c.judgement) if source else None


def copy(screen: RunScreen, with_plan: bool = False) -> None:
    label = shown_label(screen)
    shown = side(screen, label) if label else None
    if shown is None:
        screen.notify("no kernel to copy yet", severity="warning", timeout=4)
        return
    text = compose_reply(shown.source, shown.plan, note=f"// {label}") if with_plan else shown.source
    screen.app.copy_to_clipboard(text)
    what = "kernel and launch plan" if with_plan else "kernel"
    screen.notify(f"copied {label}'s {what} ({len(text.splitlines())} lines) to the clipboard", timeout=3)
    blocked = osc52_blocked()  # sent, but tmux may drop it: say why and what to do
    if blocked is not None:
        screen.notify(blocked, severity="warning", timeout=10, markup=False)


def save(screen: RunScreen) -> None:
    label = shown_label(screen)
    sid = screen.view.session_id
    if label is None or sid is None:
        screen.notify("no candidate to save yet", severity="warning", timeout=4)
        return

    def chosen(folder: str | None) -> None:
        if folder:
            screen.run_worker(lambda: _save(screen, sid, label, folder), thread=True, group="save", exit_on_error=False)

    default = f"cuda-llm-session-{sid}-{label}"
    screen.app.push_screen(
        AskScreen(
            f"Save {label}",
            "Folder for kernel.cu, plan.json, report.md and report.json (as `cuda-llm export` writes):",
            default,
        ),
        chosen,
    )


def _save(screen: RunScreen, session_id: int, label: str, folder: str) -> None:
    """In a thread: the files are written as `cuda-llm export` writes them."""
    from cuda_llm.app.cli.files import output_folder
    from cuda_llm.app.cli.sessions_cmd import export_files, write_export

    app = screen.app
    try:
        out = output_folder(folder, "folder")
        files, _ = export_files(screen.request.options.db, session_id, label, out)
        replaced = write_export(out, files)
    except Exception as exc:  # a folder that cannot be made, a candidate not recorded yet
        app.call_from_thread(screen.notify, f"not saved: {describe(exc)}", severity="error", markup=False)
        return
    note = f" (replaced {', '.join(replaced)})" if replaced else ""
    app.call_from_thread(screen.notify, f"saved {label} to {out}/: {', '.join(files)}{note}", timeout=6, markup=False)


def mark(screen: RunScreen) -> None:
    label = shown_label(screen)
    if label is None:
        screen.notify("no candidate to mark yet", severity="warning", timeout=3)
        return
    view = screen.view
    view.marked = None if view.marked == label else label
    said = f"marked {label}: show another candidate and press d to compare" if view.marked else "unmarked"
    screen.notify(said, timeout=3, markup=False)
    screen.redraw({TREE})


def diff(screen: RunScreen) -> None:
    marked, label = screen.view.marked, shown_label(screen)
    if marked is None:
        screen.notify("mark a candidate first (t), then show another and press d", timeout=4)
        return
    if label is None or label == marked:
        screen.notify(f"{marked} is marked: show another candidate (Enter in the tree), then d", timeout=4)
        return
    old, new = side(screen, marked), side(screen, label)
    if old is None or new is None:
        missing = marked if old is None else label
        screen.notify(f"{missing} has no kernel to compare yet", severity="warning", timeout=4, markup=False)
        return
    screen.app.push_screen(CompareScreen(old, new))
