"""The event log: one line per notice, retry, decision and state change, oldest first."""

from __future__ import annotations

from textual.widgets import Log

from cuda_llm.app.state import SessionView


class EventLog(Log):
    def __init__(self, view: SessionView, **kwargs) -> None:
        super().__init__(max_lines=5000, auto_scroll=True, **kwargs)
        self.view = view
        self.border_title = "log"
        self._written = 0  # lines of view.log already in the widget

    def on_mount(self) -> None:
        self.show()

    def show(self) -> None:
        new = self.view.log[self._written :]
        if new:
            self._written += len(new)
            self.write_lines(new)
