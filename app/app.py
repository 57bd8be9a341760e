"""The Textual application: themes, the remembered config, GPU telemetry polling, the command
palette, and the two screens (start, run)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shlex
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, CSSPathType, SystemCommand
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.filter import LineFilter
from textual.notifications import SeverityLevel
from textual.screen import Screen

from cuda_llm.app.config import AppConfig, load_config, save_state
from cuda_llm.app.history import MessageHistory
from cuda_llm.app.keys import binding_ids, check_keymap, help_rows, key_conflicts
from cuda_llm.app.messages import TelemetryRead
from cuda_llm.app.options import Defaults, SessionRequest
from cuda_llm.app.running import RunningSessions
from cuda_llm.app.widgets.telemetry import (
    NO_NVML,
    ON_CLUSTER,
    NvmlSampler,
    TelemetryBar,
    TelemetrySampler,
    telemetry_gpu,
)
from cuda_llm.app.widgets.text import OutsideTextFilter
from cuda_llm.engine.core.secrets import secrets_hidden
from cuda_llm.themes import COLORS_TCSS, DEFAULT_THEME, THEME_TITLES, THEMES, VARIABLE_DEFAULTS

if TYPE_CHECKING:
    # Annotations only: the session, the judge and the task library load when a session opens, after
    # the first frame (docs/performance.md, "Start-up").
    from cuda_llm.engine.fsr.session import SessionOptions
    from cuda_llm.engine.gpu.telemetry import TelemetrySample
    from cuda_llm.engine.judge.judge_environment import JudgeEnvironment
    from cuda_llm.engine.task import TaskLibrary

APP_TCSS = Path(__file__).parent / "app.tcss"
# NVML reads take well under a millisecond; once a second is what nvidia-smi -l shows.
TELEMETRY_INTERVAL_S = 1.0

EnvironmentFactory = Callable[["SessionOptions"], Awaitable["JudgeEnvironment | None"]]
OllamaLister = Callable[[str | None], Awaitable[list[str]]]


async def list_ollama_models(host: str | None) -> list[str]:
    """The models an ollama server offers; raises ModelError when it cannot be reached."""
    from cuda_llm.engine.llm.ollama_provider import OllamaProvider

    # Building the provider imports its client library (most of a second of CPU on a small machine):
    # in a thread, so the screen keeps drawing and answering keys meanwhile.
    provider = await asyncio.to_thread(OllamaProvider, "probe", host=host)
    try:
        return await provider.list_models()
    finally:
        await provider.close()


class CudaLlmApp(App[int]):
    CSS_PATH: ClassVar[CSSPathType] = [APP_TCSS, COLORS_TCSS]
    TITLE = "cuda-llm"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "next_theme", "Theme", show=False, priority=True, id="app.theme"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="app.quit"),
        # Ctrl-C is what people press to stop a terminal program: stop the session cleanly (requests
        # in flight are cancelled, what is recorded stays; `--resume` continues) and quit; pressed
        # again, quit at once. Not a priority binding, so inside an editor it keeps its copy meaning.
        Binding("ctrl+c", "quit", "Quit", show=False),
        # Every toast, warning and error of this run, with its time (they fade after seconds).
        Binding("M", "messages", "Messages", show=False, id="app.messages"),
        Binding("f12", "messages", "Messages", show=False, priority=True),
        # Ctrl-Z puts cuda-llm in the background as in any terminal program (fg brings it back). Not
        # a priority binding: in the editor it keeps its undo meaning.
        Binding("ctrl+z", "suspend_process", "Suspend", show=False, id="app.suspend"),
    ]

    def __init__(
        self,
        defaults: Defaults | None = None,
        start: SessionRequest | None = None,
        *,
        config_path: Path | None = None,
        config_overrides: dict[str, Any] | None = None,
        environment_factory: EnvironmentFactory | None = None,
        telemetry: TelemetrySampler | None = None,
        poll_telemetry: bool = True,
        library: TaskLibrary | None = None,
        ollama_lister: OllamaLister | None = None,
    ) -> None:
        """`environment_factory` replaces the judge environment a session would open (tests pass
        one with a fake GPU); `telemetry` replaces the NVML sampler (None with poll_telemetry
        False: no telemetry at all, as in snapshot tests)."""
        super().__init__()
        self.defaults = defaults or Defaults()
        self.start_request = start
        self.config_path = config_path
        loaded = load_config(config_path)
        self.config: AppConfig = dataclasses.replace(loaded.config, **(config_overrides or {}))
        self.config_warning = loaded.warning
        if self.defaults.cluster is None and self.config.cluster:  # --cluster wins over the config file
            self.defaults = dataclasses.replace(self.defaults, cluster=self.config.cluster)
        self.environment_factory = environment_factory
        self.sampler: TelemetrySampler | None = telemetry
        local_gpu = telemetry_gpu(self.defaults.gpu, self.defaults.cluster)
        if telemetry is None and poll_telemetry and local_gpu is not None:
            self.sampler = NvmlSampler(local_gpu)
        self.telemetry_absent = ON_CLUSTER if self.defaults.cluster else NO_NVML
        self.telemetry_sample: TelemetrySample | None = None
        self._outside_text = OutsideTextFilter()
        # The sessions this app runs: recorded as stopped, never left running, if the app crashes.
        self.running_sessions = RunningSessions()
        self._quit_asked = False
        self.keymap: dict[str, str] = {}  # the config's [keys] table, as applied
        self.messages = MessageHistory()  # every notification, kept (the toasts fade)
        # The session the app ran last, and how it stood when the app left: the quit line (app/main.py).
        self.last_session: tuple[int, str, str | None] | None = None  # (id, state, database)
        self.library = library
        self.ollama_lister = ollama_lister or list_ollama_models
        for theme in THEMES:
            self.register_theme(theme)
        self.theme = self.config.theme if self.config.theme in self.available_themes else DEFAULT_THEME

    def get_line_filters(self) -> Sequence[LineFilter]:
        # Outside text (replies, logs, server errors) never reaches the terminal raw: app/widgets/text.py.
        return [*super().get_line_filters(), self._outside_text]

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return {**super().get_theme_variable_defaults(), **VARIABLE_DEFAULTS}

    def on_mount(self) -> None:
        from cuda_llm.app.screens.start import StartScreen

        if self.config.keys:
            # The run screen and the editor are imported only when needed: most of the app's imports
            # are theirs, and the start screen's first frame does not wait for them.
            from cuda_llm.app.screens.modals import EditScreen
            from cuda_llm.app.screens.run import RunScreen

            screens: list[type[DOMNode]] = [type(self), StartScreen, RunScreen, EditScreen, *screen_pane_classes()]
            known = binding_ids(screens)
            self.keymap, problem = check_keymap(dict(self.config.keys), known)
            self.set_keymap(self.keymap)
            for line in [problem, *key_conflicts(screens, self.keymap)]:
                if line:
                    self.notify(line, severity="warning", timeout=15, markup=False)
        self.push_screen(StartScreen(self.defaults, self.config))
        if self.start_request is not None:
            from cuda_llm.app.screens.run import RunScreen

            self.push_screen(RunScreen(self.start_request))
        if self.config_warning:
            self.notify(self.config_warning, severity="warning", timeout=10, markup=False)
        if self.sampler is not None:
            self.poll_telemetry()
            self.set_interval(TELEMETRY_INTERVAL_S, self.poll_telemetry)
        # A process of its own (some 0.15 s of CPU to start): not while the first frame is drawn.
        self.call_after_refresh(self.start_resource_tracker)

    def start_resource_tracker(self) -> None:
        """The compiler pool starts spawn processes, and the first one starts multiprocessing's
        resource tracker, which inherits stderr. Once Textual runs, stderr is its capture object (no
        usable file descriptor), so the tracker is started by the app, with the real one, and without
        the model server's key in its environment (engine/core/secrets.py): after the first frame, and
        before any session opens (open_environment), whichever comes first. Idempotent."""
        from multiprocessing import resource_tracker

        with secrets_hidden(), contextlib.redirect_stderr(sys.__stderr__ or sys.stderr):
            resource_tracker.ensure_running()

    async def open_environment(self, options: SessionOptions) -> JudgeEnvironment | None:
        """The judge environment for a new session: None lets the engine open the real one."""
        self.start_resource_tracker()  # before the session's compiler pool starts its processes
        if self.environment_factory is None:
            return None
        return await self.environment_factory(options)

    # ---- config and themes -----------------------------------------------------------------------
    def remember(self, **changes: Any) -> None:
        """Keep a choice for next time, in the app's state file (the user's config is never written)."""
        self.config = dataclasses.replace(self.config, **changes)
        problem = save_state(self.config, self.config_path)
        if problem:
            self.notify(problem, severity="warning", markup=False)

    def watch_theme(self, theme: str) -> None:
        if self.is_running and theme != self.config.theme:
            self.remember(theme=theme)

    def action_next_theme(self) -> None:
        names = [t.name for t in THEMES]
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]
        self.notify(f"theme: {THEME_TITLES.get(self.theme, self.theme)}", timeout=2)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """A toast, and a line in the message history (M) that stays after it fades."""
        self.messages.add(message, severity, markup=markup)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def action_messages(self) -> None:
        from cuda_llm.app.screens.modals import MessagesScreen

        if not isinstance(self.screen, MessagesScreen):
            self.push_screen(MessagesScreen(self.messages))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        # Textual's own Quit leaves at once; ours (q, below) stops the session first: one Quit, not two.
        yield from (c for c in super().get_system_commands(screen) if c.title != "Quit")
        yield SystemCommand("Messages (M)", "every notification of this run, with its time", self.action_messages)
        for name, title in THEME_TITLES.items():
            yield SystemCommand(
                f"Theme: {title}", f"switch to the {title} theme (remembered)", partial(self._use, name)
            )
        # The screen's actions that apply now, one entry each, with the keys they are on.
        helps: dict[str, str] = getattr(screen, "ACTION_HELP", {})
        for keys, description, _what, _ids in help_rows(
            screen, helps, skip=("pane", "next_pane", "previous_pane", "explain")
        ):
            action = next(b.action for b in screen.BINDINGS if isinstance(b, Binding) and b.description == description)
            name = action.partition("(")[0]
            if screen.check_action(name, ()) is not True:
                continue
            yield SystemCommand(
                f"{description} ({keys})", helps.get(name, description), partial(screen.run_action, action)
            )

    def _use(self, theme: str) -> None:
        self.theme = theme

    # ---- telemetry ---------------------------------------------------------------------------------
    def poll_telemetry(self) -> None:
        self.run_worker(self._read_telemetry, thread=True, group="telemetry", exclusive=True, exit_on_error=False)

    def _read_telemetry(self) -> None:  # in a thread: NVML calls block
        sampler = self.sampler
        try:
            sample = sampler() if sampler is not None else None
        except Exception:
            sample = None
        self.post_message(TelemetryRead(sample))

    def on_telemetry_read(self, message: TelemetryRead) -> None:
        self.telemetry_sample = message.sample
        # The sampler's thread can post after the last screen went (the app leaving) or before the
        # first is up: the sample is kept, and the bar that comes up shows it.
        if not self.screen_stack:
            return
        for bar in self.screen.query(TelemetryBar):
            bar.set_sample(message.sample)

    # ---- leaving ---------------------------------------------------------------------------------
    async def action_quit(self) -> None:
        """q, Ctrl+Q or Ctrl+C. With a session running: stop it (requests in flight are cancelled,
        what is recorded stays) and quit as soon as it has stopped, saying so at once; pressed
        again, quit now. With none: quit."""
        from cuda_llm.app.screens.modals import EditScreen
        from cuda_llm.app.screens.run import RunScreen

        unsaved = [s for s in self.screen_stack if isinstance(s, EditScreen) and s.changed]
        if unsaved and not self._quit_asked:
            # Every way out of the editor with unsaved text asks first (Esc does; Ctrl+Q and Ctrl+C too).
            unsaved[-1].ask_before_quit()
            return
        running = [s for s in self.screen_stack if isinstance(s, RunScreen) and s.session_running]
        if running and not self._quit_asked:
            self._quit_asked = True
            for screen in running:
                screen.quitting = True
                screen.request_stop()
            self.notify("stopping the session, then quitting · press q again to quit at once", timeout=10)
            return
        for open_screen in list(self.screen_stack):
            if isinstance(open_screen, RunScreen):
                await open_screen.shutdown(grace_s=0.0 if self._quit_asked else 3.0)
        self.exit(0)

    def quit_line(self) -> str | None:
        """What the terminal keeps after the app leaves (any way out): the session, how it stands, and
        the command that resumes it. None when no session was opened."""
        from cuda_llm.app.screens.run import RunScreen

        for screen in reversed(self.screen_stack):
            if isinstance(screen, RunScreen):
                screen.note_last_session()
                break
        if self.last_session is None:
            return None
        session_id, state, db = self.last_session
        argv = ["cuda-llm", "run", "--resume", str(session_id)]
        if db:  # a database other than the default one
            argv += ["--db", db]
        return f"cuda-llm: session {session_id} {state}; resume it with: {shlex.join(argv)}"

    def _handle_exception(self, error: Exception) -> None:
        # Whatever went wrong in the UI, the sessions it runs are recorded as stopped by the crash
        # (the start screen says so next time), never left marked running.
        self.running_sessions.crashed(error)
        super()._handle_exception(error)


def screen_pane_classes() -> list[type]:
    """The panes with bindings of their own (ids in the config's [keys] table)."""
    from cuda_llm.app.panes.registry import panes

    return [p.widget for p in panes() if isinstance(p.widget, type) and "BINDINGS" in vars(p.widget)]
