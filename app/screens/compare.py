"""Two candidates compared: their verdicts' figures, the diff of their launch plans and the diff of
their source, side by side when the terminal is wide enough and unified when it is not (redrawn on
a resize). Esc or q goes back."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from cuda_llm.app.compare import Side, plan_text, side_by_side, unified, verdict_table
from cuda_llm.app.widgets.text import plain

# From this many columns the source diff is two columns (each needs ~60 for a line of CUDA).
SIDE_BY_SIDE_COLUMNS = 120


class CompareScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", id="compare.close"),
        Binding("q", "close", "Back", show=False),
        Binding("u", "toggle_layout", "Unified/side by side", id="compare.layout"),
    ]

    def __init__(self, old: Side, new: Side) -> None:
        super().__init__()
        self.old, self.new = old, new
        self.forced: str | None = None  # "unified" | "side" when the person chose; else by width

    def compose(self) -> ComposeResult:
        yield Static(plain(f"{self.new.label} compared with {self.old.label} (marked)"), id="compare-title")
        with VerticalScroll(id="compare-scroll"):
            yield Static(id="compare-verdicts")
            yield Static(id="compare-plan")
            yield Static(id="compare-source")
        yield Static(plain("Esc back · u unified/side by side"), id="compare-footnote")

    @property
    def layout_name(self) -> str:
        if self.forced is not None:
            return self.forced
        return "side" if self.app.size.width >= SIDE_BY_SIDE_COLUMNS else "unified"

    def on_mount(self) -> None:
        self.query_one("#compare-scroll").focus()
        self.draw()

    def on_resize(self, event: events.Resize) -> None:
        self.draw()

    def draw(self) -> None:
        colors = self.app.theme_variables
        styles = {
            "+": colors.get("status-correct", "green"),
            "-": colors.get("status-wrong", "red"),
            "@": colors.get("status-compiled", "cyan"),
        }
        old, new = self.old, self.new
        self.query_one("#compare-verdicts", Static).update(
            Group(Text("verdicts", style="bold underline"), verdict_table(old, new))
        )
        plan = unified(plan_text(old.plan), plan_text(new.plan), f"plan {old.label}", f"plan {new.label}", styles)
        self.query_one("#compare-plan", Static).update(Group(Text("\nlaunch plan", style="bold underline"), plan))
        if self.layout_name == "side":
            column = max(20, (self.app.size.width - 6) // 2)
            heading = Text(f"\nsource: {old.label[:column].ljust(column)} │ {new.label}", style="bold underline")
            body = side_by_side(old.source, new.source, column, styles)
        else:
            heading = Text("\nsource", style="bold underline")
            body = unified(old.source, new.source, old.label, new.label, styles)
        self.query_one("#compare-source", Static).update(Group(heading, body))

    def action_toggle_layout(self) -> None:
        self.forced = "unified" if self.layout_name == "side" else "side"
        self.draw()

    def action_close(self) -> None:
        self.dismiss(None)
