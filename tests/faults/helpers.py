"""What the CPU fault tests share: snapshots of what a database holds (to prove nothing recorded was
lost), a recorder that takes one when a round ends, and resuming a session in process."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from session_driver import Recorder, run_session

from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.session import SessionOptions

Rows = dict[str, tuple[str | None, str | bytes | None]]


def snapshot(db: Path, session_id: int = 1) -> Rows:
    """label -> (status, reply) of every candidate of a session, read as another process would."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT label, status, reply FROM candidates WHERE session_id = ?", (session_id,))
        return {label: (status, reply) for label, status, reply in rows.fetchall()}
    finally:
        con.close()


def assert_kept(before: Rows, after: Rows) -> None:
    """Every candidate recorded before a fault is still there, with the same reply and verdict."""
    assert before, "the snapshot before the fault holds candidates"
    for label, (status, reply) in before.items():
        assert label in after, f"{label} was lost"
        assert after[label][1] == reply, f"the reply of {label} changed"
        if status is not None:  # a reply not yet judged may be judged later
            assert after[label][0] == status, f"the verdict of {label} changed"


def integrity(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def session_row(db: Path, session_id: int = 1) -> tuple[str, str]:
    """(status, status_message) as recorded."""
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT status, status_message FROM sessions WHERE id = ?", (session_id,)).fetchone()
    finally:
        con.close()


class RoundWatcher(Recorder):
    """A recorder that snapshots the database when round `after` ends, then calls `then()` (which
    injects the fault: stops a server, fills the disk...)."""

    def __init__(self, db: Path, after: int = 1, then: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.db, self.after, self.then = db, after, then
        self.before: Rows = {}

    def __call__(self, event: ev.Event) -> None:
        super().__call__(event)
        if isinstance(event, ev.RoundFinished) and event.round == self.after:
            self.before = snapshot(self.db, event.session_id)
            if self.then is not None:
                self.then()


def resume_options(db: Path, session_id: int = 1, switch_server: bool = False, **overrides) -> SessionOptions:
    """--resume ID --compile-only --db DB, with LoopSettings fields given explicitly (rounds=3), and
    --switch-server when the resume names another model server than the recorded one."""
    return SessionOptions(
        task=None,
        model=None,
        db=str(db),
        compile_only=True,
        arch="sm_90",
        resume=session_id,
        overrides=overrides,
        switch_server=switch_server,
    )


async def resume(
    db: Path,
    session_id: int = 1,
    host: str | None = None,
    base_url: str | None = None,
    switch_server: bool = False,
    **overrides,
):
    """Resume a session in process and run it to its end: (SessionResult, Recorder)."""
    opts = resume_options(db, session_id, switch_server, **overrides)
    return await run_session(opts, host=host, base_url=base_url)


def one_line(text: str) -> bool:
    return bool(text) and "\n" not in text.strip()


def short(text: str, tmp_path: Path) -> str:
    """A message for the report table, without the test's temporary folder."""
    return text.replace(str(tmp_path), "$TMP")
