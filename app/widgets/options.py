"""What a pane or bar passes on to Textual's widget unchanged: its name, id, classes and whether it
starts disabled (Widget.__init__'s keyword arguments)."""

from __future__ import annotations

from typing import TypedDict


class WidgetOptions(TypedDict, total=False):
    name: str | None
    id: str | None
    classes: str | None
    disabled: bool
