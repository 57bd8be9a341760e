"""The prompt pane: the exact prompt sent for the focused candidate, then its reply as it streams."""

from __future__ import annotations

import textwrap

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Log, Static

from cuda_llm.app.state import SessionView
from cuda_llm.app.terminal import terminal_safe
from cuda_llm.app.widgets.text import set_text

# Prompts run to hundreds of lines; a reply is cut at max_tokens. Both fit well inside this.
MAX_LINES = 20_000
# Wrapped prompts kept for going back to them: a few candidates at a few widths (a long session
# would otherwise keep every prompt at every width the terminal ever had).
WRAPPED_KEPT = 16


class PromptPane(Vertical):
    """Plain text in a `Log`: appending streamed tokens costs a line refresh, not a re-layout."""

    def __init__(self, view: SessionView, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.border_title = "1 prompt"
        self._label: str | None = None  # whose reply the log is showing
        self._width = 0
        self._shown: tuple[str, int, int, int] | None = None  # (label, round, attempt, width) in the log
        self._reply_len = 0  # characters of the reply in the log
        self._wrapped: dict[tuple[int, int, int], list[str]] = {}  # prompt lines by (round, attempt, width)

    def compose(self) -> ComposeResult:
        yield Static(id="prompt-title", classes="pane-title")
        yield Log(id="prompt-log", max_lines=MAX_LINES, auto_scroll=True)

    def on_mount(self) -> None:
        self.show()

    def focus_target(self) -> Widget:
        return self.query_one("#prompt-log")

    def on_resize(self) -> None:
        width = self.query_one(Log).size.width
        if width and abs(width - self._width) > 2:
            self.show()

    def show(self) -> None:
        view, log = self.view, self.query_one(Log)
        c = view.focused()
        self._label = c.label if c else None
        self._width = log.size.width
        title = self.query_one("#prompt-title", Static)
        if c is None:
            log.clear()
            self._shown = None
            set_text(title, "waiting for the first request" if view.running else "no candidate")
            return
        set_text(
            title,
            f"{c.label}: round {c.round}" + (f", repair {c.attempt}" if c.attempt else "") + f" ({view.word(c.state)})",
        )
        shown = (c.label, c.round, c.attempt, self._width)
        reply = c.reply if not (c.error and not c.reply) else f"(no reply: {c.error})"
        if shown == self._shown and len(reply) >= self._reply_len:
            # The same candidate, further on: append what is new (a judgement only changes the title).
            if len(reply) > self._reply_len:
                log.write(terminal_safe(reply[self._reply_len :]))
                self._reply_len = len(reply)
            return
        self._shown = shown
        log.clear()
        log.write_lines(self._prompt_lines(c.round, c.attempt))
        # Log.write_line leaves the line open for the next write: the newline is written here, so
        # the reply starts on a line of its own.
        log.write(f"\n── reply {c.label} " + "─" * 20 + "\n")
        log.write(terminal_safe(reply))
        self._reply_len = len(reply)

    def _prompt_lines(self, round_: int, attempt: int) -> list[str]:
        """The prompt wrapped to the pane (cached: a prompt runs to hundreds of lines)."""
        key = (round_, attempt, self._width)
        lines = self._wrapped.get(key)
        if lines is None:
            wrap = max(40, self._width - 2) if self._width else 100
            lines = []
            for message in self.view.prompts.get((round_, attempt), ()):
                lines.append(f"── {message.role} " + "─" * 20)
                for raw in terminal_safe(message.content).splitlines():
                    lines.extend(textwrap.wrap(raw, wrap, replace_whitespace=False, drop_whitespace=False) or [""])
            self._wrapped[key] = lines
            while len(self._wrapped) > WRAPPED_KEPT:
                del self._wrapped[next(iter(self._wrapped))]
        return lines

    def append(self, label: str, text: str) -> None:
        if label == self._label and self._shown is not None:
            self.query_one(Log).write(terminal_safe(text))
            self._reply_len += len(text)
