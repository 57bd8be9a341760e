"""Text from outside (replies, compiler logs, server errors, task files) on its way to a widget.

Two rules hold for every such text: it is never read as markup (a task summary's `x[i]` is an index,
not a style tag), and no control character in it reaches the terminal (a reply's `ESC ] 0 ;` would
retitle the window; app/terminal.py shows them as visible escapes instead). `plain()` does both;
`set_text` updates a Static only when its text changes (an update re-lays out an auto-sized widget,
and under a streaming session most updates would repeat what is already shown). Behind both,
`OutsideTextFilter`, the last filter every rendered line passes, removes any control character a
widget let through.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.color import Color
from textual.filter import LineFilter
from textual.widgets import Static

from cuda_llm.app.terminal import has_controls, terminal_safe, without_controls


class OutsideTextFilter(LineFilter):
    """Removes every control character (ESC, BEL, C1 controls such as the 8-bit CSI, bidi overrides)
    from the text of each rendered line, whatever widget drew it. Replies, compiler logs, server
    errors and model names reach many panes, and Textual writes the text of a line to the terminal as
    it is: an ESC from a reply would retitle the window, clear the screen or draw a forged verdict.
    Filtered here, at the one place every pane, notification and dialog passes through, no widget
    can forget it. The characters are zero-width to the layout, so removing them shifts nothing."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        out = []
        for segment in segments:
            text, style, control = segment
            if control is None and has_controls(text):
                text = without_controls(text)
                if not text:
                    continue
                segment = Segment(text, style)
            out.append(segment)
        return out


def plain(text: str, style: str = "") -> Text:
    """`text` as a widget shows outside text: literally, and inert."""
    return Text(terminal_safe(text), style=style)


def set_text(widget: Static, content: str | Text) -> None:
    shown = plain(content) if isinstance(content, str) else content
    key = shown.markup
    if getattr(widget, "_cuda_llm_shown", None) != key:
        widget._cuda_llm_shown = key  # type: ignore[attr-defined]  # our mark on the widget
        widget.update(shown)
