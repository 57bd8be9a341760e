"""The compiler pane: the Compilation Verifier's verdict, its diagnostics (choosing one shows the line
in the kernel pane) and each kernel's registers, shared memory and spills."""

from __future__ import annotations

from typing import Unpack

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import DataTable, OptionList, Static
from textual.widgets.option_list import Option

from cuda_llm.app.messages import JumpToLine
from cuda_llm.app.state import SessionView
from cuda_llm.app.widgets.options import WidgetOptions
from cuda_llm.app.widgets.text import plain, set_text
from cuda_llm.engine.compile.result import CompileResult, Diagnostic


def diagnostic_text(d: Diagnostic) -> str:
    where = f"line {d.line}" + (f":{d.column}" if d.column else "") if d.line is not None else d.file
    return f"{where} {d.severity}: {d.message}"


class CompilerPane(Vertical):
    def __init__(self, view: SessionView, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.border_title = "3 compiler"
        self._targets: list[tuple[int, int]] = []

    def compose(self) -> ComposeResult:
        yield Static(id="compiler-summary", classes="pane-title")
        yield OptionList(id="compiler-diagnostics", compact=True)
        table: DataTable[object] = DataTable(
            id="compiler-resources", cursor_type="row", zebra_stripes=True, show_cursor=False
        )
        table.add_columns("kernel", "regs", "shared B", "stack B", "spills st/ld B", "occupancy")
        yield table

    def on_mount(self) -> None:
        self.show()

    def focus_target(self) -> Widget:
        return self.query_one("#compiler-diagnostics")

    def show(self) -> None:
        c = self.view.focused()
        j = c.judgement if c is not None else None
        summary = self.query_one("#compiler-summary", Static)
        options = self.query_one("#compiler-diagnostics", OptionList)
        table = self.query_one("#compiler-resources", DataTable)
        options.clear_options()
        table.clear()
        self._targets = []
        if c is None:
            set_text(summary, "no candidate yet")
            return
        if j is None and c.sent is not None:  # compiled, on the GPU: its compile, no verdict yet
            set_text(summary, f"{c.label}: {self._headline(c.sent.compile)}; being validated on the GPU")
            self._show_compile(c.sent.compile, (), {})
            return
        if j is None:
            set_text(summary, f"{c.label}: not compiled yet ({self.view.word(c.state)})")
            return
        result = j.compile
        if j.status == "format_error":
            set_text(summary, f"{c.label}: format error (not compiled): {j.message}")
            for line in j.detail.splitlines()[1:8]:
                options.add_option(Option(plain(line), disabled=True))
            return
        if result is None:
            set_text(summary, f"{c.label}: {j.message}")
            return
        set_text(summary, f"{c.label}: {self._headline(result, j.message)}")
        occupancy = {}
        if j.validation is not None:
            occupancy = {r.kernel: f"{r.occupancy:.0%}" for r in j.validation.resources}
        self._show_compile(result, j.warnings, occupancy)

    def _show_compile(self, result: CompileResult, warnings: tuple[str, ...], occupancy: dict[str, str]) -> None:
        options = self.query_one("#compiler-diagnostics", OptionList)
        table = self.query_one("#compiler-resources", DataTable)
        for d in result.diagnostics:
            self._targets.append((d.line or 0, d.column or 1))
            options.add_option(Option(plain(diagnostic_text(d)), id=f"diag-{len(self._targets) - 1}"))
        for w in warnings:
            options.add_option(Option(plain(f"note: {w}"), disabled=True))
        for k in result.kernels:
            spills = f"{k.spill_store_bytes}/{k.spill_load_bytes}"
            table.add_row(
                plain(k.name),
                str(k.registers),
                str(k.shared_bytes),
                str(k.stack_frame_bytes),
                spills,
                occupancy.get(k.name, ""),
            )

    @staticmethod
    def _headline(result: CompileResult, message: str = "") -> str:
        if not result.ok:
            return message
        nvrtc = ".".join(map(str, result.nvrtc_version))
        errors, warnings = len(result.errors), len(result.warnings)
        counts = f"{warnings} warning{'s' if warnings != 1 else ''}" if warnings or not errors else ""
        return f"compiled for {result.arch} in {result.elapsed_s:.2f} s (NVRTC {nvrtc}); {counts}".rstrip("; ")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or ""
        if not option_id.startswith("diag-"):
            return
        line, column = self._targets[int(option_id.removeprefix("diag-"))]
        if line:
            self.post_message(JumpToLine(line, column))
