"""The log pane: the session's events as lines (app/widgets/eventlog.py)."""

from __future__ import annotations

from cuda_llm.app.panes.spec import Cell, Pane
from cuda_llm.app.state import LOG
from cuda_llm.app.widgets.eventlog import EventLog

PANE = Pane(
    id="event-log",
    title="Log",
    key="7",
    shows=frozenset({LOG}),
    widget=EventLog,
    redraw=EventLog.show,
    wide=Cell(row=1, column=0),
)
