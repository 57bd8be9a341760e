"""The run screen: one FSR session, live.

The session runs in an async worker on the app's event loop; the engine's events reach the panes
as messages (app.messages), folded into the session view (app.state) first. Decisions go back
through the engine's Controller. Nothing here waits on the GPU or the network: every engine call
is awaited inside the worker, and a fault in a candidate, the model or the GPU arrives as an event
or an error line, never as an exception in the UI.

Layout: the seven panes are mounted once and never rebuilt. At 140x40 and above they sit side by
side in a grid; below that one pane at a time fills the body and a row of tabs names them. A
resize only changes a few inline styles (RunScreen._apply_layout), so nothing that writes to a pane
(the telemetry timer, a streaming reply) can ever find it missing.

Keys: a letter for every action (a accept, r reject, e edit, p pause, s stop, q quit, ? help,
/ filter, 1-7 and Tab a pane), and the F-keys beside them for terminals that pass them. Letter
bindings have ids, so the config file's [keys] table can move them (app/keys.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import ClassVar

from textual import events, work
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import Container
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Log, Tab, Tabs
from textual.worker import Worker, WorkerState

from cuda_llm.app import drafts
from cuda_llm.app.clipboard import osc52_blocked
from cuda_llm.app.compare import Side
from cuda_llm.app.drafts import Draft
from cuda_llm.app.editing import EditRequest, edit_externally, editor_command, failure_text
from cuda_llm.app.keys import help_rows, key_of, letters_first
from cuda_llm.app.messages import (
    CandidateChosen,
    EngineEvent,
    JumpToLine,
    SessionEnded,
    SessionError,
    SessionOpened,
    TokensArrived,
)
from cuda_llm.app.options import SessionRequest
from cuda_llm.app.screens.compare import CompareScreen
from cuda_llm.app.screens.modals import (
    AskScreen,
    EditResult,
    EditScreen,
    HelpScreen,
    RejectScreen,
    SettingsChange,
    SettingsScreen,
    compose_reply,
)
from cuda_llm.app.screens.table import CandidateTableScreen
from cuda_llm.app.state import COMPILER, KERNEL, LATENCY, LOG, PROMPT, STATUS, TREE, VALIDATION, SessionView
from cuda_llm.app.widgets.candidates import CandidatesPane
from cuda_llm.app.widgets.compiler import CompilerPane
from cuda_llm.app.widgets.eventlog import EventLog
from cuda_llm.app.widgets.footer import KeyFooter
from cuda_llm.app.widgets.kernel import KernelPane, plan_json, source_of
from cuda_llm.app.widgets.latency import LatencyPane
from cuda_llm.app.widgets.prompt import PromptPane
from cuda_llm.app.widgets.search import end_search, find_match, search_target, searching
from cuda_llm.app.widgets.status import StatusLine
from cuda_llm.app.widgets.telemetry import TelemetryBar
from cuda_llm.app.widgets.text import set_text
from cuda_llm.app.widgets.validation import ValidationPane
from cuda_llm.engine.core.errors import describe
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.control import Controller
from cuda_llm.engine.fsr.session import Session, candidate_label, open_session
from cuda_llm.engine.judge.judgement import BASELINE_LABEL
from cuda_llm.engine.llm.base import RequestKey
from cuda_llm.engine.llm.manual_provider import ManualProvider
from cuda_llm.engine.llm.spec import person_writes, server_of

WIDE = Size(140, 40)  # at least this many columns and rows: panes side by side
# The panes, by number (the digit keys, Tab, and the tabs of the narrow layout) and by id.
PANES: tuple[tuple[str, str], ...] = (
    ("prompt-pane", "Prompt"),
    ("kernel-pane", "Kernel"),
    ("compiler-pane", "Compiler"),
    ("validation-pane", "Validation"),
    ("latency-pane", "Latency"),
    ("candidates-pane", "Candidates"),
    ("event-log", "Log"),
)
# How long a stop may take before the session's worker is cancelled outright: a stop cancels the
# model requests at once; what remains is a compile or a GPU job finishing and being recorded.
STOP_GRACE_S = 3.0


BORDER_EDGES = ("border_top", "border_right", "border_bottom", "border_left")


def layout_for(size: Size) -> str:
    return "wide" if size.width >= WIDE.width and size.height >= WIDE.height else "narrow"


class RunScreen(Screen[None]):
    AUTO_FOCUS = "#prompt-log"  # the first pane: the prompt and the reply as it streams
    BINDINGS: ClassVar[list[BindingType]] = [
        # Letters, shown in the footer when they apply (this order: what matters most first, so at
        # 80 columns Accept, Reject and Quit are always whole). Not priority: in a text field
        # (the candidate filter) they type.
        Binding("a", "accept", "Accept", id="run.accept"),
        Binding("r", "reject", "Reject", id="run.reject"),
        # With no decision waiting, a and r say why instead of doing nothing (same ids: moved together).
        Binding("a", "explain('accept')", "Accept", show=False, id="run.accept"),
        Binding("r", "explain('reject')", "Reject", show=False, id="run.reject"),
        Binding("e", "edit", "Edit", id="run.edit"),
        Binding("p", "pause", "Pause", id="run.pause"),
        # The same key goes on (or takes back a pause not yet reached): one id, so the config moves all.
        Binding("p", "resume", "Resume", id="run.pause"),
        Binding("p", "cancel_pause", "Cancel pause", id="run.pause"),
        Binding("s", "stop", "Stop", id="run.stop"),
        Binding("f", "follow", "Follow", id="run.follow"),
        Binding("f", "unfollow", "Stop following", show=False, id="run.follow"),
        # Taking things out, comparing, reading: shown in help (?) and the palette, not the footer.
        Binding("y", "copy", "Copy kernel", show=False, id="run.copy"),
        Binding("Y", "copy(True)", "Copy kernel + plan", show=False, id="run.copy_plan"),
        Binding("x", "save", "Save files", show=False, id="run.save"),
        Binding("t", "mark", "Mark for diff", show=False, id="run.mark"),
        Binding("d", "diff", "Diff vs marked", show=False, id="run.diff"),
        Binding("T", "table", "Table of candidates", show=False, id="run.table"),
        Binding("c", "counters", "Hardware counters", show=False, id="run.counters"),
        Binding("w", "wrap", "Wrap on/off", show=False, id="run.wrap"),
        Binding("n", "search(1)", "Next match", show=False, id="run.search_next"),
        Binding("N", "search(-1)", "Previous match", show=False, id="run.search_previous"),
        Binding("z", "maximize_pane", "Maximize pane", show=False, id="run.maximize"),
        # vi's motions, as lazygit and k9s have them: down and up in the focused pane.
        Binding("j", "motion(1)", "Down", show=False, id="run.down"),
        Binding("k", "motion(-1)", "Up", show=False, id="run.up"),
        Binding("question_mark", "help", "Help", key_display="?", id="run.help"),
        Binding("q", "quit", "Quit", id="run.quit"),
        Binding("m", "settings", "Model/N/D", show=False, id="run.settings"),
        Binding("A", "auto_accept", "Auto-accept", show=False, id="run.auto_accept"),
        Binding("slash", "filter", "Filter/search", key_display="/", show=False, id="run.filter"),
        Binding("tab", "next_pane", "Next pane", show=False, id="run.next_pane"),
        Binding("shift+tab", "previous_pane", "Previous pane", show=False, id="run.previous_pane"),
        Binding("escape", "back", "Back", show=False, id="run.back"),
        *(
            Binding(str(i + 1), f"pane('{pane}')", title, show=False, id=f"run.pane{i + 1}")
            for i, (pane, title) in enumerate(PANES)
        ),
        # F-keys: the same actions for terminals that pass them; priority, so they act anywhere. The
        # footer shows one key an action: the letter, or the F-key where a text field takes letters.
        Binding("f1", "help", "Help", priority=True),
        Binding("f2", "accept", "Accept", priority=True),
        Binding("f3", "reject", "Reject", priority=True),
        Binding("f4", "edit", "Edit", priority=True),
        Binding("f5", "pause", "Pause", priority=True),
        Binding("f5", "resume", "Resume", priority=True),
        Binding("f5", "cancel_pause", "Cancel pause", priority=True),
        Binding("f6", "auto_accept", "Auto-accept", show=False, priority=True),
        Binding("f7", "settings", "Model/N/D", show=False, priority=True),
        Binding("f8", "stop", "Stop", priority=True),
        Binding("f9", "follow", "Follow", priority=True),
        Binding("f9", "unfollow", "Stop following", show=False, priority=True),
        # F10 quits, as in mc and htop: the footer's Quit where a text field takes the q.
        Binding("f10", "quit", "Quit", priority=True),
    ]
    ACTION_HELP: ClassVar[dict[str, str]] = {
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
    # What the focused pane adds, for the help screen.
    PANE_HELP: ClassVar[dict[str, list[tuple[str, str, str]]]] = {
        "candidates-pane": [("enter", "show", "show the candidate in the other panes (the root: follow again)")],
        "kernel-pane": [("{view}", "view", "source, plan, diff vs parent, diff vs best")],
        "compiler-pane": [("enter", "jump", "show the diagnostic's line in the kernel pane")],
        "latency-pane": [("+ / - / arrows / 0", "zoom", "zoom and pan the plot; 0 resets it")],
    }

    def __init__(self, request: SessionRequest, autostart: bool = True) -> None:
        """`autostart` False: show the view without running a session (tests feed it events)."""
        super().__init__()
        self.request = request
        self.autostart = autostart
        self.view = SessionView(manual=person_writes(request.options.model))
        self.control = Controller(auto_accept=request.auto_accept, stop_when_paused=False)
        self.session: Session | None = None
        self.worker: Worker | None = None
        self.server = ""  # the model's server, for the settings dialog
        self.pause_requested = False
        self.editing = False  # the person is in an editor: a second edit waits
        self._allowed: tuple[object, ...] = ()
        self.layout_mode = "narrow"
        self.active_pane = PANES[0][0]
        self.panes: dict[str, Widget] = {}
        self._widgets: dict[str, Widget] = {}  # the status line and the telemetry bar, once composed
        self.search_term = ""
        self.draft: Draft | None = None  # an edit kept from before, offered by `e`

    # ---- layout --------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        view = self.view
        self._telemetry = TelemetryBar(id="telemetry")
        yield self._telemetry
        # Each tab names the key that shows it (the config may have moved the digits).
        tabs = Tabs(
            *(Tab(f"{key_of(self, f'pane({pane!r})')} {title}", id=f"tab-{pane}") for pane, title in PANES),
            id="pane-tabs",
        )
        tabs.can_focus = False  # the digits and Tab move between panes; the tabs only name them
        yield tabs
        # In this order the wide layout's grid places them: the candidates, the prompt and the
        # kernel on top; the log, the compiler, validation and latency below.
        self.panes = {
            "candidates-pane": CandidatesPane(view, id="candidates-pane", classes="pane"),
            "prompt-pane": PromptPane(view, id="prompt-pane", classes="pane"),
            "kernel-pane": KernelPane(view, id="kernel-pane", classes="pane"),
            "event-log": EventLog(view, id="event-log", classes="pane"),
            "compiler-pane": CompilerPane(view, id="compiler-pane", classes="pane"),
            "validation-pane": ValidationPane(view, id="validation-pane", classes="pane"),
            "latency-pane": LatencyPane(view, id="latency-pane", classes="pane"),
        }
        # Each border title names the key that shows its pane, as the tabs do (the config may move the digits).
        for pane_id, title in PANES:
            key = key_of(self, f"pane({pane_id!r})")
            pane = self.panes[pane_id]
            if isinstance(pane, CandidatesPane):
                pane.title_key = key  # its title changes with the session: it puts the key in front itself
            else:
                pane.border_title = f"{key} {title.lower()}"
        with Container(id="run-body"):
            yield from self.panes.values()
        yield Input(
            placeholder="search the focused pane: Enter finds, n / N next / previous, Esc closes",
            id="pane-search",
            compact=True,
        )
        self._widgets = {"status": StatusLine(id="status"), "telemetry": self._telemetry}
        yield self._widgets["status"]
        yield KeyFooter(compact=True)

    def _apply_layout(self) -> None:
        """The wide layout is app.tcss's; the narrow one is a few inline styles over it. Inline
        styles only re-lay out what they touch, where a CSS class on the screen would restyle every
        widget on it (most of the time a resize took)."""
        wide = self.layout_mode == "wide"
        self.query_one("#pane-tabs").display = not wide
        body = self.query_one("#run-body")
        if wide:
            body.styles.clear_rule("layout")
        else:
            body.styles.layout = "vertical"
        for pane_id, pane in self.panes.items():
            pane.display = wide or pane_id == self.active_pane
            for edge in BORDER_EDGES:
                if wide:
                    pane.styles.clear_rule(edge)
                else:
                    setattr(pane.styles, edge, ("none", "transparent"))

    def _check_layout(self, size: Size) -> None:
        mode = layout_for(size)
        if mode != self.layout_mode:
            self.layout_mode = mode
            self._apply_layout()

    def on_resize(self, event: events.Resize) -> None:
        self._check_layout(event.size)

    def on_screen_resume(self) -> None:
        self._check_layout(self.app.size)  # the terminal may have been resized under a dialog

    def on_mount(self) -> None:
        self.query_one("#pane-search", Input).display = False
        self.layout_mode = layout_for(self.app.size)
        self._apply_layout()
        bar = self.query_one(TelemetryBar)
        bar.set_sample(getattr(self.app, "telemetry_sample", None))
        bar.set_context(self._bar_context())
        self._update_status()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._on_theme())
        if self.worker is None and self.autostart:
            self.worker = self.run_session()

    def _bar_context(self) -> str:
        v = self.view
        if not v.task:
            opts = self.request.options
            what = f"session {opts.resume}" if opts.resume is not None else f"{opts.task} with {opts.model}"
            return f"cuda-llm · opening {what}"
        sid = f"session {v.session_id} · " if v.session_id is not None else ""
        return f"cuda-llm · {sid}{v.task} · {v.model} · {v.device}"

    def _on_theme(self) -> None:
        for pane in self.query(KernelPane):
            pane.apply_theme()
        for latency in self.query(LatencyPane):
            latency.apply_theme()
        self._refresh({TREE})

    # ---- panes and focus -------------------------------------------------------------------------
    def _pane_of(self, widget: Widget | None) -> str | None:
        while widget is not None:
            if widget.id in self.panes and widget.parent is not None and widget.parent.id == "run-body":
                return widget.id
            widget = widget.parent  # type: ignore[assignment]  # panes' parents are widgets
        return None

    def _show_pane(self, pane: str) -> None:
        if pane not in self.panes:
            return
        if pane != self.active_pane:
            self.active_pane = pane
            self._apply_layout()
        tabs = self.query_one("#pane-tabs", Tabs)
        if tabs.active != f"tab-{pane}":
            tabs.active = f"tab-{pane}"

    def _focus_pane(self, pane: str, settled: bool = False) -> None:
        """Focus the pane's main widget (a pane without one: the first focusable widget in it,
        once the layout has been refreshed and it is in the focus chain)."""
        target = self.panes[pane]
        focus = getattr(target, "focus_target", None)
        widget = focus() if callable(focus) else None
        if widget is None and not settled:
            self.call_after_refresh(self._focus_pane, pane, True)
            return
        if widget is None:
            widget = next((w for w in self.focus_chain if target in w.ancestors_with_self), None)
        if widget is not None and widget is not self.focused:
            # At once, not as widget.focus() does on the next idle: a key typed in the same burst
            # as the digit (`2v`) is handled before that, and went to the pane left behind.
            if widget.focusable:
                self.set_focus(widget)
            else:
                widget.focus()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """A click (or the Tab key) moved the focus: the pane it is in becomes the active one."""
        pane = self._pane_of(event.widget)
        if pane is not None and pane != self.active_pane:
            self._show_pane(pane)

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        event.stop()
        pane = (event.tab.id or "").removeprefix("tab-")
        if pane in self.panes and pane != self.active_pane:
            self.action_pane(pane)

    def action_pane(self, pane: str) -> None:
        """Show a pane (its tab below 140x40) and put the focus in it, in either layout."""
        self._show_pane(pane)
        self._focus_pane(pane)

    def _step_pane(self, step: int) -> None:
        order = [p for p, _ in PANES]
        self.action_pane(order[(order.index(self.active_pane) + step) % len(order)])

    def action_next_pane(self) -> None:
        self._step_pane(1)

    def action_previous_pane(self) -> None:
        self._step_pane(-1)

    def action_filter(self) -> None:
        """`/`: the candidates' filter in their pane (or when no pane can be searched), else a search
        of the focused pane."""
        if self.active_pane != "candidates-pane" and search_target(self.panes[self.active_pane]) is not None:
            field = self.query_one("#pane-search", Input)
            field.display = True
            field.value = self.search_term
            field.focus()
            return
        self._show_pane("candidates-pane")
        pane = self.panes["candidates-pane"]
        assert isinstance(pane, CandidatesPane)
        self.call_after_refresh(pane.open_filter)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "pane-search":
            return
        event.stop()
        self.search_term = event.value.strip()
        event.input.display = False
        self._focus_pane(self.active_pane)
        if self.search_term:
            # Once the field has closed and the pane has its height back: a pane that follows its
            # end scrolls there on a resize, which would take the match out of view again.
            self.call_after_refresh(self.action_search, 1, True)

    def on_key(self, event: events.Key) -> None:
        field = self.query_one("#pane-search", Input)
        if event.key == "escape" and field.has_focus:
            event.stop()
            field.display = False
            self._focus_pane(self.active_pane)

    def action_search(self, step: int, from_top: bool = False) -> None:
        """The next (1) or previous (-1) line of the focused pane holding the search term."""
        target = search_target(self.panes[self.active_pane])
        if not self.search_term:
            self.notify("nothing to search for: / in a pane asks for it", timeout=3)
            return
        if target is None:
            self.notify("this pane has no text to search: / filters the candidates", timeout=3)
            return
        found = find_match(target, self.search_term, step, from_top)
        if found is None:
            self.notify(f"{self.search_term!r} is not in this pane", severity="warning", timeout=3, markup=False)
            return
        index, count, line = found
        self.notify(f"{self.search_term!r}: match {index} of {count} (line {line + 1})", timeout=2, markup=False)

    # ---- the session worker --------------------------------------------------------------------
    def _opening(self, line: str) -> None:
        """What the engine waits for while the session opens (a Ray cluster's GPUs): before the
        session's events flow, so it is a notification."""
        self.notify(line, title="opening the session", timeout=30, markup=False)

    @work(exclusive=True, group="session", exit_on_error=False, name="session")
    async def run_session(self) -> None:
        options = self.request.options
        env = None
        try:
            env = await self.app.open_environment(options)  # type: ignore[attr-defined]  # self.app is a CudaLlmApp
            session = await open_session(options, self.control, environment=env, progress=self._opening)
        except Exception as exc:
            if env is not None:
                with contextlib.suppress(Exception):
                    await env.close()
            self.post_message(SessionError(describe(exc)))
            return
        self.session = session
        sessions = self.app.running_sessions  # type: ignore[attr-defined]  # self.app is a CudaLlmApp
        sessions.add(session.id, str(session.store.path))
        session.bus.subscribe(self._relay)
        manual = isinstance(session.provider, ManualProvider)
        self.post_message(
            SessionOpened(
                session.id,
                session.task.name,
                session.provider.spec,
                session.env.notice,
                manual,
                server_of(session.provider) or "",
            )
        )
        try:
            result = await session.run()
        except asyncio.CancelledError:
            # The app is leaving (a forced quit or stop, or a crash): the session is recorded as
            # stopped, never left marked running; --resume continues it.
            sessions.interrupted(session.id)
            raise
        except Exception as exc:  # the loop recorded it and emitted Failed; say it, keep the app
            self.post_message(SessionError(describe(exc)))
        else:
            self.post_message(SessionEnded(result.status, result.reason))
        finally:
            sessions.discard(session.id)
            with contextlib.suppress(Exception):
                await session.close()

    def _relay(self, event: ev.Event) -> None:
        """The engine's subscriber: runs inside the loop's emit, so it only posts."""
        if isinstance(event, ev.TokensStreamed):
            self.post_message(TokensArrived(event.label, event.text))
        else:
            self.post_message(EngineEvent(event))

    @property
    def session_running(self) -> bool:
        return self.worker is not None and not self.worker.is_finished

    def request_stop(self) -> None:
        """Stop the session: the loop cancels its model requests and records what is done. The
        status line says so at once."""
        self.control.stop()
        manual = self.manual_provider()
        if manual is not None:
            manual.cancel_all("stopped by the person")
        if self.view.running and not self.view.stopping:
            self.view.stopping = True
            self.view.log.append("stopping: requests in flight are cancelled, what is recorded stays")
        self._refresh({LOG, STATUS})
        if self.session_running:
            self.set_timer(STOP_GRACE_S, self._stop_overdue)

    def _stop_overdue(self) -> None:
        """A stop that has not ended the session within the grace period: end it now (what is
        recorded stays; the work in flight is dropped)."""
        if self.session_running and self.view.stopping:
            self.view.log.append(f"the session did not stop within {STOP_GRACE_S:.0f} s: stopping it at once")
            self._refresh({LOG})
            self.force_stop()

    def force_stop(self) -> None:
        if self.worker is not None and not self.worker.is_finished:
            self.worker.cancel()

    async def shutdown(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop the session, give it `grace_s` to record what is in flight, then cancel it."""
        self.request_stop()
        worker = self.worker
        if worker is None or worker.is_finished:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(worker.wait(), grace_s)
        if not worker.is_finished:
            worker.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), max(grace_s, 1.0))

    def manual_provider(self) -> ManualProvider | None:
        provider = self.session.model_in_use() if self.session is not None else None
        return provider if isinstance(provider, ManualProvider) else None

    def manual_waiting(self) -> list[str]:
        manual = self.manual_provider()
        return [candidate_label(k) for k in manual.waiting()] if manual is not None else []

    # ---- messages from the worker ----------------------------------------------------------------
    def on_session_opened(self, message: SessionOpened) -> None:
        self.view.session_id = message.session_id
        self.view.task, self.view.model = message.task, message.model
        self.view.manual = message.manual
        self.server = message.server
        self.note_last_session()
        self._offer_draft(message.session_id)
        if message.notice:
            self.view.notice = message.notice
            self.view.log.append(message.notice)
        self._refresh({STATUS, LOG, TREE})

    def on_engine_event(self, message: EngineEvent) -> None:
        event = message.event
        changed = self.view.apply(event)
        if isinstance(event, ev.SessionPaused | ev.SessionResumed):
            self.pause_requested = False
        if isinstance(event, ev.AwaitingDecision):
            self.app.bell()  # a decision waits: the terminal (or tmux) marks the window for a person elsewhere
        if isinstance(event, ev.Notice | ev.SessionResumed | ev.RoundStarted) and self.session is not None:
            # A model change is taken by the loop at a safe point; show the one in use.
            provider = self.session.model_in_use()
            if provider.spec != self.view.model:
                self.view.model = provider.spec
                self.server = server_of(provider) or ""
                changed |= {STATUS}
        self._refresh(changed)

    def on_tokens_arrived(self, message: TokensArrived) -> None:
        first = self.view.add_tokens(message.label, message.text)
        prompt = self.panes.get("prompt-pane")
        if isinstance(prompt, PromptPane):
            prompt.append(message.label, message.text)
        if first:
            self._refresh({TREE, STATUS} | ({PROMPT} if message.label == self.view.focus else set()))

    def on_session_ended(self, message: SessionEnded) -> None:
        self.view.stopping = False
        self._refresh(self.view.ended(message.status, message.reason) | {LOG})
        self.note_last_session()
        if self.quitting:
            self.app.exit(0)

    def on_session_error(self, message: SessionError) -> None:
        self.view.stopping = False
        self._refresh(self.view.failed(message.message))
        self.note_last_session()
        if self.quitting:
            self.app.exit(0)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The session's worker ended without a word from the session (it was cancelled: a forced
        stop or quit): say so, and leave if that was the point."""
        if event.worker is not self.worker or event.state not in (WorkerState.CANCELLED, WorkerState.ERROR):
            return
        self.view.stopping = False
        if self.view.running:
            self._refresh(self.view.ended("stopped", "stopped at once: the work in flight was dropped") | {LOG})
        self.note_last_session()
        if self.quitting:
            self.app.exit(0)

    def on_jump_to_line(self, message: JumpToLine) -> None:
        message.stop()
        self._show_pane("kernel-pane")
        self.query_one(KernelPane).jump_to(message.line, message.column)

    def on_candidate_chosen(self, message: CandidateChosen) -> None:
        message.stop()
        self._refresh(self.view.set_focus(message.label, by_person=True) | {TREE, STATUS})

    def _refresh(self, changed: set[str]) -> None:
        if not changed or not self.is_mounted:
            return
        panes = (
            (TREE, CandidatesPane),
            (PROMPT, PromptPane),
            (KERNEL, KernelPane),
            (COMPILER, CompilerPane),
            (VALIDATION, ValidationPane),
            (LATENCY, LatencyPane),
            (LOG, EventLog),
        )
        # The panes by reference: a query walks the whole screen, and this runs for most engine events.
        by_class = {type(pane): pane for pane in self.panes.values()}
        for flag, cls in panes:
            if flag in changed and cls in by_class:
                by_class[cls].show()  # type: ignore[attr-defined]  # every pane class listed above has show()
        if STATUS in changed or TREE in changed:
            self._update_status()
        if STATUS in changed and self._widgets:
            self._widgets["telemetry"].set_context(self._bar_context())  # type: ignore[attr-defined]  # the telemetry bar

    @property
    def quitting(self) -> bool:
        """Quit was asked for: leave once the session has stopped (the status line says which key forces it)."""
        return self.view.quitting

    @quitting.setter
    def quitting(self, value: bool) -> None:
        self.view.quitting = value

    def keys(self) -> dict[str, str]:
        """The key shown for each action the status line mentions (the config may have moved them)."""
        actions = ("accept", "reject", "edit", "pause", "resume", "stop", "quit", "settings", "back", "auto_accept")
        return {a: key_of(self, a) for a in actions}

    def _update_status(self) -> None:
        for line in [w for w in (self._widgets.get("status"),) if isinstance(w, StatusLine)]:
            line.show(self.view, self.control.auto_accept, self.manual_waiting(), self.keys())
            if self.pause_requested and self.view.state in ("running", "awaiting") and not self.view.stopping:
                set_text(
                    line,
                    f"‖ pause requested: the loop pauses before its next round ({self.keys()['resume']} cancels)",
                )
        # The footer is rebuilt on every refresh_bindings(): only when what is allowed changed.
        allowed = (
            self.view.state,
            self.view.awaiting is not None,
            self.view.follow,
            self.view.manual,
            self.pause_requested,
            self.view.stopping,
        )
        if allowed != self._allowed:
            self._allowed = allowed
            self.refresh_bindings()

    # ---- actions ---------------------------------------------------------------------------------
    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        return letters_first(super().active_bindings)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        view = self.view
        live = view.running and view.state != "opening" and not view.stopping
        paused = view.state == "paused" or self.pause_requested
        if action in ("accept", "reject"):
            return view.awaiting is not None
        if action == "explain":
            return view.awaiting is None
        if action == "edit":
            return live
        if action == "pause":
            return live and not paused
        if action == "resume":
            return live and view.state == "paused"
        if action == "cancel_pause":
            return live and self.pause_requested and view.state != "paused"
        if action in ("stop", "settings"):
            return view.running
        if action == "auto_accept":
            return live and not view.manual
        if action == "follow":
            return not view.follow
        if action == "unfollow":
            return view.follow
        if action == "back":
            return not view.running
        return True

    def action_help(self) -> None:
        """Every key of this screen as bound now (the config's [keys] table may have moved some),
        and what the focused pane adds."""
        rows = help_rows(self, self.ACTION_HELP, skip=("pane", "explain"))
        pane_keys = [key_of(self, f"pane({pane!r})") for pane, _ in PANES]
        default_keys = [str(i + 1) for i in range(len(PANES))]
        rows.append(
            (
                "1-7" if pane_keys == default_keys else " / ".join(pane_keys),
                "panes",
                "show and focus a pane: " + ", ".join(f"{k} {t}" for k, (_, t) in zip(pane_keys, PANES, strict=True)),
                "run.pane1-7",
            )
        )
        pane = self._pane_of(self.focused)
        view_key = key_of(self.panes["kernel-pane"], "next_view")
        for key, what, text in self.PANE_HELP.get(pane or "", []):
            rows.append((key.format(view=view_key), what, text + " (in this pane)", ""))
        rows.append(("ctrl+t", "theme", "next theme (dark, light, high contrast); remembered", "app.theme"))
        rows.append(("ctrl+p", "palette", "every action, searchable", ""))
        rows.append(("ctrl+c / ctrl+q", "quit", "the same as q", "app.quit"))
        rows.append(
            (key_of(self.app, "messages"), "messages", "every notification of this run, with its time", "app.messages")
        )
        self.app.push_screen(HelpScreen("Run screen keys", rows))

    def action_explain(self, what: str) -> None:
        """a or r with no winner waiting: say why there is nothing to decide."""
        if self.view.compile_only:
            why = "compile-only: nothing is timed, so no round has a winner to decide on"
        elif self.control.auto_accept:
            key = self.keys()["auto_accept"]
            why = f"auto-accept is on: each round's winner is accepted as it comes ({key} turns it off)"
        elif not self.view.running:
            why = "the session has ended"
        else:
            why = "no round's winner is waiting for a decision yet"
        self.notify(f"nothing to {what}: {why}", timeout=4, markup=False)

    def action_accept(self) -> None:
        if self.view.awaiting is not None:
            self.control.accept(self.view.awaiting.judgement.label)

    def action_reject(self) -> None:
        awaiting = self.view.awaiting
        if awaiting is None:
            return
        label = awaiting.judgement.label

        def rejected(reason: str | None) -> None:
            if reason is not None:
                self.control.reject(label, reason)

        self.app.push_screen(RejectScreen(label), rejected)

    # -- hardware counters ----------------------------------------------------------------------------
    def action_counters(self) -> None:
        """The shown candidate's counters, read by the engine (after any timing in progress); the
        validation pane shows what limits it when they arrive (a CountersRead event)."""
        c = self.view.focused()
        j = c.judgement if c is not None else None
        if c is None or j is None or not j.is_correct:
            self.notify("counters are read for a correct candidate: show one first", timeout=4, markup=False)
            return
        if self.session is None or not self.session_running:
            self.notify(
                f"the session has ended: `cuda-llm eval` with --counters reads {c.label}'s (x saves it first)",
                timeout=6,
                markup=False,
            )
            return
        self.notify(f"reading {c.label}'s hardware counters (a few seconds)", timeout=3, markup=False)
        self.run_worker(self.session.read_counters(c.label), group="counters", exit_on_error=False)

    # -- editing ------------------------------------------------------------------------------------
    def action_edit(self) -> None:
        if self.editing:
            self.notify("an editor is open already", timeout=3)
            return
        request = self._draft_request() or self._edit_request()
        if request is None:
            return
        self.editing = True
        self._run_editor(request)

    def _draft_request(self) -> EditRequest | None:
        draft, self.draft = self.draft, None  # offered once; it stays on disk until submitted
        if draft is None or ((manual := self.manual_provider()) is not None and manual.waiting()):
            return None
        same = draft.session_id == self.view.session_id and draft.based_on in self.view.candidates
        return EditRequest(
            f"Your kept edit of {draft.based_on} (session {draft.session_id})",
            draft.source,
            draft.plan,
            based_on=draft.based_on if same else None,
            draft=draft,
        )

    def _edit_request(self) -> EditRequest | None:
        """What `e` edits: in manual mode the kernel asked for (a repair starts from the candidate
        that failed, with its errors beside it); else the candidate shown, or the best."""
        best = self.view.best_source()
        manual = self.manual_provider()
        if manual is not None and manual.waiting():
            key = manual.waiting()[0]
            label = candidate_label(key)
            failed = None
            if key.attempt > 0:
                before = candidate_label(RequestKey(key.round, key.attempt - 1, key.slot))
                failed = self.view.candidates.get(before)
            source, plan = source_of(failed, best) if failed is not None else source_of(None, best)
            what = f", a repair of {failed.label}" if failed is not None else ""
            return EditRequest(
                f"Write {label} (round {key.round}{what})",
                source,
                plan,
                failure_text(failed) if failed is not None else "",
                manual_key=key,
            )
        c = self.view.focused()
        source, plan = source_of(c, best)
        label = c.label if c is not None else (best.label if best is not None else "")
        if not source:
            self.notify("no kernel to edit yet", severity="warning", timeout=4)
            return None
        errors = failure_text(c) if c is not None and c.judgement is not None and c.judgement.failed else ""
        return EditRequest(f"Edit {label}", source, plan, errors, based_on=label)

    @work(group="editor", exit_on_error=False)
    async def _run_editor(self, request: EditRequest) -> None:
        try:
            command = editor_command()
            if command is not None:
                result = await edit_externally(self.app, command, request)
            else:
                result = await self.app.push_screen_wait(
                    EditScreen(request.title, request.source, request.plan, request.errors)
                )
        finally:
            self.editing = False
        self._submit_edit(request, result)

    def _keep(self, request: EditRequest, result: EditResult) -> str:
        """Keep an edit that cannot be submitted now; where it is, for the line that says so."""
        sid = self.view.session_id
        if sid is None:
            return "it could not be kept: the session never opened"
        try:
            path = drafts.keep(self.request.options.db, sid, request.based_on or "", result.source, result.plan_json)
        except OSError as exc:
            return f"it could not be kept ({exc.strerror or exc})"
        if request.draft is not None and request.draft.path != path:
            drafts.forget(request.draft)
        return f"it is kept in {path} and offered when you resume session {sid} (or start a new one)"

    def _submit_edit(self, request: EditRequest, result: EditResult | str | None) -> None:
        if isinstance(result, str):  # why nothing was submitted
            self.notify(result, severity="warning", timeout=8, markup=False)
            return
        if result is None:
            return
        if result.keep_only:  # the app is quitting with the editor open
            self.app.messages.add(f"your edit was not submitted: {self._keep(request, result)}", "warning")  # type: ignore[attr-defined]  # self.app is a CudaLlmApp
            self.app.call_later(self.app.run_action, "quit")
            return
        manual = self.manual_provider()
        if request.manual_key is not None:
            if manual is None or request.manual_key not in manual.waiting():
                self.notify("that request is no longer waiting: nothing was submitted", severity="warning")
                return
            manual.provide(request.manual_key, compose_reply(result.source, result.plan_json))
            return
        if not self.view.running:
            line = f"the session has ended: nothing was submitted; {self._keep(request, result)}"
            self.view.log.append(line)
            self._refresh({LOG})
            self.notify(line, severity="warning", timeout=15, markup=False)
            return
        self.control.submit_edit(result.source, result.plan_json, based_on=request.based_on)
        if request.draft is not None:
            drafts.forget(request.draft)
        self.view.log.append(
            f"your edit of {request.based_on} was submitted: it is judged now if a decision is pending, "
            "else at the end of the round"
        )
        self._refresh({LOG})

    # -- the loop -----------------------------------------------------------------------------------
    def action_pause(self) -> None:
        self.pause_requested = True
        self.control.pause()
        self._update_status()

    def action_resume(self) -> None:
        self.pause_requested = False
        self.control.resume()
        self._update_status()

    def action_auto_accept(self) -> None:
        self.control.set_auto_accept(not self.control.auto_accept)
        self.view.log.append(f"auto-accept {'on' if self.control.auto_accept else 'off'}")
        self._refresh({STATUS, LOG})

    def action_settings(self) -> None:
        settings = self.view.settings
        n = settings.candidates if settings else self.request.options.loop.candidates
        d = settings.rounds if settings else self.request.options.loop.rounds
        paused = self.view.state == "paused"
        by_fault = paused and self.view.state_reason != "paused by the user"

        def changed(change: SettingsChange | None) -> None:
            if change is None:
                return
            if change.candidates is not None:
                self.control.set_candidates(change.candidates)
            if change.rounds is not None:
                self.control.set_rounds(change.rounds)
            if change.model is not None or change.server is not None:
                self.control.set_model(change.model or self.view.model, change.server)
            if change.retry_now and self.view.state == "paused":
                self.view.log.append("settings changed: the paused session goes on now with them")
                self.action_resume()
            elif change != SettingsChange() and self.view.state == "paused":
                self.view.log.append(f"settings changed: they apply when the session goes on ({self.keys()['resume']})")
            elif change != SettingsChange():
                self.view.log.append("settings change requested: it takes effect at the next round")
            self._refresh({LOG, STATUS})

        self.app.push_screen(SettingsScreen(n, d, self.view.model, self.server, paused, by_fault), changed)

    def action_stop(self) -> None:
        if self.view.stopping and self.session_running:  # pressed again: do not wait any more
            self.view.log.append("stopping at once")
            self._refresh({LOG})
            self.force_stop()
            return
        self.request_stop()

    async def action_quit(self) -> None:
        await self.app.action_quit()

    def action_follow(self) -> None:
        self.view.follow = True
        latest = next(reversed(self.view.candidates), None)
        self._refresh(self.view.set_focus(latest) | {TREE, STATUS, PROMPT})

    def action_unfollow(self) -> None:
        self.view.follow = False
        self._refresh({TREE, STATUS, PROMPT})

    def action_cancel_pause(self) -> None:
        self.action_resume()

    # -- reading --------------------------------------------------------------------------------------
    def action_wrap(self) -> None:
        pane = self.panes[self.active_pane]
        toggle = getattr(pane, "toggle_wrap", None)
        if toggle is None:
            self.notify("this pane has nothing to wrap", timeout=2)
            return
        self.notify(f"wrap {'on' if toggle() else 'off'}", timeout=2)

    def action_motion(self, step: int) -> None:
        """j / k: the focused widget's cursor down or up (the tree, a list, a table, the kernel),
        else its text scrolled by a line (the prompt, the log)."""
        widget = self.focused
        if widget is None:
            return
        names = ("action_cursor_down", "action_scroll_down") if step > 0 else ("action_cursor_up", "action_scroll_up")
        for name in names:
            action = getattr(widget, name, None)
            if callable(action):
                action()
                return

    def action_maximize_pane(self) -> None:
        if self.maximized is not None:
            self.minimize()
            return
        self.maximized = self.panes[self.active_pane]  # any pane, whether Textual would offer it or not
        self._focus_pane(self.active_pane)

    # -- taking it out, comparing -----------------------------------------------------------------------
    def _shown_label(self) -> str | None:
        """The candidate the panes show (the best when none is picked)."""
        c = self.view.focused()
        if c is not None:
            return c.label
        best = self.view.best_source()
        return best.label if best is not None else None

    def side(self, label: str) -> Side | None:
        view = self.view
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

    def action_copy(self, with_plan: bool = False) -> None:
        label = self._shown_label()
        side = self.side(label) if label else None
        if side is None:
            self.notify("no kernel to copy yet", severity="warning", timeout=4)
            return
        text = compose_reply(side.source, side.plan, note=f"// {label}") if with_plan else side.source
        self.app.copy_to_clipboard(text)
        what = "kernel and launch plan" if with_plan else "kernel"
        self.notify(f"copied {label}'s {what} ({len(text.splitlines())} lines) to the clipboard", timeout=3)
        blocked = osc52_blocked()  # sent, but tmux may drop it: say why and what to do
        if blocked is not None:
            self.notify(blocked, severity="warning", timeout=10, markup=False)

    def action_save(self) -> None:
        label = self._shown_label()
        sid = self.view.session_id
        if label is None or sid is None:
            self.notify("no candidate to save yet", severity="warning", timeout=4)
            return

        def chosen(folder: str | None) -> None:
            if folder:
                self._save(sid, label, folder)

        default = f"cuda-llm-session-{sid}-{label}"
        self.app.push_screen(
            AskScreen(
                f"Save {label}",
                "Folder for kernel.cu, plan.json, report.md and report.json (as `cuda-llm export` writes):",
                default,
            ),
            chosen,
        )

    @work(thread=True, group="save", exit_on_error=False)
    def _save(self, session_id: int, label: str, folder: str) -> None:
        from cuda_llm.app.cli.files import output_folder
        from cuda_llm.app.cli.sessions_cmd import export_files, write_export

        try:
            out = output_folder(folder, "folder")
            files, _ = export_files(self.request.options.db, session_id, label, out)
            replaced = write_export(out, files)
        except Exception as exc:  # a folder that cannot be made, a candidate not recorded yet
            self.app.call_from_thread(self.notify, f"not saved: {describe(exc)}", severity="error", markup=False)
            return
        note = f" (replaced {', '.join(replaced)})" if replaced else ""
        self.app.call_from_thread(
            self.notify, f"saved {label} to {out}/: {', '.join(files)}{note}", timeout=6, markup=False
        )

    def action_mark(self) -> None:
        label = self._shown_label()
        if label is None:
            self.notify("no candidate to mark yet", severity="warning", timeout=3)
            return
        self.view.marked = None if self.view.marked == label else label
        said = f"marked {label}: show another candidate and press d to compare" if self.view.marked else "unmarked"
        self.notify(said, timeout=3, markup=False)
        self._refresh({TREE})

    def action_diff(self) -> None:
        marked, label = self.view.marked, self._shown_label()
        if marked is None:
            self.notify("mark a candidate first (t), then show another and press d", timeout=4)
            return
        if label is None or label == marked:
            self.notify(f"{marked} is marked: show another candidate (Enter in the tree), then d", timeout=4)
            return
        old, new = self.side(marked), self.side(label)
        if old is None or new is None:
            missing = marked if old is None else label
            self.notify(f"{missing} has no kernel to compare yet", severity="warning", timeout=4, markup=False)
            return
        self.app.push_screen(CompareScreen(old, new))

    def action_table(self) -> None:
        def chosen(label: str | None) -> None:
            if label is not None:
                self._refresh(self.view.set_focus(label, by_person=True) | {TREE, STATUS})

        self.app.push_screen(CandidateTableScreen(self.view), chosen)

    def note_last_session(self) -> None:
        """What the quit line says about this screen's session (app.quit_line)."""
        sid = self.view.session_id
        if sid is None:
            return
        state = self.view.state
        shown = {"finished": "finished", "failed": "failed", "paused": "paused"}.get(state, "stopped")
        if self.view.undecided is not None and shown != "failed":
            shown += f" with {self.view.undecided} awaiting your decision"
        self.app.last_session = (sid, shown, self.request.options.db)  # type: ignore[attr-defined]  # self.app is a CudaLlmApp

    def _offer_draft(self, session_id: int) -> None:
        """An edit kept from before: of this session first, else the newest of any."""
        db = self.request.options.db
        found = drafts.kept(db, session_id) or drafts.kept(db)
        if not found:
            return
        self.draft = found[0]
        where = "" if self.draft.session_id == session_id else f" in session {self.draft.session_id}"
        line = (
            f"an edit of {self.draft.based_on}{where} you did not submit is kept: "
            f"{self.keys()['edit']} opens it ({self.draft.path})"
        )
        self.view.log.append(line)
        self.notify(line, timeout=10, markup=False)

    def action_back(self) -> None:
        """Esc: end a search of the focused pane (its matches unmarked, its end followed again);
        else, once the session has ended, back to the start screen."""
        target = search_target(self.panes[self.active_pane])
        if isinstance(target, Log) and searching(target):
            end_search(target, self.view.follow)
            if self.view.follow:
                target.scroll_end(animate=False)
            return
        if not self.view.running:
            self.dismiss(None)
