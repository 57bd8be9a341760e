"""The event log: one entry per notice, retry, decision and state change, oldest first, wrapped to
the pane (a log line cut at the pane's edge loses the part that says what happened)."""

from __future__ import annotations

import textwrap
from typing import Unpack

from textual.widgets import Log

from cuda_llm.app.state import SessionView
from cuda_llm.app.terminal import terminal_safe
from cuda_llm.app.widgets.options import WidgetOptions

MAX_LINES = 5000
MIN_WRAP = 20  # narrower than this, lines are left as they are (the pane is being laid out)
CONTINUATION = "  "  # a wrapped entry's further lines are indented under its first


class EventLog(Log):
    def __init__(self, view: SessionView, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(max_lines=MAX_LINES, auto_scroll=True, **kwargs)
        self.view = view
        self.border_title = "7 log"
        self._written = 0  # entries of view.log already in the widget
        self._wrap = 0  # the width they were wrapped to
        self.wrap = True  # `w` turns it off: long entries then scroll sideways

    def on_mount(self) -> None:
        self.show()

    def toggle_wrap(self) -> bool:
        self.wrap = not self.wrap
        self._rewrite()
        return self.wrap

    def on_resize(self) -> None:
        if self._width_now() != self._wrap:
            self._rewrite()

    def _rewrite(self) -> None:
        self.clear()
        # Rewrapped for the new width: as much of the end as the log keeps.
        self._written = max(0, len(self.view.log) - MAX_LINES)
        self.show()

    def _width_now(self) -> int:
        if not self.wrap:
            return 0
        width = self.scrollable_content_region.width - 1  # room for the vertical scrollbar's column
        return width if width >= MIN_WRAP else 0

    def _wrapped(self, entry: str) -> list[str]:
        text = terminal_safe(entry)
        if not self._wrap:
            return [text]
        return textwrap.wrap(text, self._wrap, subsequent_indent=CONTINUATION, break_on_hyphens=False) or [""]

    def show(self) -> None:
        self._wrap = self._width_now()
        new = self.view.log[self._written :]
        if new:
            self._written += len(new)
            self.write_lines([line for entry in new for line in self._wrapped(entry)])
