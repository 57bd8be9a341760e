"""The start screen: pick a task and a model (ollama's models when its server answers, the config's
endpoints, stored sessions to replay, or manual), N, D and the stop rules; or resume a stored session.
The last choices come back next time (app.config)."""

from __future__ import annotations

import time
from typing import ClassVar

from textual import events, work
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.screen import ModalScreen, Screen
from textual.widgets import (
    Button,
    Checkbox,
    DataTable,
    Input,
    Label,
    OptionList,
    Static,
    TabbedContent,
    TabPane,
)
from textual.widgets.option_list import Option

from cuda_llm.app.catalog import Catalog, TaskRow, load_catalog, load_tasks
from cuda_llm.app.config import AppConfig
from cuda_llm.app.keys import help_rows, letters_first
from cuda_llm.app.knob_fields import knob_value
from cuda_llm.app.messages import ModelsListed
from cuda_llm.app.model_choices import ModelChoice, default_choice, model_choices
from cuda_llm.app.options import Choices, Defaults, SessionRequest, new_session, resume_session
from cuda_llm.app.widgets.footer import KeyFooter
from cuda_llm.app.widgets.telemetry import TelemetryBar
from cuda_llm.app.widgets.text import plain, set_text
from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.llm.addresses import ollama_url
from cuda_llm.engine.llm.spec import parse_spec, person_writes, spec_forms

LOADING = "reading the task library..."  # the task summary until the lists are read (after the first frame)
# Below this many columns the task and model columns (min-width 30 and 34 in app.tcss, plus the
# model column's padding) cannot sit side by side: they stack and the tab scrolls, so every field
# stays on the screen and Tab never moves focus to one that is clipped off the right edge.
SIDE_BY_SIDE_COLUMNS = 66
CRASH_TOAST = "cuda-llm crashed last time"  # the title of the toast that says so, withdrawn when a session opens


class StartScreen(Screen[None]):
    # N as it was before manual mode set it to 1, to give it back when another model is picked.
    _n_before_manual: str | None = None

    BINDINGS: ClassVar[list[BindingType]] = [
        # Letters (not in a text field: there they type), shown in the footer when they apply and
        # movable by the config's [keys] table; the F-keys beside them for terminals that pass them
        # (the footer shows them where a text field takes the letters).
        Binding("s", "start", "Start", id="start.start"),
        Binding("r", "resume", "Resume", id="start.resume"),
        Binding("l", "sessions", "Sessions", id="start.sessions"),
        Binding("n", "new", "New session", id="start.new"),
        # A priority binding acts when the app receives the key, before the keys typed after it in
        # the same burst are handed to the focused list (a screen's own binding acts only once the
        # key has bubbled up to it, too late: `/vec` left the filter empty). In a text field `/`
        # types (check_action), and the key goes on to the field.
        Binding("slash", "filter", "Filter", key_display="/", id="start.filter", priority=True),
        Binding("question_mark", "help", "Help", key_display="?", id="start.help"),
        Binding("q", "quit", "Quit", id="start.quit"),
        Binding("f1", "help", "Help", priority=True),
        Binding("f2", "new", "New session", priority=True),
        Binding("f3", "sessions", "Sessions", priority=True),
        Binding("f5", "start", "Start", priority=True),
        Binding("f6", "resume", "Resume", priority=True),
    ]
    ACTION_HELP: ClassVar[dict[str, str]] = {
        "help": "this list",
        "start": "start a session with the task, model and settings chosen (Enter in a field does too)",
        "resume": "continue the session selected in the Sessions tab (Enter on it does too)",
        "sessions": "show the stored sessions",
        "new": "show the new-session choices",
        "filter": "filter the task list (in the Sessions tab: the sessions); Esc clears",
        "quit": "leave cuda-llm",
    }

    def __init__(self, defaults: Defaults, config: AppConfig) -> None:
        super().__init__()
        self.defaults = defaults
        self.config = config
        self.tasks: list[TaskRow] = []
        self.catalog = Catalog([], {})
        self.models: list[ModelChoice] = []
        self.ollama_models: list[str] = []
        self.chosen_model: ModelChoice | None = None
        # The model put in the field by default rather than by the person: a better default may
        # replace it (ollama's first model, once the server answers).
        self.preselected: str | None = None
        self._crash_untold = False  # the crash is to be told when this screen is shown
        self._lists_loaded = False  # the task library and the stored sessions have been read

    def compose(self) -> ComposeResult:
        c = self.config
        yield TelemetryBar(id="telemetry")
        with TabbedContent(id="start-tabs"):
            with TabPane("New session", id="tab-new"), Horizontal(id="start-new"):
                with Vertical(id="task-col"):
                    yield Input(placeholder="filter tasks", id="task-filter", compact=True)
                    yield OptionList(id="task-list", compact=True)
                    yield Static(id="task-summary")
                with VerticalScroll(id="model-col"):
                    yield Label("Model", classes="section")
                    yield OptionList(id="model-list", compact=True)
                    yield Static(id="model-status")
                    # Its placeholder (the spec's forms, read from every backend's class) is set once
                    # the first frame is drawn: naming the forms imports every backend's module.
                    yield Input(c.model or "", id="model-spec", compact=True)
                    with Horizontal(classes="field"):
                        yield Label("N candidates")
                        yield Input(str(c.candidates), type="integer", id="opt-n", compact=True)
                        yield Label("D rounds")
                        yield Input(str(c.rounds), type="integer", id="opt-d", compact=True)
                    with Horizontal(classes="field"):
                        yield Label("R repairs")
                        yield Input(str(c.repairs), type="integer", id="opt-r", compact=True)
                        yield Label("K patience")
                        yield Input(str(c.patience), type="integer", id="opt-k", compact=True)
                    with Horizontal(classes="field"):
                        # Named: the share is of the achievable roofline (metrics.ROOFLINE_NAME), never
                        # the physical limit; as long as the old label, so the field fits at 80 columns.
                        # Its tooltip is set after the first frame (_after_first_frame).
                        yield Label("achievable roofline stop (0: off)")
                        yield Input(f"{c.target_roofline:g}", type="number", id="opt-target", compact=True)
                    yield Checkbox("auto-accept each round's winner", c.auto_accept, id="opt-auto", compact=True)
                    yield Button("Start (s / F5)", variant="primary", id="start", compact=True)
                    # Right under the fields and the button it is about, not at the foot of the screen.
                    yield Static(id="start-message")
            with TabPane("Sessions", id="tab-sessions"), Vertical(id="sessions-col"):
                yield Input(placeholder="filter sessions (Esc clears)", id="sessions-filter", compact=True)
                table: DataTable[object] = DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
                table.add_columns("id", "task", "model", "status", "rounds", "best", "device", "updated")
                yield table
                yield Static(
                    plain("Enter or r resumes the selected session; replay it from the model list (New session)."),
                    id="sessions-hint",
                )
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        bar = self.query_one(TelemetryBar)
        bar.set_context("cuda-llm · a language model writes CUDA kernels; the GPU proves them right and fast")
        bar.set_sample(getattr(self.app, "telemetry_sample", None))
        # Read once the first frame is drawn: the screen shows at once (the lists empty for the moment
        # the library and the store take), the models when the server answers.
        set_text(self.query_one("#task-summary", Static), LOADING)
        self.call_after_refresh(self.load_lists)
        self.call_after_refresh(self.list_ollama_models)
        self.call_after_refresh(self._after_first_frame)
        self.query_one("#task-list", OptionList).focus()
        self.query_one("#sessions-filter", Input).display = False
        self._fit_columns(self.app.size.width)

    def load_lists(self) -> None:
        """The task library and the stored sessions, read into the lists; then the crash, if the last
        session ended in one, is told."""
        self.tasks = load_tasks(getattr(self.app, "library", None))
        self._lists_loaded = True
        self.reload_catalog()
        self.tell_about_crash()

    def tell_about_crash(self) -> None:
        """The last session stopped when the app crashed: say so once, on this next start, while
        this screen is shown (under a session opened at once, as `run --resume` does, it waits)."""
        if self.app.screen is not self:
            self._crash_untold = True
            return
        self._crash_untold = False
        last = max(self.catalog.sessions, key=lambda s: s.updated_at, default=None)
        if last is None or not last.crashed:
            return
        from cuda_llm.engine.store.sessions import CRASH_PREFIX

        self.app.notify(
            title=CRASH_TOAST,
            message=f"session {last.id} ({last.task}) stopped when cuda-llm crashed "
            f"({last.message.removeprefix(CRASH_PREFIX)}); it is recorded as stopped: resume it from "
            "the Sessions tab (l, then r)",
            severity="warning",
            timeout=20,
            markup=False,
        )

    def on_resize(self, event: events.Resize) -> None:
        self._fit_columns(event.size.width)

    def _fit_columns(self, width: int) -> None:
        self.query_one("#start-new").set_class(width < SIDE_BY_SIDE_COLUMNS, "-stacked")

    def on_screen_resume(self) -> None:
        self.query_one("#start-tabs", TabbedContent).display = True  # see on_screen_suspend
        self._fit_columns(self.app.size.width)  # the terminal may have been resized under a session
        if self._lists_loaded:  # else load_lists is still to run: once is enough
            self.reload_catalog()
        # Back from a session: the lists, where the letter keys act (in a field they would type).
        if self.query_one("#start-tabs", TabbedContent).active == "tab-sessions":
            self.query_one("#sessions", DataTable).focus()
        else:
            self.query_one("#task-list", OptionList).focus()
        if self._crash_untold:
            self.tell_about_crash()

    def on_screen_suspend(self) -> None:
        # A session opened (perhaps the crashed one, resumed): the toast about the crash is this
        # screen's, not the session's. It stays in the message history (M).
        for note in list(self.app._notifications):
            if note.title == CRASH_TOAST:
                self.app._unnotify(note)
        # Under a screen that covers it (the run screen; not a dialog, through which it shows) nothing
        # of this one is seen, yet Textual lays out the screen below the top one again at every resize:
        # with its tabs hidden that layout is a few widgets, not the whole form and the sessions table.
        if not isinstance(self.app.screen, ModalScreen):
            self.query_one("#start-tabs", TabbedContent).display = False

    # ---- data --------------------------------------------------------------------------------
    def _after_first_frame(self) -> None:
        """The fields' texts that name the engine's concepts: the spec's forms (read from every
        backend's class, which imports every backend's module) and the roofline metrics' names (the
        metrics module brings the GPU protocol and the task model)."""
        from cuda_llm.engine.judge.metrics import PHYSICAL_NAME, ROOFLINE_NAME

        self.query_one("#model-spec", Input).placeholder = spec_forms()
        self.query_one("#opt-target", Input).tooltip = (
            f"stop when the best reaches this share of {ROOFLINE_NAME} (our probes' "
            f"measured ceilings, not {PHYSICAL_NAME}); 0: never"
        )

    def reload_catalog(self) -> None:
        self.catalog = load_catalog(self.defaults.db)
        if self.catalog.error:
            self.say(self.catalog.error, error=True)
        self.fill_tasks(self.query_one("#task-filter", Input).value)
        self.fill_sessions()
        self.fill_models()

    def fill_tasks(self, filter_text: str = "") -> None:
        options = self.query_one("#task-list", OptionList)
        wanted = filter_text.strip().lower()
        # Tasks whose name holds the text first (typing "vector" finds vector_add before the
        # dot product "of two float32 vectors"), then those whose summary does.
        named = [t for t in self.tasks if wanted in t.name.lower()]
        rows = named + [t for t in self.tasks if t not in named and wanted in t.summary.lower()]
        highlighted = self.selected_task() or self.config.task
        options.clear_options()
        width = max((len(t.name) for t in rows), default=10)
        for t in rows:
            best = self.catalog.last_best.get(t.name, "")
            text = plain(t.name.ljust(width + 1), style="bold")
            text.append_text(plain(f"{t.category:<9}", style="dim"))
            if t.error:
                text.append(" broken task file", style="bold")
            elif best:
                text.append_text(plain(best.split(" (")[0]))
            options.add_option(Option(text, id=t.name, disabled=t.error is not None))
        # Without the list's echo (OptionHighlighted): what it would do is done here, at once, and a
        # late echo would undo what the person did in between (the lists fill after the first frame).
        with options.prevent(OptionList.OptionHighlighted):
            for i, t in enumerate(rows):
                if t.name == highlighted:
                    options.highlighted = i
                    break
            else:
                if rows:
                    options.highlighted = 0
        # The list scrolls to the highlighted task as it is set, but within its old length: again once
        # the new options are laid out (the list fills after the first frame, and grows with a filter cleared).
        self.call_after_refresh(options.scroll_to_highlight)
        self.show_task_summary()

    def selected_task(self) -> str | None:
        options = self.query_one("#task-list", OptionList)
        if options.highlighted is None or options.option_count == 0:
            return None
        return options.get_option_at_index(options.highlighted).id

    def show_task_summary(self) -> None:
        name = self.selected_task()
        row = next((t for t in self.tasks if t.name == name), None)
        summary = self.query_one("#task-summary", Static)
        if row is None:
            set_text(summary, "no task matches the filter")
            return
        if row.error:
            set_text(summary, f"{row.name}: {row.error}")
            return
        best = self.catalog.last_best.get(row.name)
        # The summary is the task file's text: shown literally (x[i] is an index, not markup).
        set_text(summary, f"{row.summary}\nlast best: {best}" if best else f"{row.summary}\nnot optimised yet")

    def fill_sessions(self) -> None:
        table = self.query_one("#sessions", DataTable)
        wanted = self.query_one("#sessions-filter", Input).value.strip().lower()
        table.clear()
        for s in self.catalog.sessions:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.updated_at))
            cells = (str(s.id), s.task, s.model, s.shown_status, str(s.rounds), s.best or "-", s.device, when)
            if wanted and not any(wanted in c.lower() for c in cells):
                continue
            table.add_row(*(plain(c) for c in cells), key=str(s.id))

    def fill_models(self) -> None:
        choices = model_choices(self.ollama_models, self.defaults.host, self.config.endpoints, self.catalog.sessions)
        self.models = choices
        options = self.query_one("#model-list", OptionList)
        options.clear_options()
        for i, m in enumerate(choices):
            options.add_option(Option(plain(m.title), id=f"model-{i}"))
        spec_input = self.query_one("#model-spec", Input)
        typed = spec_input.value.strip()
        chosen = typed if typed and typed != self.preselected else ""
        wanted = chosen or self.config.model or ""
        endpoint = self.chosen_model.endpoint if self.chosen_model else self.config.endpoint
        for i, m in enumerate(choices):
            if m.spec == wanted and (m.endpoint == endpoint or not endpoint):
                with options.prevent(OptionList.OptionHighlighted):  # its echo: see fill_tasks
                    options.highlighted = i
                self.chosen_model = m
                if spec_input.value != m.spec:
                    spec_input.value = m.spec
                self._candidates_for(m.spec)
                return
        if chosen or (self.config.model and typed == self.config.model):
            return  # typed by the person, or the last one used: kept even if no server lists it now
        first = default_choice(choices, bool(self.ollama_models))
        with options.prevent(OptionList.OptionHighlighted):
            options.highlighted = first
        self.pick_model(first)
        self.preselected = choices[first].spec

    @work(exclusive=True, group="ollama", exit_on_error=False)
    async def list_ollama_models(self) -> None:
        try:
            url = ollama_url(self.defaults.host)
        except UserError as exc:
            self.post_message(ModelsListed("ollama", "", [], str(exc)))
            return
        try:
            models = await self.app.ollama_lister(self.defaults.host)  # type: ignore[attr-defined]  # self.app is a CudaLlmApp
        except Exception:
            self.post_message(
                ModelsListed("ollama", url, [], f"no ollama server at {url}: start `ollama serve`, or pick manual")
            )
        else:
            self.post_message(ModelsListed("ollama", url, list(models)))

    def on_models_listed(self, message: ModelsListed) -> None:
        status = self.query_one("#model-status", Static)
        if message.error:
            set_text(status, message.error)
            status.add_class("-error")
        else:
            status.remove_class("-error")
            set_text(status, f"ollama at {message.url}: {len(message.models)} model(s)")
        self.ollama_models = message.models
        self.fill_models()

    # ---- events ------------------------------------------------------------------------------
    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "task-filter":
            self.fill_tasks(event.value)
        elif event.input.id == "sessions-filter":
            self.fill_sessions()

    def on_key(self, event: events.Key) -> None:
        """Esc in a filter clears it and goes back to its list."""
        if event.key != "escape":
            return
        focused = self.focused
        if focused is not None and focused.id == "task-filter":
            event.stop()
            focused.value = ""  # type: ignore[attr-defined]  # an Input, by its id
            self.query_one("#task-list", OptionList).focus()
        elif focused is not None and focused.id == "sessions-filter":
            event.stop()
            focused.value = ""  # type: ignore[attr-defined]  # an Input, by its id
            focused.display = False
            self.query_one("#sessions", DataTable).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "task-filter":
            self.query_one("#task-list", OptionList).focus()
        elif event.input.id == "sessions-filter":
            self.query_one("#sessions", DataTable).focus()
        elif event.input.id in ("model-spec", "opt-n", "opt-d", "opt-r", "opt-k", "opt-target"):
            self.action_start()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_list.id == "task-list":
            self.show_task_summary()
        elif event.option_list.id == "model-list":
            self.pick_model(event.option_index)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "task-list":
            self.query_one("#model-list", OptionList).focus()
        elif event.option_list.id == "model-list":
            self.pick_model(event.option_index)
            self.query_one("#opt-n", Input).focus()

    def pick_model(self, index: int) -> None:
        if 0 <= index < len(self.models):
            self.chosen_model = self.models[index]
            if self.chosen_model.spec:
                self.query_one("#model-spec", Input).value = self.chosen_model.spec
            self._candidates_for(self.chosen_model.spec)

    def _candidates_for(self, spec: str) -> None:
        """Manual mode asks the person for one kernel a round, not N: N goes to 1 while manual is
        picked, and back to what it was when another model is."""
        field = self.query_one("#opt-n", Input)
        before = self._n_before_manual
        manual = person_writes(spec)
        if manual and field.value != "1":
            self._n_before_manual = field.value
            field.value = "1"
        elif not manual and before is not None:
            if field.value == "1":
                field.value = before
            self._n_before_manual = None

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.action_start()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "sessions":
            self.action_resume()

    # ---- actions -----------------------------------------------------------------------------
    def say(self, text: str, error: bool = False) -> None:
        line = self.query_one("#start-message", Static)
        line.set_class(error, "-error")
        set_text(line, text)
        if text:
            # In a short or narrow terminal the line may be below the fold: it is the last thing in both
            # scrolling columns, so their ends show it (scroll_visible stopped a line short of it).
            for column in ("#model-col", "#start-new"):
                self.call_after_refresh(self.query_one(column).scroll_end, animate=False)

    def choices(self) -> Choices:
        task = self.selected_task()
        if task is None:
            raise ValueError("pick a task")
        spec = self.query_one("#model-spec", Input).value.strip()
        try:
            parse_spec(spec)
        except UserError:
            raise ValueError(f"pick a model, or type one: {spec_forms()}") from None

        from cuda_llm.engine.judge.metrics import ROOFLINE_NAME

        def value(field_id: str) -> str:
            return self.query_one(f"#{field_id}", Input).value

        try:
            target = float(value("opt-target") or 0)
        except ValueError:
            raise ValueError(f"the share of {ROOFLINE_NAME} must be a number such as 0.9") from None
        if not 0 <= target <= 1:
            raise ValueError(f"the share of {ROOFLINE_NAME} must be between 0 and 1")
        chosen = self.chosen_model if self.chosen_model and self.chosen_model.spec == spec else None
        return Choices(
            task=task,
            model=spec,
            candidates=knob_value(value("opt-n"), "candidates"),
            rounds=knob_value(value("opt-d"), "rounds"),
            repairs=knob_value(value("opt-r"), "repairs"),
            patience=knob_value(value("opt-k"), "patience"),
            target_roofline=target,
            auto_accept=self.query_one("#opt-auto", Checkbox).value,
            host=chosen.host if chosen else None,
            base_url=chosen.base_url if chosen else None,
        )

    def action_start(self) -> None:
        try:
            c = self.choices()
        except ValueError as exc:
            self.say(str(exc), error=True)
            return
        endpoint = self.chosen_model.endpoint if self.chosen_model and self.chosen_model.spec == c.model else None
        self.app.remember(  # type: ignore[attr-defined]  # self.app is a CudaLlmApp
            task=c.task,
            model=c.model,
            endpoint=endpoint,
            candidates=c.candidates,
            rounds=c.rounds,
            repairs=c.repairs,
            patience=c.patience,
            target_roofline=c.target_roofline,
            auto_accept=c.auto_accept,
        )
        self.config = self.app.config  # type: ignore[attr-defined]  # self.app is a CudaLlmApp
        self.say("")
        self.open_run(new_session(self.defaults, c))

    def action_resume(self) -> None:
        table = self.query_one("#sessions", DataTable)
        if table.row_count == 0:
            self.say("no stored sessions to resume", error=True)
            return
        row_key, _ = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0))
        session_id = int(str(row_key.value))
        self.say("")
        self.open_run(resume_session(self.defaults, session_id, self.query_one("#opt-auto", Checkbox).value))

    def open_run(self, request: SessionRequest) -> None:
        from cuda_llm.app.screens.run import RunScreen

        self.app.push_screen(RunScreen(request))

    def action_sessions(self) -> None:
        self.query_one("#start-tabs", TabbedContent).active = "tab-sessions"
        self.set_focus(self.query_one("#sessions", DataTable))  # at once: see action_filter

    def action_new(self) -> None:
        self.query_one("#start-tabs", TabbedContent).active = "tab-new"
        self.set_focus(self.query_one("#task-list", OptionList))  # at once: see action_filter

    def action_filter(self) -> None:
        # Focus at once, not as widget.focus() does when the app is next idle: the filter's text is
        # often typed in the same burst as `/`, and those keys go to whatever has focus when each is
        # handled (the task list, which would take `s` as Start).
        if self.query_one("#start-tabs", TabbedContent).active == "tab-sessions":
            box = self.query_one("#sessions-filter", Input)
            box.display = True
            self.set_focus(box)
            return
        self.action_new()
        self.set_focus(self.query_one("#task-filter", Input))

    async def action_quit(self) -> None:
        await self.app.action_quit()

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        return letters_first(super().active_bindings)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Start acts on the New session tab, Resume on the Sessions tab: a key never acts on a
        choice that is not on the screen."""
        if action == "filter":
            return not isinstance(self.focused, Input)  # in a field, / types
        if action not in ("start", "resume", "new", "sessions") or not self.is_mounted:
            return True
        tab = self.query_one("#start-tabs", TabbedContent).active
        return {"start": "tab-new", "new": "tab-sessions", "resume": "tab-sessions", "sessions": "tab-new"}[
            action
        ] == tab

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.refresh_bindings()

    def action_help(self) -> None:
        rows = help_rows(self, self.ACTION_HELP)
        rows += [
            ("tab", "next field", "move between the task list, the model list and the settings", ""),
            ("enter", "choose", "task list: on to the models; model list: on to N and D; a field: start", ""),
            ("ctrl+t", "theme", "next theme (dark, light, high contrast); remembered", "app.theme"),
            ("ctrl+p", "palette", "every action, searchable", ""),
            ("ctrl+q / ctrl+c", "quit", "leave cuda-llm", "app.quit"),
        ]
        # Imported when asked for: the modals bring the editor and the engine's events with them.
        from cuda_llm.app.screens.modals import HelpScreen

        self.app.push_screen(HelpScreen("Start screen keys", rows))
