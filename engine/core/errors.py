"""Errors a user (or a model) can cause, each carrying one clear line that says what to do.

The CLI prints `str(error)` and exits non-zero; the TUI shows it in a pane. Internal bugs are not
`UserError`s and keep their tracebacks.
"""

from __future__ import annotations

import re

# A colour or cursor code some libraries (Ray) put in their messages.
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class UserError(Exception):
    """Something the user can fix; `str()` is the one line to show them."""


class FormatError(UserError):
    """A reply or launch plan that breaks the contract; `str()` is written for the model."""


class TaskFileError(UserError):
    """A task folder that cannot be loaded. The message names the file, the field and the fault."""

    def __init__(self, path: object, field: str | None, problem: str) -> None:
        self.path = str(path)
        self.field = field
        self.problem = problem
        where = f"{self.path}: {field}: " if field else f"{self.path}: "
        super().__init__(where + problem)


class UnknownTaskError(UserError):
    def __init__(self, name: str, known: list[str]) -> None:
        import difflib

        self.name = name
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if close:
            hint = f" (did you mean {close[0]!r}?)"
        else:
            hint = " (" + ", ".join(known[:8]) + (" ..." if len(known) > 8 else "") + ")"
        super().__init__(f"unknown task {name!r}{hint}; `cuda-llm tasks` lists them")


class ExpressionError(ValueError):
    """An integer expression (a shape, a grid size, a plan argument) that cannot be evaluated."""


def describe(exc: BaseException) -> str:
    """The one line a person sees for an exception: a UserError's first line as written (it is
    addressed to them); anything else, its type and first line, so an internal error keeps its name.
    The whole text stays wherever the caller records it."""
    text = _ANSI.sub("", str(exc)).strip()
    line = text.splitlines()[0].strip() if text else ""
    if isinstance(exc, UserError) and line:
        return line
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__


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
