"""Updating a Static only when its text changes: an update re-lays out an auto-sized widget, and
under a streaming session most updates would repeat what is already shown."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


def set_text(widget: Static, content: str | Text) -> None:
    key = content.markup if isinstance(content, Text) else content
    if getattr(widget, "_cuda_llm_shown", None) != key:
        widget._cuda_llm_shown = key  # type: ignore[attr-defined]
        widget.update(content)
