"""The latency pane: every timed candidate's latency by round, the best's line (app/widgets/latency.py)."""

from __future__ import annotations

from cuda_llm.app.panes.spec import Cell, HelpRow, Pane
from cuda_llm.app.state import LATENCY
from cuda_llm.app.widgets.latency import LatencyPane

PANE = Pane(
    id="latency-pane",
    title="Latency",
    key="5",
    shows=frozenset({LATENCY}),
    widget=LatencyPane,
    redraw=LatencyPane.show,
    wide=Cell(row=1, column=5, span=2),
    help=(HelpRow("+ / - / arrows / 0", "zoom", "zoom and pan the plot; 0 resets it"),),
    retheme=LatencyPane.apply_theme,
)
