"""The validation pane: the shown candidate's cases and mismatches (app/widgets/validation.py)."""

from __future__ import annotations

from cuda_llm.app.panes.spec import Cell, Pane
from cuda_llm.app.state import VALIDATION
from cuda_llm.app.widgets.validation import ValidationPane

PANE = Pane(
    id="validation-pane",
    title="Validation",
    key="4",
    shows=frozenset({VALIDATION}),
    widget=ValidationPane,
    redraw=ValidationPane.show,
    wide=Cell(row=1, column=3, span=2),
)
