"""The validation pane: the Function Validator's verdict, a table of mismatches (index as
coordinates), the count of outputs never written, and the failure's pattern."""

from __future__ import annotations

import math
from typing import Unpack

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import DataTable, Static

from cuda_llm.app.state import CandidateView, SessionView
from cuda_llm.app.widgets.options import WidgetOptions
from cuda_llm.app.widgets.text import plain, set_text
from cuda_llm.engine.gpu.protocol import ValidationReport

COLUMNS = ("size", "seed", "output", "index", "expected", "got", "abs err", "rel err")


def number(x: float) -> str:
    if math.isnan(x):
        return "NaN (unwritten)"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.6g}"


def split_case(case: str) -> tuple[str, str]:
    """'n=1000 seed 2' -> ('n=1000', '2')."""
    size, sep, seed = case.rpartition(" seed ")
    return (size, seed) if sep else (case, "")


def report_lines(report: ValidationReport) -> list[str]:
    lines = [f"{report.verdict}: {report.summary}"]
    if report.cases:
        passed = sum(c.passed for c in report.cases)
        unwritten = sum(c.unwritten for c in report.cases)
        lines.append(f"cases passed: {passed} of {len(report.cases)} · unwritten outputs: {unwritten}")
        problems = [f"{c.label}: {c.problem}" for c in report.cases if c.problem]
        lines += problems[:3]
    if report.fault is not None:
        f = report.fault
        where = f" in {f.case}" if f.case else ""
        lines.append(f"{f.kind}{where}: {f.error}: {f.message}")
    lines += [f"pattern: {p}" for p in report.patterns]
    return lines


def not_validated(view: SessionView, c: CandidateView) -> str:
    """Why a candidate shows no validation report: on the GPU now (its phase, a step with no verdict),
    compile-only mode's "compiled" (a status: the only way a candidate is compiled and not run), a
    failure before the GPU, or not that far yet."""
    j = c.judgement
    if c.phase == "validating":
        return "compiled; being validated on the GPU"
    if j is not None and j.status == "compiled":
        return "compile-only: compiled and bound, not run (no GPU)"
    if j is not None and j.failed:
        return f"not run: {view.word(j.status)}"
    return f"not validated yet ({view.word(c.state)})"


class ValidationPane(Vertical):
    def __init__(self, view: SessionView, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.border_title = "4 validation"

    def compose(self) -> ComposeResult:
        yield Static(id="validation-summary", classes="pane-title")
        table: DataTable[object] = DataTable(id="mismatches", cursor_type="row", zebra_stripes=True)
        table.add_columns(*COLUMNS)
        yield table

    def on_mount(self) -> None:
        self.show()

    def focus_target(self) -> Widget:
        return self.query_one("#mismatches")

    def show(self) -> None:
        c = self.view.focused()
        j = c.judgement if c is not None else None
        summary = self.query_one("#validation-summary", Static)
        table = self.query_one("#mismatches", DataTable)
        table.clear()
        if c is None:
            set_text(summary, "no candidate yet")
            return
        if j is None or j.validation is None:
            set_text(summary, f"{c.label}: {not_validated(self.view, c)}")
            return
        counters = [j.counters.line()] if j.counters is not None else []  # what limits it (engine/counters)
        set_text(summary, f"{c.label} " + "\n".join(report_lines(j.validation) + counters))
        for m in j.validation.mismatches:
            size, seed = split_case(m.case)
            index = "(" + ", ".join(map(str, m.index)) + ")"
            cells = (
                size,
                seed,
                m.output,
                index,
                number(m.expected),
                number(m.got),
                number(m.abs_err),
                number(m.rel_err),
            )
            table.add_row(*(plain(cell) for cell in cells))
