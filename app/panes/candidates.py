"""The candidates pane: the session's tree of candidates and its filter (app/widgets/candidates.py).
Its border title changes with the session (its id, following, the filter), so it puts the key in
front itself; it recolours on a theme change by redrawing (its marks take the status colours)."""

from __future__ import annotations

from cuda_llm.app.panes.spec import Cell, HelpRow, Pane
from cuda_llm.app.state import TREE
from cuda_llm.app.widgets.candidates import CandidatesPane


def put_key(pane: CandidatesPane, key: str) -> None:
    pane.title_key = key


PANE = Pane(
    id="candidates-pane",
    title="Candidates",
    key="6",
    shows=frozenset({TREE}),
    widget=CandidatesPane,
    redraw=CandidatesPane.show,
    wide=Cell(row=0, column=0),
    help=(HelpRow("enter", "show", "show the candidate in the other panes (the root: follow again)"),),
    retheme=CandidatesPane.show,
    put_key=put_key,
)
