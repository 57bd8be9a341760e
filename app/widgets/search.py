"""Search inside a pane: the text widget a pane reads from, and the next or previous line holding a
term (case-insensitive), shown by scrolling there (a Log) or selecting it (a TextArea)."""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Log, TextArea
from textual.widgets.text_area import Selection


def search_target(pane: Widget) -> Log | TextArea | None:
    """The pane's searchable text: itself when it is a Log, else its focus target or first text widget."""
    if isinstance(pane, Log | TextArea):
        return pane
    focus = getattr(pane, "focus_target", None)
    widget = focus() if callable(focus) else None
    if isinstance(widget, Log | TextArea):
        return widget
    return next(iter(pane.query("Log, TextArea").results()), None)  # type: ignore[return-value]  # the query names Log and TextArea only


def _lines(widget: Log | TextArea) -> list[str]:
    return list(widget.lines) if isinstance(widget, Log) else widget.text.splitlines()


def _current(widget: Log | TextArea) -> int:
    if isinstance(widget, TextArea):
        return widget.selection.end[0]
    return getattr(widget, "_search_line", -1)


def find_match(widget: Log | TextArea, term: str, step: int, from_top: bool = False) -> tuple[int, int, int] | None:
    """Move to the next (step 1) or previous (-1) line holding `term`, wrapping around; (which match,
    how many, the line), or None when there is none."""
    needle = term.lower()
    hits = [i for i, line in enumerate(_lines(widget)) if needle in line.lower()]
    if not hits:
        return None
    here = -1 if from_top else _current(widget)
    if step > 0:
        line = next((i for i in hits if i > here), hits[0])
    else:
        line = next((i for i in reversed(hits) if i < here), hits[-1])
    if isinstance(widget, TextArea):
        col = _lines(widget)[line].lower().index(needle)
        widget.selection = Selection((line, col), (line, col + len(term)))
        widget.scroll_cursor_visible(center=True)
    else:
        widget._search_line = line  # type: ignore[attr-defined]  # our mark on the widget
        widget.scroll_to(y=max(0, line - widget.size.height // 2), animate=False)
    return hits.index(line) + 1, len(hits), line
