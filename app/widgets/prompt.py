"""The prompt pane: the exact prompt sent for the focused candidate, then its reply as it streams."""

from __future__ import annotations

import textwrap

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Log, Static

from app.state import SessionView

# Prompts run to hundreds of lines; a reply is cut at max_tokens. Both fit well inside this.
MAX_LINES = 20_000


class PromptPane(Vertical):
    """Plain text in a `Log`: appending streamed tokens costs a line refresh, not a re-layout."""

    def __init__(self, view: SessionView, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.border_title = "prompt"
        self._label: str | None = None  # whose reply the log is showing
        self._width = 0

    def compose(self) -> ComposeResult:
        yield Static(id="prompt-title", classes="pane-title")
        yield Log(id="prompt-log", max_lines=MAX_LINES, auto_scroll=True)

    def on_mount(self) -> None:
        self.show()

    def on_resize(self) -> None:
        width = self.query_one(Log).size.width
        if width and abs(width - self._width) > 2:
            self.show()

    def show(self) -> None:
        view, log = self.view, self.query_one(Log)
        c = view.focused()
        self._label = c.label if c else None
        self._width = log.size.width
        wrap = max(40, self._width - 2) if self._width else 100
        log.clear()
        if c is None:
            title = "waiting for the first request" if view.running else "no candidate"
            self.query_one("#prompt-title", Static).update(title)
            return
        state = view.word(c.state)
        self.query_one("#prompt-title", Static).update(
            f"{c.label}: round {c.round}" + (f", repair {c.attempt}" if c.attempt else "") + f" ({state})"
        )
        prompt = view.prompts.get((c.round, c.attempt), ())
        lines: list[str] = []
        for message in prompt:
            lines.append(f"── {message.role} " + "─" * 20)
            for raw in message.content.splitlines():
                lines.extend(textwrap.wrap(raw, wrap, replace_whitespace=False, drop_whitespace=False) or [""])
        lines.append(f"── reply {c.label} " + "─" * 20)
        log.write_lines(lines)
        if c.error and not c.reply:
            log.write_line(f"(no reply: {c.error})")
        else:
            log.write(c.reply)

    def append(self, label: str, text: str) -> None:
        if label == self._label:
            self.query_one(Log).write(text)
