"""Every candidate of the session in one flat table, sortable by latency, status, registers or
occupancy (`s` steps through them, `S` reverses); Enter shows the candidate in the run screen."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from cuda_llm.app.compare import verdict_rows
from cuda_llm.app.state import CandidateView, SessionView
from cuda_llm.app.widgets.text import plain

COLUMNS = ("candidate", "round", "status", "latency us", "registers", "occupancy", "decision")
SORTS = ("latency", "status", "registers", "occupancy", "label")
MISSING = float("inf")  # unmeasured figures sort last


def _registers(c: CandidateView) -> float:
    j = c.judgement
    kernels = j.compile.kernels if j is not None and j.compile is not None else ()
    return float(max(k.registers for k in kernels)) if kernels else MISSING


def _occupancy(c: CandidateView) -> float:
    shown = verdict_rows(c.judgement).get("occupancy", "")
    values = [float(v.strip().rstrip("%")) for v in shown.split(",") if v.strip()]
    return -min(values) if values else MISSING  # the highest first


# What a row sorts by: a figure or a word, then the label (or the request's round, attempt and slot).
SortKey = tuple[float | str, ...]


def sort_key(view: SessionView, by: str) -> Callable[[CandidateView], SortKey]:
    def key(c: CandidateView) -> SortKey:
        if by == "latency":
            return (c.median_us if c.median_us is not None else MISSING, c.label)
        if by == "status":
            return (view.word(c.state), c.label)
        if by == "registers":
            return (_registers(c), c.label)
        if by == "occupancy":
            return (_occupancy(c), c.label)
        return (c.round, c.attempt, c.slot)

    return key


class CandidateTableScreen(Screen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", id="table.close"),
        Binding("q", "close", "Back", show=False),
        Binding("s", "sort", "Sort", id="table.sort"),
        Binding("S", "reverse", "Reverse", id="table.reverse"),
    ]

    def __init__(self, view: SessionView) -> None:
        super().__init__()
        self.view = view
        self.by = "latency"
        self.reverse = False

    def compose(self) -> ComposeResult:
        yield Static(id="table-title")
        yield DataTable(id="candidate-table", cursor_type="row", zebra_stripes=True)
        yield Static(plain("Enter show · s sort by · S reverse · Esc back"), id="table-footnote")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        self.fill()
        table.focus()

    def rows(self) -> list[CandidateView]:
        return sorted(self.view.candidates.values(), key=sort_key(self.view, self.by), reverse=self.reverse)

    def fill(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for c in self.rows():
            figures = verdict_rows(c.judgement)
            table.add_row(
                plain(c.label),
                str(c.round),
                plain(self.view.word(c.state)),
                f"{c.median_us:.2f}" if c.median_us is not None else "",
                figures.get("registers", ""),
                figures.get("occupancy", ""),
                c.decision or "",
                key=c.label,
            )
        order = "descending" if self.reverse else "ascending"
        title = f"{len(self.view.candidates)} candidates, by {self.by} ({order})"
        self.query_one("#table-title", Static).update(plain(title))

    def action_sort(self) -> None:
        self.by = SORTS[(SORTS.index(self.by) + 1) % len(SORTS)]
        self.fill()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self.fill()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.dismiss(event.row_key.value)

    def action_close(self) -> None:
        self.dismiss(None)
