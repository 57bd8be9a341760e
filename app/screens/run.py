"""The run screen: one FSR session, live.

The session runs in an async worker on the app's event loop; the engine's events reach the panes
as messages (app.messages), folded into the session view (app.state) first. Decisions go back
through the engine's Controller. Nothing here waits on the GPU or the network: every engine call
is awaited inside the worker, and a fault in a candidate, the model or the GPU arrives as an event
or an error line, never as an exception in the UI.

Layout: at 140x40 and above the panes sit side by side; below that they collapse into tabs (the
screen recomposes, and the panes redraw from the view).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import ClassVar

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Footer, TabbedContent, TabPane
from textual.worker import Worker

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
from cuda_llm.app.screens.modals import (
    EditResult,
    EditScreen,
    HelpScreen,
    RejectScreen,
    SettingsChange,
    SettingsScreen,
    compose_reply,
)
from cuda_llm.app.state import (
    COMPILER,
    KERNEL,
    LATENCY,
    LOG,
    PROMPT,
    STATUS,
    TREE,
    VALIDATION,
    SessionView,
)
from cuda_llm.app.widgets.candidates import CandidateTree
from cuda_llm.app.widgets.compiler import CompilerPane
from cuda_llm.app.widgets.eventlog import EventLog
from cuda_llm.app.widgets.kernel import KernelPane, source_of
from cuda_llm.app.widgets.latency import LatencyPane
from cuda_llm.app.widgets.prompt import PromptPane
from cuda_llm.app.widgets.status import StatusLine
from cuda_llm.app.widgets.telemetry import TelemetryBar
from cuda_llm.app.widgets.text import set_text
from cuda_llm.app.widgets.validation import ValidationPane
from cuda_llm.engine.errors import UserError
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.control import Controller
from cuda_llm.engine.fsr.loop import candidate_label
from cuda_llm.engine.fsr.session import Session, open_session
from cuda_llm.engine.llm.manual_provider import ManualProvider, is_manual_spec

WIDE = Size(140, 40)  # at least this many columns and rows: panes side by side
TABS = (
    ("tab-prompt", "Prompt"),
    ("tab-kernel", "Kernel"),
    ("tab-compiler", "Compiler"),
    ("tab-validation", "Validation"),
    ("tab-latency", "Latency"),
    ("tab-candidates", "Candidates"),
    ("tab-log", "Log"),
)


def layout_for(size: Size) -> str:
    return "wide" if size.width >= WIDE.width and size.height >= WIDE.height else "narrow"


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return text if isinstance(exc, UserError) else f"{type(exc).__name__}: {text}"


class RunScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help", priority=True),
        Binding("f2", "accept", "Accept", priority=True),
        Binding("f3", "reject", "Reject", priority=True),
        Binding("f4", "edit", "Edit", priority=True),
        Binding("f5", "pause", "Pause", priority=True),
        Binding("f6", "auto_accept", "Auto", priority=True),
        Binding("f7", "settings", "N/D", priority=True),
        Binding("f8", "stop", "Stop", priority=True),
        Binding("f9", "follow", "Follow", priority=True),
        Binding("escape", "back", "Back", priority=True),
        *(Binding(str(i + 1), f"tab('{tab}')", title, show=False) for i, (tab, title) in enumerate(TABS)),
    ]
    ACTION_HELP: ClassVar[dict[str, str]] = {
        "help": "this list",
        "accept": "make the round's winner the new best",
        "reject": "drop the winner; the reason goes into the next prompt",
        "edit": "edit the shown kernel (or write one in manual mode) and submit it through the three checks",
        "pause": "pause before the next round, or resume",
        "auto_accept": "accept every round's winner without asking",
        "settings": "change N, D or the model from the next round on",
        "stop": "stop after the work in flight is recorded",
        "follow": "show whatever happens next (after picking a candidate in the tree)",
        "back": "back to the start screen (when the session has ended)",
    }

    def __init__(self, request: SessionRequest, autostart: bool = True) -> None:
        """`autostart` False: show the view without running a session (tests feed it events)."""
        super().__init__()
        self.request = request
        self.autostart = autostart
        self.view = SessionView(manual=is_manual_spec(request.options.model))
        self.control = Controller(auto_accept=request.auto_accept, stop_when_paused=False)
        self.session: Session | None = None
        self.worker: Worker | None = None
        self.pause_requested = False
        self._allowed: tuple[object, ...] = ()
        self.layout_mode = "narrow"
        with contextlib.suppress(Exception):  # no app yet when built outside one
            self.layout_mode = layout_for(self.app.size)

    # ---- layout --------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        view = self.view
        yield TelemetryBar(id="telemetry")
        panes = {
            "tab-prompt": PromptPane(view, id="prompt-pane", classes="pane"),
            "tab-kernel": KernelPane(view, id="kernel-pane", classes="pane"),
            "tab-compiler": CompilerPane(view, id="compiler-pane", classes="pane"),
            "tab-validation": ValidationPane(view, id="validation-pane", classes="pane"),
            "tab-latency": LatencyPane(view, id="latency-pane", classes="pane"),
            "tab-candidates": CandidateTree(view, id="candidates", classes="pane"),
            "tab-log": EventLog(view, id="event-log", classes="pane"),
        }
        if self.layout_mode == "wide":
            with Horizontal(id="run-body"):
                with Vertical(id="run-side"):
                    yield panes["tab-candidates"]
                    yield panes["tab-log"]
                with Vertical(id="run-main"):
                    with Horizontal(id="run-top"):
                        yield panes["tab-prompt"]
                        yield panes["tab-kernel"]
                    with Horizontal(id="run-bottom"):
                        yield panes["tab-compiler"]
                        yield panes["tab-validation"]
                        yield panes["tab-latency"]
        else:
            with TabbedContent(id="run-tabs"):
                for tab, title in TABS:
                    with TabPane(title, id=tab):
                        yield panes[tab]
        yield StatusLine(id="status")
        yield Footer(compact=True)

    def _set_layout_classes(self) -> None:
        self.set_class(self.layout_mode == "wide", "-wide")
        self.set_class(self.layout_mode != "wide", "-narrow")

    async def on_resize(self, event: events.Resize) -> None:
        mode = layout_for(event.size)
        if mode != self.layout_mode:
            self.layout_mode = mode
            self._set_layout_classes()
            await self.recompose()  # the panes redraw from the view as they mount
            self._after_compose()

    def on_mount(self) -> None:
        self._set_layout_classes()
        self._after_compose()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._on_theme())
        if self.worker is None and self.autostart:
            self.worker = self.run_session()

    def _after_compose(self) -> None:
        bar = self.query_one(TelemetryBar)
        bar.set_sample(getattr(self.app, "telemetry_sample", None))
        bar.set_context(self._bar_context())
        self._update_status()

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
        for pane in self.query(LatencyPane):
            pane.apply_theme()
        self._refresh({TREE})

    # ---- the session worker --------------------------------------------------------------------
    @work(exclusive=True, group="session", exit_on_error=False, name="session")
    async def run_session(self) -> None:
        options = self.request.options
        env = None
        try:
            env = await self.app.open_environment(options)  # type: ignore[attr-defined]
            session = await open_session(options, self.control, environment=env)
        except Exception as exc:
            if env is not None:
                with contextlib.suppress(Exception):
                    await env.close()
            self.post_message(SessionError(one_line(exc)))
            return
        self.session = session
        session.bus.subscribe(self._relay)
        manual = isinstance(session.provider, ManualProvider)
        self.post_message(
            SessionOpened(session.id, session.task.name, session.provider.spec, session.env.notice, manual)
        )
        try:
            result = await session.run()
        except Exception as exc:  # the loop recorded it and emitted Failed; say it, keep the app
            self.post_message(SessionError(one_line(exc)))
        else:
            self.post_message(SessionEnded(result.status, result.reason))
        finally:
            with contextlib.suppress(Exception):
                await session.close()

    def _relay(self, event: ev.Event) -> None:
        """The engine's subscriber: runs inside the loop's emit, so it only posts."""
        if isinstance(event, ev.TokensStreamed):
            self.post_message(TokensArrived(event.label, event.text))
        else:
            self.post_message(EngineEvent(event))

    async def shutdown(self, grace_s: float = 3.0) -> None:
        """Stop the session, give it `grace_s` to record what is in flight, then cancel it."""
        self.control.stop()
        manual = self.manual_provider()
        if manual is not None:
            manual.cancel_all()
        worker = self.worker
        if worker is None or worker.is_finished:
            return
        with contextlib.suppress(Exception):
            await _wait_for(worker, grace_s)
        if not worker.is_finished:
            worker.cancel()
            with contextlib.suppress(Exception):
                await _wait_for(worker, grace_s)

    def manual_provider(self) -> ManualProvider | None:
        provider = self.session.loop.provider if self.session is not None else None
        return provider if isinstance(provider, ManualProvider) else None

    def manual_waiting(self) -> list[str]:
        manual = self.manual_provider()
        return [candidate_label(k) for k in manual.waiting()] if manual is not None else []

    # ---- messages from the worker ----------------------------------------------------------------
    def on_session_opened(self, message: SessionOpened) -> None:
        self.view.session_id = message.session_id
        self.view.task, self.view.model = message.task, message.model
        self.view.manual = message.manual
        if message.notice:
            self.view.notice = message.notice
            self.view.log.append(message.notice)
        self._refresh({STATUS, LOG, TREE})

    def on_engine_event(self, message: EngineEvent) -> None:
        changed = self.view.apply(message.event)
        if isinstance(message.event, ev.SessionPaused | ev.SessionResumed):
            self.pause_requested = False
        self._refresh(changed)

    def on_tokens_arrived(self, message: TokensArrived) -> None:
        first = self.view.add_tokens(message.label, message.text)
        for pane in self.query(PromptPane):
            pane.append(message.label, message.text)
        if first:
            self._refresh({TREE, STATUS})

    def on_session_ended(self, message: SessionEnded) -> None:
        self._refresh(self.view.ended(message.status, message.reason) | {LOG})

    def on_session_error(self, message: SessionError) -> None:
        self._refresh(self.view.failed(message.message))

    def on_jump_to_line(self, message: JumpToLine) -> None:
        message.stop()
        for tabs in self.query("#run-tabs").results(TabbedContent):
            tabs.active = "tab-kernel"
        self.query_one(KernelPane).jump_to(message.line, message.column)

    def on_candidate_chosen(self, message: CandidateChosen) -> None:
        message.stop()
        self._refresh(self.view.set_focus(message.label, by_person=True) | {TREE})

    def _refresh(self, changed: set[str]) -> None:
        if not changed or not self.is_mounted:
            return
        panes = (
            (TREE, CandidateTree),
            (PROMPT, PromptPane),
            (KERNEL, KernelPane),
            (COMPILER, CompilerPane),
            (VALIDATION, ValidationPane),
            (LATENCY, LatencyPane),
            (LOG, EventLog),
        )
        for flag, cls in panes:
            if flag in changed:
                for pane in self.query(cls):
                    pane.show()
        if STATUS in changed or TREE in changed:
            self._update_status()
        if STATUS in changed:
            for bar in self.query(TelemetryBar):
                bar.set_context(self._bar_context())

    def _update_status(self) -> None:
        for line in self.query(StatusLine):
            line.show(self.view, self.control.auto_accept, self.manual_waiting())
            if self.pause_requested and self.view.state == "running":
                set_text(line, "‖ pause requested: the loop pauses before its next round (F5 cancels)")
        # The footer is rebuilt on every refresh_bindings(): only when what is allowed changed.
        allowed = (self.view.state, self.view.awaiting is not None, self.view.follow, self.view.manual)
        if allowed != self._allowed:
            self._allowed = allowed
            self.refresh_bindings()

    # ---- actions ---------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        view = self.view
        running = view.running
        if action in ("accept", "reject"):
            return view.awaiting is not None
        if action == "edit":
            return True if running and view.state != "opening" else None
        if action in ("pause", "stop", "settings"):
            return running and view.state != "opening"
        if action == "auto_accept":
            return running and not view.manual
        if action == "follow":
            return not view.follow
        if action == "back":
            return not running
        return True

    def action_help(self) -> None:
        rows = []
        for b in self.BINDINGS:
            if isinstance(b, Binding) and b.show:
                rows.append(
                    (
                        b.key.upper() if b.key.startswith("f") else b.key,
                        b.description,
                        self.ACTION_HELP.get(b.action, ""),
                    )
                )
        rows.append(("1-7", "tabs", "show a pane (when they are tabs: below 140x40)"))
        rows.append(("ctrl+t", "theme", "next theme (dark, light, high contrast); remembered"))
        rows.append(("ctrl+p", "palette", "every action, searchable"))
        rows.append(("ctrl+q", "quit", "stop the session (it can be resumed) and quit"))
        self.app.push_screen(HelpScreen("Run screen keys", rows))

    def action_tab(self, tab: str) -> None:
        for tabs in self.query("#run-tabs").results(TabbedContent):
            tabs.active = tab

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

    def action_edit(self) -> None:
        manual = self.manual_provider()
        best = self.view.best_source()
        if manual is not None and manual.waiting():
            key = manual.waiting()[0]
            label = candidate_label(key)
            source, plan = source_of(None, best)

            def written(result: EditResult | None) -> None:
                if result is not None:
                    manual.provide(key, compose_reply(result.source, result.plan_json))

            self.app.push_screen(EditScreen(f"Write {label} (round {key.round})", source, plan), written)
            return
        c = self.view.focused()
        source, plan = source_of(c, best)
        label = c.label if c is not None else (best.label if best is not None else "")
        if not source:
            self.notify("no kernel to edit yet", severity="warning")
            return

        def edited(result: EditResult | None) -> None:
            if result is not None:
                self.control.submit_edit(result.source, result.plan_json, based_on=label)
                self.view.log.append(
                    f"your edit of {label} was submitted: it is judged now if a decision is pending, "
                    "else at the end of the round"
                )
                self._refresh({LOG})

        self.app.push_screen(EditScreen(f"Edit {label}", source, plan), edited)

    def action_pause(self) -> None:
        if self.control.paused or self.view.state == "paused":
            self.pause_requested = False
            self.control.resume()
        else:
            self.pause_requested = True
            self.control.pause()
        self._update_status()

    def action_auto_accept(self) -> None:
        self.control.set_auto_accept(not self.control.auto_accept)
        self.view.log.append(f"auto-accept {'on' if self.control.auto_accept else 'off'}")
        self._refresh({STATUS, LOG})

    def action_settings(self) -> None:
        settings = self.view.settings
        n = settings.candidates if settings else 4
        d = settings.rounds if settings else 5

        def changed(change: SettingsChange | None) -> None:
            if change is None:
                return
            if change.candidates is not None:
                self.control.set_candidates(change.candidates)
            if change.rounds is not None:
                self.control.set_rounds(change.rounds)
            if change.model is not None:
                self.control.set_model(change.model)
            if change != SettingsChange():
                self.view.log.append("settings change requested: it takes effect at the next round")
                self._refresh({LOG})

        self.app.push_screen(SettingsScreen(n, d, self.view.model), changed)

    def action_stop(self) -> None:
        self.control.stop()
        manual = self.manual_provider()
        if manual is not None:
            manual.cancel_all("stopped by the person")
        self.view.log.append("stop requested: the work in flight is recorded first")
        self._refresh({LOG, STATUS})

    def action_follow(self) -> None:
        self.view.follow = True
        latest = next(reversed(self.view.candidates), None)
        self._refresh(self.view.set_focus(latest) | {TREE, STATUS})

    def action_back(self) -> None:
        if not self.view.running:
            self.dismiss(None)


async def _wait_for(worker: Worker, timeout_s: float) -> None:
    await asyncio.wait_for(worker.wait(), timeout_s)
