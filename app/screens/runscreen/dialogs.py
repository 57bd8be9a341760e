"""The dialogs the run screen drives: the settings (model, server, N, D), the hardware counters
of the candidate shown, and the help of its keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuda_llm.app.keys import help_rows, key_of
from cuda_llm.app.screens.modals import HelpScreen, SettingsChange, SettingsScreen
from cuda_llm.app.screens.runscreen import decisions, worker
from cuda_llm.app.screens.runscreen.following import pane_of
from cuda_llm.app.state import LOG, STATUS

if TYPE_CHECKING:
    from cuda_llm.app.screens.run import RunScreen


# What each action of the run screen does, for its help (and the palette: app.py reads RunScreen.ACTION_HELP).
ACTION_HELP: dict[str, str] = {
    "help": "this list",
    "accept": "make the round's winner the new best",
    "reject": "drop the winner; the reason you give goes into the next prompt",
    "edit": "edit the shown kernel (in manual mode: write the one asked for) in $EDITOR, or the built-in "
    "editor when none is set; it is submitted through the same three checks",
    "pause": "pause before the next round",
    "resume": "go on (a round paused by a fault is retried)",
    "stop": "stop the session: requests in flight are cancelled, what is recorded stays; again: at once",
    "quit": "stop the session (it can be resumed) and quit; again: at once",
    "settings": "change the model, its server, N or D (a paused round takes them at once)",
    "auto_accept": "accept every round's winner without asking (on/off)",
    "follow": "show whatever happens next again (after picking a candidate in the tree)",
    "unfollow": "stay on the candidate shown; the streaming reply stops scrolling (f again follows)",
    "cancel_pause": "take back a pause asked for that the loop has not reached yet",
    "filter": "in the candidates pane: filter them by label or state (Esc clears); elsewhere: search the "
    "focused pane (n / N: next / previous match)",
    "copy": "copy the shown kernel to the clipboard (OSC 52: reaches your clipboard over SSH and tmux)",
    "save": "save the shown candidate as kernel.cu, plan.json and the report, as `cuda-llm export` does",
    "mark": "mark the shown candidate; d then compares another with it",
    "diff": "compare the shown candidate with the marked one: verdicts, launch plans, source",
    "table": "every candidate in one table, sortable by latency, status, registers, occupancy",
    "counters": "read the shown candidate's hardware counters (Nsight Compute) and say what limits it",
    "wrap": "wrap long lines in the focused pane on/off (prompt and log wrap by default)",
    "search": "the next (n) or previous (N) match of the search in the focused pane",
    "maximize_pane": "the focused pane fills the screen; again: back",
    "motion": "down (j) or up (k) in the focused pane: its cursor, or its text by a line",
    "next_pane": "focus the next pane",
    "previous_pane": "focus the previous pane",
    "back": "end a search of the focused pane; else back to the start screen (once the session has ended)",
}


class _KeyOf(dict[str, str]):
    """A help row's "{action}": the key the pane's action is on now."""

    def __init__(self, screen: RunScreen, pane: str) -> None:
        super().__init__()
        self.widget = screen.panes[pane]

    def __missing__(self, action: str) -> str:
        return key_of(self.widget, action)


def show_help(screen: RunScreen) -> None:
    """Every key of this screen as bound now (the config's [keys] table may have moved some),
    and what the focused pane adds."""
    rows = help_rows(screen, ACTION_HELP, skip=("pane", "explain"))
    specs = screen.pane_specs
    pane_keys = [key_of(screen, f"pane({p.id!r})") for p in specs]
    default_keys = [str(i) for i in range(1, len(specs) + 1)]
    rows.append(
        (
            f"1-{len(specs)}" if pane_keys == default_keys else " / ".join(pane_keys),
            "panes",
            "show and focus a pane: " + ", ".join(f"{k} {p.title}" for k, p in zip(pane_keys, specs, strict=True)),
            f"run.pane1-{len(specs)}",
        )
    )
    pane = pane_of(screen, screen.focused)
    for spec in specs:
        if spec.id == pane:
            for row in spec.help:
                rows.append((row.key.format_map(_KeyOf(screen, spec.id)), row.what, row.text + " (in this pane)", ""))
    rows.append(("ctrl+t", "theme", "next theme (dark, light, high contrast); remembered", "app.theme"))
    rows.append(("ctrl+p", "palette", "every action, searchable", ""))
    rows.append(("ctrl+c / ctrl+q", "quit", "the same as q", "app.quit"))
    rows.append(
        (key_of(screen.app, "messages"), "messages", "every notification of this run, with its time", "app.messages")
    )
    screen.app.push_screen(HelpScreen("Run screen keys", rows))


def counters(screen: RunScreen) -> None:
    """The shown candidate's counters, read by the engine (after any timing in progress); the
    validation pane shows what limits it when they arrive (a CountersRead event)."""
    c = screen.view.focused()
    j = c.judgement if c is not None else None
    if c is None or j is None or not j.is_correct:
        screen.notify("counters are read for a correct candidate: show one first", timeout=4, markup=False)
        return
    if screen.session is None or not worker.running(screen):
        screen.notify(
            f"the session has ended: `cuda-llm eval` with --counters reads {c.label}'s (x saves it first)",
            timeout=6,
            markup=False,
        )
        return
    screen.notify(f"reading {c.label}'s hardware counters (a few seconds)", timeout=3, markup=False)
    screen.run_worker(screen.session.read_counters(c.label), group="counters", exit_on_error=False)


def settings(screen: RunScreen) -> None:
    view, control = screen.view, screen.control
    loop = screen.request.options.loop
    n = view.settings.candidates if view.settings else loop.candidates
    d = view.settings.rounds if view.settings else loop.rounds
    paused = view.state == "paused"
    by_fault = paused and view.state_reason != "paused by the user"

    def changed(change: SettingsChange | None) -> None:
        if change is None:
            return
        if change.candidates is not None:
            control.set_candidates(change.candidates)
        if change.rounds is not None:
            control.set_rounds(change.rounds)
        if change.model is not None or change.server is not None:
            control.set_model(change.model or view.model, change.server)
        if change.retry_now and view.state == "paused":
            view.log.append("settings changed: the paused session goes on now with them")
            decisions.resume(screen)
        elif change != SettingsChange() and view.state == "paused":
            view.log.append(f"settings changed: they apply when the session goes on ({screen.keys()['resume']})")
        elif change != SettingsChange():
            view.log.append("settings change requested: it takes effect at the next round")
        screen.redraw({LOG, STATUS})

    screen.app.push_screen(SettingsScreen(n, d, view.model, screen.server, paused, by_fault), changed)
