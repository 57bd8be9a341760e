"""The prompt pane: the prompt sent and the reply as it streams (app/widgets/prompt.py)."""

from __future__ import annotations

from cuda_llm.app.panes.spec import Cell, Pane
from cuda_llm.app.state import PROMPT
from cuda_llm.app.widgets.prompt import PromptPane

PANE = Pane(
    id="prompt-pane",
    title="Prompt",
    key="1",
    shows=frozenset({PROMPT}),
    widget=PromptPane,
    redraw=PromptPane.show,
    wide=Cell(row=0, column=1, span=3),
)
