"""Search inside a pane: the text widget a pane reads from, and the next or previous line holding a
term (case-insensitive), shown by scrolling there (a Log) or selecting it (a TextArea).

A Log being searched holds still (it no longer follows its end, so a resize or a streamed token
cannot scroll the match away) and shows every occurrence of the term in reverse video, until the
search ends (Esc in the run screen, or the pane showing another text)."""

from __future__ import annotations

from rich.highlighter import Highlighter
from rich.text import Text
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


MATCH_STYLE = "reverse"  # reverse video: visible in every theme, light or dark


class TermHighlighter(Highlighter):
    """Every occurrence of the search term in a Log's lines, case-insensitive."""

    def __init__(self, term: str) -> None:
        self.term = term

    def highlight(self, text: Text) -> None:
        text.highlight_words([self.term], MATCH_STYLE, case_sensitive=False)


def searching(widget: Log) -> bool:
    """Whether a search holds the Log on a match (it then does not scroll to its end)."""
    return isinstance(widget.highlighter, TermHighlighter) and widget.highlight


def end_search(widget: Log, follow: bool) -> None:
    """The Log's matches no longer highlighted; it follows its end again when `follow`."""
    if not searching(widget):
        return
    widget.highlight = False
    widget._search_line = -1  # type: ignore[attr-defined]  # our mark on the widget
    widget.auto_scroll = follow
    widget._render_line_cache.clear()
    widget.refresh()


def _hold(widget: Log, term: str) -> None:
    if not (searching(widget) and isinstance(widget.highlighter, TermHighlighter) and widget.highlighter.term == term):
        widget.highlighter = TermHighlighter(term)
        widget.highlight = True
        widget._render_line_cache.clear()  # the lines drawn before, without the highlight
        widget.refresh()
    widget.auto_scroll = False


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
        _hold(widget, term)
        widget._search_line = line  # type: ignore[attr-defined]  # our mark on the widget
        widget.scroll_to(y=max(0, line - widget.size.height // 2), animate=False, immediate=True)
    return hits.index(line) + 1, len(hits), line
