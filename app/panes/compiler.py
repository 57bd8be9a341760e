"""The compiler pane: the shown candidate's diagnostics and resources (app/widgets/compiler.py)."""

from __future__ import annotations

from cuda_llm.app.panes.spec import Cell, HelpRow, Pane
from cuda_llm.app.state import COMPILER
from cuda_llm.app.widgets.compiler import CompilerPane

PANE = Pane(
    id="compiler-pane",
    title="Compiler",
    key="3",
    shows=frozenset({COMPILER}),
    widget=CompilerPane,
    redraw=CompilerPane.show,
    wide=Cell(row=1, column=1, span=2),
    help=(HelpRow("enter", "jump", "show the diagnostic's line in the kernel pane"),),
)
