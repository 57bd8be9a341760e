"""A session's number as a person writes it (`run --resume ID`, `export ID`, `replay:ID`), read before
any database is opened."""

from __future__ import annotations

from cuda_llm.engine.core.errors import UserError

# Session numbers are SQLite INTEGER keys: signed 64-bit. A larger number names no session, and the
# sqlite3 module cannot even send it in a query (OverflowError, a traceback, not "no session").
LARGEST_SESSION_ID = 2**63 - 1


def session_number(text: str) -> int:
    """`text` as a session number (1 or more); UserError saying it is not one otherwise."""
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if not 1 <= value <= LARGEST_SESSION_ID:
        raise UserError(f"{text!r} is not a session number; `cuda-llm sessions` lists them")
    return value
