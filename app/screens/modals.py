"""Modal dialogs: a reason for a rejection, the kernel editor, the loop's settings, and help."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea

from cuda_llm.app.editing import EditResult, compose_reply
from cuda_llm.app.history import MessageHistory
from cuda_llm.app.knob_fields import knob_value
from cuda_llm.app.terminal import terminal_safe
from cuda_llm.app.widgets.cuda import release, use_cuda
from cuda_llm.app.widgets.text import plain, set_text
from cuda_llm.engine.llm.spec import person_writes

__all__ = [
    "AskScreen",
    "ConfirmScreen",
    "EditResult",
    "EditScreen",
    "HelpScreen",
    "MessagesScreen",
    "RejectScreen",
    "SettingsChange",
    "SettingsScreen",
    "compose_reply",
]


class RejectScreen(ModalScreen[str | None]):
    """Returns the reason (possibly empty), or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", priority=True)]

    def __init__(self, label: str) -> None:
        super().__init__(classes="dialog-screen")
        self.label = label

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="reject-dialog"):
            yield Label(plain(f"Reject {self.label}"), classes="dialog-title")
            yield Static("Why? The reason goes into the next prompt (optional).")
            yield Input(placeholder="e.g. keep fp32 accumulation; no atomics", id="reject-reason")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Reject (Enter)", variant="error", id="reject-ok", compact=True)
                yield Button("Cancel (Esc)", id="reject-cancel", compact=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "reject-ok":
            self.dismiss(self.query_one(Input).value.strip())
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question: y says yes; n, Esc (or Enter, on the focused No) say no."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", priority=True),
        Binding("n", "answer(False)", "No", priority=True),
        Binding("escape", "answer(False)", "No", priority=True),
    ]

    def __init__(self, question: str, yes: str = "Yes (y)", no: str = "No (n / Esc)") -> None:
        super().__init__(classes="dialog-screen")
        self.question = question
        self.labels = (yes, no)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="confirm-dialog"):
            yield Static(plain(self.question), classes="dialog-title")
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.labels[0], variant="warning", id="confirm-yes", compact=True)
                yield Button(self.labels[1], id="confirm-no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-yes")


class EditScreen(ModalScreen[EditResult | None]):
    """The kernel and its launch plan in editable text areas, and what went wrong with the kernel it
    starts from beside them; submitting checks the JSON first, leaving asks before it throws edits
    away. Ctrl+O (or F6) moves between the source and the plan (Tab indents)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "submit", "Submit", priority=True, id="edit.submit"),
        Binding("ctrl+o", "switch", "Source/plan", priority=True, id="edit.switch"),
        Binding("escape", "cancel", "Cancel", priority=True, id="edit.cancel"),
        Binding("f2", "submit", "Submit", show=False, priority=True),
        Binding("f6", "switch", "Source/plan", show=False, priority=True),
    ]

    def __init__(self, title: str, source: str, plan_json: str, errors: str = "") -> None:
        super().__init__(classes="dialog-screen")
        self.title_text = title
        self.source = terminal_safe(source)
        self.plan = terminal_safe(plan_json)
        self.errors = errors
        self.asking = False  # a question about leaving is open over the editor

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="edit-dialog"):
            yield Label(plain(self.title_text), classes="dialog-title")
            with Horizontal(id="edit-body"):
                with Vertical(id="edit-areas"):
                    yield Label("CUDA source", classes="edit-label", id="edit-source-label")
                    yield TextArea.code_editor(self.source, id="edit-source")
                    yield Label("launch plan (JSON)", classes="edit-label", id="edit-plan-label")
                    yield TextArea.code_editor(self.plan, language=None, id="edit-plan")
                if self.errors:
                    with VerticalScroll(id="edit-errors"):
                        yield Label("what went wrong", classes="edit-label")
                        yield Static(plain(self.errors), id="edit-errors-text")
            yield Static("", id="edit-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Submit (Ctrl+S)", variant="primary", id="edit-ok", compact=True)
                yield Button("Source/plan (Ctrl+O)", id="edit-switch", compact=True)
                yield Button("Cancel (Esc)", id="edit-cancel", compact=True)

    def on_mount(self) -> None:
        from cuda_llm.themes import CODE_THEMES, code_theme_for

        source = self.query_one("#edit-source", TextArea)
        use_cuda(source)
        for area in self.query(TextArea):
            for t in CODE_THEMES:
                area.register_theme(t)
            area.theme = code_theme_for(self.app.current_theme.name, self.app.current_theme.dark)
        source.focus()

    def on_unmount(self) -> None:
        for area in self.query(TextArea):
            release(area)

    @property
    def changed(self) -> bool:
        return (
            self.query_one("#edit-source", TextArea).text != self.source
            or self.query_one("#edit-plan", TextArea).text != self.plan
        )

    def action_switch(self) -> None:
        source, plan = self.query_one("#edit-source", TextArea), self.query_one("#edit-plan", TextArea)
        (plan if source.has_focus else source).focus()

    def action_submit(self) -> None:
        source = self.query_one("#edit-source", TextArea).text
        plan = self.query_one("#edit-plan", TextArea).text
        error = self.query_one("#edit-error", Static)
        if not source.strip():
            set_text(error, "the kernel is empty")
            return
        try:
            json.loads(plan)
        except ValueError as exc:
            set_text(error, f"the plan is not JSON: {exc}")
            return
        self.dismiss(EditResult(source, plan))

    def ask_before_quit(self) -> None:
        """Quit was pressed with unsaved text: keep it as a draft and quit, or go on editing. Asked
        once: a second quit while the question is open would stack a second question, and answering
        both would close the editor twice."""
        if self.asking:
            return
        self.asking = True

        def answered(quit_: bool | None) -> None:
            self.asking = False
            if quit_:
                source = self.query_one("#edit-source", TextArea).text
                plan = self.query_one("#edit-plan", TextArea).text
                self.dismiss(EditResult(source, plan, keep_only=True))

        self.app.push_screen(
            ConfirmScreen(
                "Quit with unsaved changes? Your edit is kept and offered when you resume the session.",
                "Keep it and quit (y)",
                "Keep editing (n / Esc)",
            ),
            answered,
        )

    def action_cancel(self) -> None:
        if not self.changed:
            self.dismiss(None)
            return

        if self.asking:
            return
        self.asking = True

        def answered(discard: bool | None) -> None:
            self.asking = False
            if discard:
                self.dismiss(None)

        self.app.push_screen(
            ConfirmScreen("Discard your changes to the kernel?", "Discard (y)", "Keep editing (n / Esc)"), answered
        )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "edit-ok":
            self.action_submit()
        elif event.button.id == "edit-switch":
            self.action_switch()
        else:
            self.action_cancel()


@dataclass(frozen=True)
class SettingsChange:
    candidates: int | None = None
    rounds: int | None = None
    model: str | None = None
    server: str | None = None  # the model's server (ollama host or OpenAI-compatible base URL)
    retry_now: bool = False  # a paused round goes on at once with the change


class SettingsScreen(ModalScreen[SettingsChange | None]):
    """The model, its server, N and D for the requests still to come. A round paused by a fault (the
    server was down, the model unknown) takes them at once and is retried ("retry now", what Enter
    does); a session the person paused may stay paused or resume with them."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", priority=True)]

    def __init__(
        self, candidates: int, rounds: int, model: str, server: str = "", paused: bool = False, by_fault: bool = False
    ) -> None:
        super().__init__(classes="dialog-screen")
        self.values = (candidates, rounds, model, server)
        self.paused = paused
        self.by_fault = by_fault

    def compose(self) -> ComposeResult:
        n, d, model, server = self.values
        if self.by_fault:
            title = "The paused round (retried now) and the rounds after it"
        elif self.paused:
            title = "The paused session and its next rounds"
        else:
            title = "From the next round on"
        with Vertical(classes="dialog", id="settings-dialog"):
            yield Label(title, classes="dialog-title")
            with Horizontal(classes="field wide"):
                yield Label("model       ")
                yield Input(model, placeholder="ollama:MODEL or openai:MODEL", id="settings-model", compact=True)
            with Horizontal(classes="field wide"):
                yield Label("server      ")
                yield Input(
                    server,
                    placeholder="the ollama host or OpenAI base URL (empty: as now)",
                    id="settings-server",
                    compact=True,
                )
            with Horizontal(classes="field"):
                yield Label("N candidates")
                yield Input(str(n), type="integer", id="settings-n", compact=True)
                yield Label("D rounds")
                yield Input(str(d), type="integer", id="settings-d", compact=True)
            yield Static("", id="settings-error")
            with Horizontal(classes="dialog-buttons"):
                # Enter presses the first: for a round paused by a fault, retrying it is the point.
                if self.by_fault:
                    yield Button("Apply and retry now (Enter)", variant="primary", id="settings-retry", compact=True)
                    yield Button("Apply, stay paused", id="settings-ok", compact=True)
                else:
                    yield Button("Apply (Enter)", variant="primary", id="settings-ok", compact=True)
                    if self.paused:
                        yield Button("Apply and resume", id="settings-retry", compact=True)
                yield Button("Cancel (Esc)", id="settings-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#settings-model", Input).focus()

    def _result(self, go_on: bool) -> SettingsChange | None:
        n, d, model, server = self.values
        error = self.query_one("#settings-error", Static)
        try:
            new_n = knob_value(self.query_one("#settings-n", Input).value, "candidates")
            new_d = knob_value(self.query_one("#settings-d", Input).value, "rounds")
        except ValueError as refused:
            set_text(error, str(refused))
            return None
        new_model = self.query_one("#settings-model", Input).value.strip()
        # What the model field takes: any spec but manual, which is chosen when a session starts.
        if new_model != model and (not _is_spec(new_model) or person_writes(new_model)):
            set_text(error, "the model must be ollama:MODEL, openai:MODEL or replay:ID")
            return None
        new_server = self.query_one("#settings-server", Input).value.strip()
        return SettingsChange(
            new_n if new_n != n else None,
            new_d if new_d != d else None,
            new_model if new_model and new_model != model else None,
            new_server if new_server and new_server != server else None,
            retry_now=go_on and self.paused,
        )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        result = self._result(go_on=self.by_fault)
        if result is not None:
            self.dismiss(result)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id in ("settings-ok", "settings-retry"):
            result = self._result(go_on=event.button.id == "settings-retry")
            if result is not None:
                self.dismiss(result)
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


# From this terminal width the help has a column for each part; below it, two.
HELP_WIDE = 120


class HelpScreen(ModalScreen[None]):
    """Every key of the screen below, with what it does and the id that moves it in the config."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", priority=True),
        Binding("question_mark", "close", "Close", show=False, priority=True),
        Binding("q", "close", "Close", show=False, priority=True),
        Binding("f1", "close", "Close", show=False, priority=True),
    ]

    def __init__(self, title: str, rows: list[tuple[str, str, str, str]]) -> None:
        super().__init__(classes="dialog-screen")
        self.title_text = title
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="help-dialog"):
            yield Label(self.title_text, classes="dialog-title")
            with VerticalScroll(id="help-scroll"):
                yield Static(self._table(self.app.size.width >= HELP_WIDE), id="help-keys")
            yield Static(
                plain(
                    "Ctrl+P: every action, searchable. Move a key in the config file's [keys] table by its "
                    'id, e.g. "run.accept" = "y". Esc (or ?) closes this.'
                ),
                id="help-footnote",
            )

    def _table(self, wide: bool) -> Table:
        """Four columns where there is room; else the key, and what it does with its id under it."""
        table = Table(box=None, expand=True, padding=(0, 1), show_edge=False)
        table.add_column("key", no_wrap=True, style="bold")
        if wide:
            table.add_column("action", no_wrap=True)
            table.add_column("what it does", ratio=1)
            table.add_column(plain("[keys] id"), no_wrap=True, style="dim")
            for row in self.rows:
                table.add_row(*(plain(cell) for cell in row))
            return table
        table.add_column("what it does", ratio=1)
        for key, action, what, ids in self.rows:
            text = plain(action, style="bold")
            if what:
                text.append_text(plain(f": {what}"))
            if ids:
                text.append_text(plain(f"\n[keys] {ids}", style="dim"))
            table.add_row(plain(key), text)
        return table

    def action_close(self) -> None:
        self.dismiss(None)


class AskScreen(ModalScreen[str | None]):
    """One line of text (a folder to save into...): Enter gives it, Esc cancels (None)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", priority=True)]

    def __init__(self, title: str, question: str, value: str = "") -> None:
        super().__init__(classes="dialog-screen")
        self.title_text, self.question, self.value = title, question, value

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="ask-dialog"):
            yield Label(plain(self.title_text), classes="dialog-title")
            yield Static(plain(self.question))
            yield Input(self.value, id="ask-value")
            with Horizontal(classes="dialog-buttons"):
                yield Button("OK (Enter)", variant="primary", id="ask-ok", compact=True)
                yield Button("Cancel (Esc)", id="ask-cancel", compact=True)

    def on_mount(self) -> None:
        field = self.query_one("#ask-value", Input)
        field.focus()
        field.cursor_position = len(field.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(self.query_one(Input).value.strip() or None if event.button.id == "ask-ok" else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


# The colour role of each notification severity in the message history.
SEVERITY_STYLES = {"warning": "status-crashed", "error": "status-wrong"}


class MessagesScreen(ModalScreen[None]):
    """Every notification of this run with its time, oldest first (the toasts fade; these stay)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", priority=True),
        Binding("q", "close", "Close", show=False, priority=True),
        Binding("M", "close", "Close", show=False, priority=True),
        Binding("f12", "close", "Close", show=False, priority=True),
    ]

    def __init__(self, history: MessageHistory) -> None:
        super().__init__(classes="dialog-screen")
        self.history = history

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="messages-dialog"):
            yield Label(f"Messages ({len(self.history)})", classes="dialog-title")
            with VerticalScroll(id="messages-scroll"):
                yield Static(self._text(), id="messages-text")
            yield Static("Esc closes this.", id="messages-footnote")

    def _text(self) -> Text:
        colors = self.app.theme_variables
        out = Text()
        for entry in self.history.entries:
            style = colors.get(SEVERITY_STYLES.get(entry.severity, ""), "")
            out.append(f"{entry.clock} ", style="dim")
            out.append(f"{entry.severity[:4]:<5}", style=style)
            out.append_text(plain(entry.text))
            out.append("\n")
        return out if out.plain else Text("no messages yet")

    def on_mount(self) -> None:
        self.query_one("#messages-scroll", VerticalScroll).scroll_end(animate=False)

    def action_close(self) -> None:
        self.dismiss(None)


def _is_spec(text: str) -> bool:
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.llm.spec import parse_spec

    try:
        parse_spec(text)
    except UserError:
        return False
    return True
