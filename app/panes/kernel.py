"""The kernel pane: the shown candidate's source, plan and diffs (app/widgets/kernel.py). Between
120x30 and 140x40 it is the pane shown beside the focused one: what the other panes speak of."""

from __future__ import annotations

from cuda_llm.app.panes.spec import Cell, HelpRow, Pane
from cuda_llm.app.state import KERNEL
from cuda_llm.app.widgets.kernel import KernelPane

PANE = Pane(
    id="kernel-pane",
    title="Kernel",
    key="2",
    shows=frozenset({KERNEL}),
    widget=KernelPane,
    redraw=KernelPane.show,
    wide=Cell(row=0, column=4, span=3),
    help=(HelpRow("{next_view}", "view", "source, plan, diff vs parent, diff vs best"),),
    retheme=KernelPane.apply_theme,
    beside=True,
)
