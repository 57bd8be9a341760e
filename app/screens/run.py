"""The run screen: one FSR session, live.

The screen composes the registered panes (app/panes/registry.py), routes keys and messages, and
nothing else: each of its jobs is a module of app/screens/runscreen/ (the session's worker, the
engine's events folded into the view, decisions, edits, following and focus, the dialogs, search,
taking a kernel out, the status line), and app/panes/layout.py arranges the panes for the size.

Keys: a letter for every action (a accept, r reject, e edit, p pause, s stop, q quit, ? help,
/ filter, a pane's key and Tab a pane), and the F-keys beside them for terminals that pass them.
Letter bindings have ids, so the config file's [keys] table can move them (app/keys.py).
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import Container
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Tab, Tabs
from textual.worker import Worker

from cuda_llm.app.drafts import Draft
from cuda_llm.app.keys import key_of, letters_first
from cuda_llm.app.long_lived import freeze_long_lived, thaw_long_lived
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
from cuda_llm.app.panes.layout import PaneLayout, layout_for
from cuda_llm.app.panes.registry import in_grid_order, pane_bindings, panes, redraw, retheme
from cuda_llm.app.panes.registry import keys as registered_keys
from cuda_llm.app.screens.runscreen import (
    decisions,
    dialogs,
    edits,
    following,
    search,
    status,
    taking,
    worker,
)
from cuda_llm.app.screens.runscreen import events as session_events
from cuda_llm.app.state import STATUS, TREE, SessionView
from cuda_llm.app.widgets.footer import KeyFooter
from cuda_llm.app.widgets.kernel import KernelPane
from cuda_llm.app.widgets.status import StatusLine
from cuda_llm.app.widgets.telemetry import TelemetryBar
from cuda_llm.engine.fsr.control import Controller
from cuda_llm.engine.fsr.session import Session
from cuda_llm.engine.llm.manual_provider import ManualProvider
from cuda_llm.engine.llm.spec import person_writes

# The panes as (id, title), in their keys' order: read from the registry, for whoever iterates them.
PANES: tuple[tuple[str, str], ...] = tuple((p.id, p.title) for p in panes())


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
        # The panes' keys (1-7) are the registry's: RunScreen.registered_bindings.
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
    ACTION_HELP: ClassVar[dict[str, str]] = dialogs.ACTION_HELP

    @classmethod
    def registered_bindings(cls) -> list[Binding]:
        """The panes' keys, from the registry (app/keys.py lists them with BINDINGS)."""
        return registered_keys()

    def __init__(self, request: SessionRequest, autostart: bool = True) -> None:
        """`autostart` False: show the view without running a session (tests feed it events)."""
        super().__init__()
        self.request = request
        self.autostart = autostart
        self.view = SessionView(manual=person_writes(request.options.model))
        self.control = Controller(auto_accept=request.auto_accept, stop_when_paused=False)
        self.session: Session | None = None
        self.worker: Worker[None] | None = None
        self.server = ""  # the model's server, for the settings dialog
        self.pause_requested = False
        self.editing = False  # the person is in an editor: a second edit waits
        self.allowed_now: tuple[object, ...] = ()  # what the footer's keys were last built for
        self.pane_specs = panes()  # read once: the registry as it stands when the screen is made
        self.arrangement = PaneLayout(self.pane_specs)
        self.panes: dict[str, Widget] = {}
        self.lines: dict[str, Widget] = {}  # the status line and the telemetry bar, once composed
        self.search_term = ""
        self.draft: Draft | None = None  # an edit kept from before, offered by `e`
        for binding in pane_bindings(self.pane_specs):
            self._bindings.key_to_bindings.setdefault(binding.key, []).append(binding)

    @property
    def active_pane(self) -> str:
        return self.arrangement.active

    @property
    def layout_mode(self) -> str:
        return self.arrangement.mode

    # ---- composing, laying out -----------------------------------------------------------------
    def compose(self) -> ComposeResult:
        telemetry = TelemetryBar(id="telemetry")
        yield telemetry
        # Each tab names the key that shows it (the config may have moved it).
        keys = {p.id: key_of(self, f"pane({p.id!r})") for p in self.pane_specs}
        tabs = Tabs(*(Tab(f"{keys[p.id]} {p.title}", id=f"tab-{p.id}") for p in self.pane_specs), id="pane-tabs")
        tabs.can_focus = False  # the keys and Tab move between panes; the tabs only name them
        yield tabs
        self.panes = {}
        for p in in_grid_order(self.pane_specs):
            widget = self.panes[p.id] = p.make(self.view)
            p.name_key(widget, keys[p.id])  # as the tabs do
        with Container(id="run-body"):
            yield from self.panes.values()
        yield Input(
            placeholder="search the focused pane: Enter finds, n / N next / previous, Esc closes",
            id="pane-search",
            compact=True,
        )
        self.lines = {"status": StatusLine(id="status"), "telemetry": telemetry}
        yield self.lines["status"]
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#pane-search", Input).display = False
        self.arrangement.prepare(self.query_one("#run-body"), self.panes)
        self.arrangement.mode = layout_for(self.app.size)
        self.apply_layout()
        bar = self.query_one(TelemetryBar)
        bar.set_sample(getattr(self.app, "telemetry_sample", None))
        bar.set_context(status.bar_context(self))
        self.update_status()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._on_theme())
        if self.worker is None and self.autostart:
            self.worker = worker.start(self)
        # What exists once this screen is drawn lives as long as it: keep full collections from
        # walking it on every later frame (app/long_lived.py).
        self.call_after_refresh(freeze_long_lived)

    def on_unmount(self) -> None:
        thaw_long_lived()  # what this screen froze can be collected once it is gone

    def apply_layout(self) -> None:
        self.arrangement.apply(self.query_one("#pane-tabs"), self.query_one("#run-body"), self.panes)

    def _check_layout(self, size: Size) -> None:
        mode = layout_for(size)
        if mode != self.arrangement.mode:
            self.arrangement.mode = mode
            self.apply_layout()

    def on_resize(self, event: events.Resize) -> None:
        self._check_layout(event.size)

    def on_screen_resume(self) -> None:
        self._check_layout(self.app.size)  # the terminal may have been resized under a dialog

    def _on_theme(self) -> None:
        retheme(self.pane_specs, self.panes)
        self.update_status()

    def redraw(self, changed: set[str]) -> None:
        """Redraw what `changed` names: the panes through the registry, and the lines around them."""
        if not changed or not self.is_mounted:
            return
        redraw(self.pane_specs, self.panes, changed)
        if STATUS in changed or TREE in changed:
            self.update_status()
        if STATUS in changed:
            status.update_context(self)

    def update_status(self) -> None:
        status.update(self)

    def keys(self) -> dict[str, str]:
        return status.keys(self)

    # ---- panes and focus -------------------------------------------------------------------------
    def show_pane(self, pane: str) -> None:
        if pane not in self.panes:
            return
        if self.arrangement.activate(pane):
            self.apply_layout()
        tabs = self.query_one("#pane-tabs", Tabs)
        if tabs.active != f"tab-{pane}":
            tabs.active = f"tab-{pane}"

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """A click (or the Tab key) moved the focus: the pane it is in becomes the active one."""
        pane = following.pane_of(self, event.widget)
        if pane is not None and pane != self.active_pane:
            self.show_pane(pane)

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        event.stop()
        pane = (event.tab.id or "").removeprefix("tab-")
        if pane in self.panes and pane != self.active_pane:
            self.action_pane(pane)

    def action_pane(self, pane: str) -> None:
        """Show a pane (its tab, below 140x40) and put the focus in it, in any layout."""
        self.show_pane(pane)
        following.focus_pane(self, pane)

    def action_next_pane(self) -> None:
        self.action_pane(self.arrangement.step(self.active_pane, 1))

    def action_previous_pane(self) -> None:
        self.action_pane(self.arrangement.step(self.active_pane, -1))

    def action_wrap(self) -> None:
        following.wrap(self)

    def action_motion(self, step: int) -> None:
        following.motion(self, step)

    def action_maximize_pane(self) -> None:
        following.maximize(self)

    # ---- search ---------------------------------------------------------------------------------
    def action_filter(self) -> None:
        search.open_filter(self)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        search.submitted(self, event)

    def on_key(self, event: events.Key) -> None:
        search.key(self, event)

    def action_search(self, step: int, from_top: bool = False) -> None:
        search.step(self, step, from_top)

    def action_back(self) -> None:
        """Esc: end a search of the focused pane; else, once the session has ended, back to the start screen."""
        if not search.end(self) and not self.view.running:
            self.dismiss(None)

    # ---- the session -----------------------------------------------------------------------------
    @property
    def session_running(self) -> bool:
        return worker.running(self)

    def request_stop(self) -> None:
        worker.request_stop(self)

    def force_stop(self) -> None:
        worker.force_stop(self)

    async def shutdown(self, grace_s: float = worker.STOP_GRACE_S) -> None:
        await worker.shutdown(self, grace_s)

    def manual_provider(self) -> ManualProvider | None:
        return worker.manual_provider(self)

    def note_last_session(self) -> None:
        worker.note_last_session(self)

    @property
    def quitting(self) -> bool:
        """Quit was asked for: leave once the session has stopped (the status line says which key forces it)."""
        return self.view.quitting

    @quitting.setter
    def quitting(self, value: bool) -> None:
        self.view.quitting = value

    # ---- messages from the worker and the panes ---------------------------------------------------
    def on_session_opened(self, message: SessionOpened) -> None:
        session_events.opened(self, message)

    def on_engine_event(self, message: EngineEvent) -> None:
        session_events.engine_event(self, message)

    def on_tokens_arrived(self, message: TokensArrived) -> None:
        session_events.tokens(self, message)

    def on_session_ended(self, message: SessionEnded) -> None:
        session_events.ended(self, message)

    def on_session_error(self, message: SessionError) -> None:
        session_events.failed(self, message)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        session_events.worker_changed(self, event)

    def on_jump_to_line(self, message: JumpToLine) -> None:
        message.stop()
        for pane_id, pane in self.panes.items():
            if isinstance(pane, KernelPane):
                self.show_pane(pane_id)
                pane.jump_to(message.line, message.column)

    def on_candidate_chosen(self, message: CandidateChosen) -> None:
        message.stop()
        following.choose(self, message.label)

    # ---- actions ---------------------------------------------------------------------------------
    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        return letters_first(super().active_bindings)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return decisions.allowed(self, action)

    def action_help(self) -> None:
        dialogs.show_help(self)

    def action_explain(self, what: str) -> None:
        decisions.explain(self, what)

    def action_accept(self) -> None:
        decisions.accept(self)

    def action_reject(self) -> None:
        decisions.reject(self)

    def action_counters(self) -> None:
        dialogs.counters(self)

    def action_edit(self) -> None:
        edits.edit(self)

    def action_pause(self) -> None:
        decisions.pause(self)

    def action_resume(self) -> None:
        decisions.resume(self)

    def action_cancel_pause(self) -> None:
        decisions.resume(self)

    def action_auto_accept(self) -> None:
        decisions.auto_accept(self)

    def action_settings(self) -> None:
        dialogs.settings(self)

    def action_stop(self) -> None:
        decisions.stop(self)

    async def action_quit(self) -> None:
        await self.app.action_quit()

    def action_follow(self) -> None:
        following.follow(self)

    def action_unfollow(self) -> None:
        following.unfollow(self)

    def action_table(self) -> None:
        following.table(self)

    def action_copy(self, with_plan: bool = False) -> None:
        taking.copy(self, with_plan)

    def action_save(self) -> None:
        taking.save(self)

    def action_mark(self) -> None:
        taking.mark(self)

    def action_diff(self) -> None:
        taking.diff(self)
