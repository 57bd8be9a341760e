"""A pane of the run screen, declared once: what the registry (app/panes/registry.py) holds.

Everything the run screen does with a pane follows from its `Pane`: the tab and the border title
that name it and its key, the binding of that key, where it sits in the wide layout, the help it
adds, and its redraw: after an engine event the run screen redraws exactly the panes whose `shows`
meet the flags `SessionView.apply` returned (app/state.py), through the pane's `redraw`. Both are
required, so no pane can be registered that nothing ever redraws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from textual.widget import Widget

from cuda_llm.app.state import SessionView

W = TypeVar("W", bound=Widget)
W_co = TypeVar("W_co", bound=Widget, covariant=True)


class PaneClass(Protocol[W_co]):
    """How a pane's widget is made: from the session view it reads, with the id and class given."""

    def __call__(self, view: SessionView, *, id: str, classes: str) -> W_co: ...


@dataclass(frozen=True)
class Cell:
    """Where a pane sits in the wide layout's grid (140x40 and above): its row, the column it
    starts at, and how many columns it spans. The panes of a row must tile it, column 0 onwards."""

    row: int
    column: int
    span: int = 1


@dataclass(frozen=True)
class HelpRow:
    """A key the pane adds, for the help screen while it has the focus. `key` may name one of the
    pane's own actions in braces ("{next_view}"): the help shows the key it is on now."""

    key: str
    what: str
    text: str


@dataclass(frozen=True)
class Pane(Generic[W]):
    id: str  # the widget's id (its tab is tab-<id>)
    title: str  # the tab's title; lower case, the border's
    key: str  # the key that shows and focuses it (its binding id is run.pane<position>)
    shows: frozenset[str]  # the SessionView flags after which it redraws (app/state.py)
    widget: PaneClass[W]
    redraw: Callable[[W], None]  # how it redraws from the view
    wide: Cell
    help: tuple[HelpRow, ...] = ()
    # How it follows a theme change (None: colours from the theme's CSS variables follow by themselves).
    retheme: Callable[[W], None] | None = None
    # How its border title takes its key (None: "<key> <title>"): a title that changes with the session.
    put_key: Callable[[W, str], None] | None = None
    # Shown beside the focused pane between 120x30 and 140x40 (one pane at most says so).
    beside: bool = False

    def make(self, view: SessionView) -> W:
        widget = self.widget(view, id=self.id, classes="pane")
        if self.put_key is None:
            widget.border_title = f"{self.key} {self.title.lower()}"
        return widget

    def name_key(self, widget: W, key: str) -> None:
        """Put the key in force (the config may have moved it) in the pane's border title."""
        if self.put_key is not None:
            self.put_key(widget, key)
        else:
            widget.border_title = f"{key} {self.title.lower()}"


AnyPane = Pane[Any]
