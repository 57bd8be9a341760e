"""How a format error (engine/core/errors.py FormatError: a reply that breaks the contract, its
message sent back to the model as is) reads on one line."""

from __future__ import annotations


def headline(text: str) -> str:
    """The one line a status shows for a (possibly multi-line) error: its first line, complete. A
    first line that only introduces a list ("rejected before compiling (...):") takes the list's
    first item along, and says how many more there are; the whole text stays in the detail."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    first = lines[0]
    if first.endswith(":") and len(lines) > 1:
        items = lines[1:]
        more = f" (+{len(items) - 1} more)" if len(items) > 1 else ""
        first = f"{first} {items[0].removeprefix('- ')}{more}"
    return first
