"""Modal dialogs: a reason for a rejection, the kernel editor, the loop's settings, and help."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Input, Label, Static, TextArea

from cuda_llm.app.widgets.cuda import use_cuda


@dataclass(frozen=True)
class EditResult:
    source: str
    plan_json: str


def compose_reply(source: str, plan_json: str, note: str = "Written in the editor.") -> str:
    """A reply in the candidate contract's format, from what the person wrote."""
    return f"{note}\n\n```cuda\n{source.rstrip()}\n```\n\n```json\n{plan_json.strip()}\n```\n"


class RejectScreen(ModalScreen[str | None]):
    """Returns the reason (possibly empty), or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", priority=True)]

    def __init__(self, label: str) -> None:
        super().__init__(classes="dialog-screen")
        self.label = label

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="reject-dialog"):
            yield Label(f"Reject {self.label}", classes="dialog-title")
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


class EditScreen(ModalScreen[EditResult | None]):
    """The kernel and its launch plan in editable text areas; submitting checks the JSON first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "submit", "Submit", priority=True),
        Binding("f2", "submit", "Submit", show=False, priority=True),
        Binding("escape", "cancel", "Cancel", priority=True),
    ]

    def __init__(self, title: str, source: str, plan_json: str) -> None:
        super().__init__(classes="dialog-screen")
        self.title_text = title
        self.source = source
        self.plan = plan_json

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="edit-dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield TextArea.code_editor(self.source, id="edit-source")
            yield Label("launch plan (JSON)")
            yield TextArea.code_editor(self.plan, language=None, id="edit-plan")
            yield Static("", id="edit-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Submit (Ctrl+S)", variant="primary", id="edit-ok", compact=True)
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

    def action_submit(self) -> None:
        source = self.query_one("#edit-source", TextArea).text
        plan = self.query_one("#edit-plan", TextArea).text
        error = self.query_one("#edit-error", Static)
        if not source.strip():
            error.update("the kernel is empty")
            return
        try:
            json.loads(plan)
        except ValueError as exc:
            error.update(f"the plan is not JSON: {exc}")
            return
        self.dismiss(EditResult(source, plan))

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "edit-ok":
            self.action_submit()
        else:
            self.dismiss(None)


@dataclass(frozen=True)
class SettingsChange:
    candidates: int | None = None
    rounds: int | None = None
    model: str | None = None


class SettingsScreen(ModalScreen[SettingsChange | None]):
    """N, D and the model for the rounds still to come."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", priority=True)]

    def __init__(self, candidates: int, rounds: int, model: str) -> None:
        super().__init__(classes="dialog-screen")
        self.values = (candidates, rounds, model)

    def compose(self) -> ComposeResult:
        n, d, model = self.values
        with Vertical(classes="dialog", id="settings-dialog"):
            yield Label("From the next round on", classes="dialog-title")
            with Horizontal(classes="field"):
                yield Label("N candidates ")
                yield Input(str(n), type="integer", id="settings-n", compact=True)
            with Horizontal(classes="field"):
                yield Label("D rounds     ")
                yield Input(str(d), type="integer", id="settings-d", compact=True)
            with Horizontal(classes="field"):
                yield Label("model        ")
                yield Input(model, id="settings-model", compact=True)
            yield Static("", id="settings-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Apply (Enter)", variant="primary", id="settings-ok", compact=True)
                yield Button("Cancel (Esc)", id="settings-cancel", compact=True)

    def _result(self) -> SettingsChange | None:
        n, d, model = self.values
        error = self.query_one("#settings-error", Static)
        try:
            new_n = int(self.query_one("#settings-n", Input).value)
            new_d = int(self.query_one("#settings-d", Input).value)
        except ValueError:
            error.update("N and D must be whole numbers")
            return None
        if not 1 <= new_n <= 32 or new_d < 1:
            error.update("N must be 1 to 32 and D at least 1")
            return None
        new_model = self.query_one("#settings-model", Input).value.strip()
        return SettingsChange(
            new_n if new_n != n else None,
            new_d if new_d != d else None,
            new_model if new_model and new_model != model else None,
        )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        result = self._result()
        if result is not None:
            self.dismiss(result)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "settings-ok":
            result = self._result()
            if result is not None:
                self.dismiss(result)
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key of the screen below, with what it does."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", priority=True),
        Binding("f1", "close", "Close", show=False, priority=True),
    ]

    def __init__(self, title: str, rows: list[tuple[str, str, str]]) -> None:
        super().__init__(classes="dialog-screen")
        self.title_text = title
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="help-dialog"):
            yield Label(self.title_text, classes="dialog-title")
            table = DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)
            table.add_columns("key", "action", "what it does")
            for row in self.rows:
                table.add_row(*row)
            yield table
            yield Static("Ctrl+P opens the command palette: every action, searchable. Esc closes this.")

    def action_close(self) -> None:
        self.dismiss(None)
