"""Printing for the commands: aligned tables for people, JSON for scripts, one-line errors."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from cuda_llm.app.terminal import terminal_safe


class TerminalSafe(io.TextIOBase):
    """A text stream that shows every control character written to it as a visible escape
    (app/terminal.py). The headless commands print text that came from outside (replies, compiler
    logs, server errors); wrapped at the output layer, none of it can act on the terminal, whichever
    command prints it. JSON output is unchanged: json.dumps escapes control characters itself."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(terminal_safe(text))
        return len(text)

    def flush(self) -> None:
        self._inner.flush()

    def isatty(self) -> bool:
        return self._inner.isatty()

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # a property for TextIO's attribute
        return getattr(self._inner, "encoding", "utf-8")


@contextmanager
def terminal_safe_output() -> Iterator[None]:
    """stdout and stderr made TerminalSafe for the duration (the headless commands, not the TUI)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalSafe(out), TerminalSafe(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def to_jsonable(value: Any) -> Any:
    """Dataclasses, tuples, bytes and paths into plain JSON values (bytes are summarised, not dumped)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return str(value)
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def print_json(value: Any) -> None:
    json.dump(to_jsonable(value), sys.stdout, indent=2)
    sys.stdout.write("\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def say_on_stderr(line: str) -> None:
    """A line for the user on stderr, cuda-llm's own: a notice, what the engine waits for while a
    session opens (before its events flow), an error."""
    print(f"cuda-llm: {line}", file=sys.stderr, flush=True)


def error(message: str) -> None:
    """One clear line on stderr for something the user can fix."""
    say_on_stderr(message)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


# A verdict or progress line keeps to this many characters; the rest of a long message is shown below it
# (eval) or in --json.
VERDICT_CHARS = 110


def split_message(text: str, limit: int = VERDICT_CHARS) -> tuple[str, str]:
    """A long message as (a short head for the verdict line, the rest): the head ends at a sentence
    or a clause within `limit` characters, and no word of the text is shown twice."""
    first, _, after = text.strip().partition("\n")
    if len(first) <= limit:
        return first.rstrip(":"), after.strip()
    for mark in (". ", ": ", "; "):
        cut = first.find(mark, 0, limit)
        if cut > 0:
            head = first[: cut + (1 if mark == ". " else 0)]
            rest = first[cut + len(mark) :]
            return head, (rest + ("\n" + after if after else "")).strip()
    cut = first.rfind(" ", 0, limit)
    cut = cut if cut > 0 else limit
    return first[:cut] + " ...", ("... " + first[cut:].strip() + ("\n" + after if after else "")).strip()
