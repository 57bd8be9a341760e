"""The prompt pane: the exact prompt sent for the focused candidate, then its reply as it streams.

Both are wrapped to the pane by default (`w` turns it off: long lines then scroll sideways); the
reply is wrapped as it arrives, so a streaming reply costs a line refresh, never a re-layout. While
the session is followed the pane keeps the newest text in view; `f` off, it holds still."""

from __future__ import annotations

import textwrap
from typing import Unpack

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Log, Static

from cuda_llm.app.state import SessionView
from cuda_llm.app.terminal import terminal_safe
from cuda_llm.app.widgets.options import WidgetOptions
from cuda_llm.app.widgets.search import end_search, searching
from cuda_llm.app.widgets.text import set_text

# Prompts run to hundreds of lines; a reply is cut at max_tokens. Both fit well inside this.
MAX_LINES = 20_000
# Wrapped prompts kept for going back to them: a few candidates at a few widths (a long session
# would otherwise keep every prompt at every width the terminal ever had).
WRAPPED_KEPT = 16


class PromptPane(Vertical):
    """Plain text in a `Log`: appending streamed tokens costs a line refresh, not a re-layout."""

    def __init__(self, view: SessionView, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.border_title = "1 prompt"
        self._label: str | None = None  # whose reply the log is showing
        self._width = 0
        self._shown: tuple[str, int, int, int] | None = None  # (label, round, attempt, width) in the log
        self._reply_len = 0  # characters of the reply in the log
        self._wrapped: dict[tuple[int, int, int], list[str]] = {}  # prompt lines by (round, attempt, width)
        self.wrap = True
        self._column = 0  # characters on the log's last line (where the next reply text goes)

    def compose(self) -> ComposeResult:
        yield Static(id="prompt-title", classes="pane-title")
        yield Log(id="prompt-log", max_lines=MAX_LINES, auto_scroll=True)

    def on_mount(self) -> None:
        self.show()

    def focus_target(self) -> Widget:
        return self.query_one("#prompt-log")

    def on_resize(self) -> None:
        log = self.query_one(Log)
        width = log.size.width
        if width and abs(width - self._width) > 2:
            self.show()
        if log.auto_scroll:  # a shorter pane (the status line took a second row) keeps the end in view
            log.scroll_end(animate=False, immediate=False)

    def toggle_wrap(self) -> bool:
        self.wrap = not self.wrap
        self._shown = None  # written again, wrapped or not
        self.show()
        return self.wrap

    def _wrap_width(self) -> int:
        return max(20, self._width - 2) if self._width else 100

    def _write(self, log: Log, text: str) -> None:
        """Reply text, wrapped at the pane's width when wrapping is on."""
        text = terminal_safe(text)
        if not self.wrap:
            log.write(text)
            return
        width, out = self._wrap_width(), []
        for i, part in enumerate(text.split("\n")):
            if i:
                out.append("\n")
                self._column = 0
            while part:
                room = width - self._column
                if len(part) <= room:
                    out.append(part)
                    self._column += len(part)
                    break
                cut = part.rfind(" ", 0, room + 1)
                cut = cut + 1 if cut > room // 2 else room  # at a space when one is near, else mid-word
                out.append(part[:cut] + "\n")
                part, self._column = part[cut:], 0
        log.write("".join(out))

    def show(self) -> None:
        view, log = self.view, self.query_one(Log)
        c = view.focused()
        if c is None or self._shown is None or c.label != self._shown[0]:
            end_search(log, view.follow)  # another text: the matches of the last search are gone
        log.auto_scroll = view.follow and not searching(log)
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
                self._write(log, reply[self._reply_len :])
                self._reply_len = len(reply)
            return
        self._shown = shown
        log.clear()
        log.write_lines(self._prompt_lines(c.round, c.attempt))
        # Log.write_line leaves the line open for the next write: the newline is written here, so
        # the reply starts on a line of its own.
        log.write(f"\n── reply {c.label} " + "─" * 20 + "\n")
        self._column = 0
        self._write(log, reply)
        self._reply_len = len(reply)

    def _prompt_lines(self, round_: int, attempt: int) -> list[str]:
        """The prompt wrapped to the pane (cached: a prompt runs to hundreds of lines)."""
        key = (round_, attempt, self._width if self.wrap else 0)
        lines = self._wrapped.get(key)
        if lines is None:
            wrap = self._wrap_width()
            lines = []
            for message in self.view.prompts.get((round_, attempt), ()):
                lines.append(f"── {message.role} " + "─" * 20)
                for raw in terminal_safe(message.content).splitlines():
                    if not self.wrap:
                        lines.append(raw)
                        continue
                    lines.extend(textwrap.wrap(raw, wrap, replace_whitespace=False, drop_whitespace=False) or [""])
            self._wrapped[key] = lines
            while len(self._wrapped) > WRAPPED_KEPT:
                del self._wrapped[next(iter(self._wrapped))]
        return lines

    def append(self, label: str, text: str) -> None:
        if label == self._label and self._shown is not None:
            self._write(self.query_one(Log), text)
            self._reply_len += len(text)
