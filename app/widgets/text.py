"""Text from outside (replies, compiler logs, server errors, task files) on its way to a widget.

Two rules hold for every such text: it is never read as markup (a task summary's `x[i]` is an index,
not a style tag), and no control character in it reaches the terminal (a reply's `ESC ] 0 ;` would
retitle the window; engine/terminal.py shows them as visible escapes instead). `plain()` does both;
`set_text` updates a Static only when its text changes (an update re-lays out an auto-sized widget,
and under a streaming session most updates would repeat what is already shown).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from cuda_llm.engine.terminal import terminal_safe


def plain(text: str, style: str = "") -> Text:
    """`text` as a widget shows outside text: literally, and inert."""
    return Text(terminal_safe(text), style=style)


def set_text(widget: Static, content: str | Text) -> None:
    shown = plain(content) if isinstance(content, str) else content
    key = shown.markup
    if getattr(widget, "_cuda_llm_shown", None) != key:
        widget._cuda_llm_shown = key  # type: ignore[attr-defined]
        widget.update(shown)
