"""The sessions database schema and its migrations (PRAGMA user_version holds the version)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

SCHEMA_VERSION = 4

_V1 = """
CREATE TABLE sessions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at    REAL NOT NULL,
    updated_at    REAL NOT NULL,
    task          TEXT NOT NULL,
    task_folder   TEXT NOT NULL,
    task_fingerprint TEXT NOT NULL,
    model         TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    device        TEXT NOT NULL,
    arch          TEXT NOT NULL,
    status        TEXT NOT NULL,
    status_message TEXT NOT NULL DEFAULT '',
    best_label    TEXT
);
CREATE TABLE prompts (
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    round      INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    messages_json TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (session_id, round, attempt)
);
CREATE TABLE candidates (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  INTEGER NOT NULL REFERENCES sessions(id),
    label       TEXT NOT NULL,
    round       INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    slot        INTEGER NOT NULL,
    origin      TEXT NOT NULL,
    reply       TEXT,
    completion_json TEXT,
    status      TEXT,
    message     TEXT,
    median_us   REAL,
    judgement_json TEXT,
    decision    TEXT,
    decision_reason TEXT,
    created_at  REAL NOT NULL,
    judged_at   REAL,
    UNIQUE (session_id, label)
);
CREATE TABLE rounds (
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    round      INTEGER NOT NULL,
    summary_json TEXT NOT NULL,
    finished_at REAL NOT NULL,
    PRIMARY KEY (session_id, round)
);
"""

# v2: who is running a session (so a second instance does not run it too) and the session's
# token count, kept current for budgets and for `sessions`.
_V2 = """
ALTER TABLE sessions ADD COLUMN owner_pid INTEGER;
ALTER TABLE sessions ADD COLUMN owner_host TEXT;
ALTER TABLE sessions ADD COLUMN tokens_used INTEGER NOT NULL DEFAULT 0;
CREATE INDEX candidates_by_session ON candidates(session_id, round, attempt, slot);
"""

# v3: what a session needs to be resumed and reproduced elsewhere: the model server it talked to
# (an ollama host or an OpenAI-compatible base URL; never a key), and the environment it was judged
# in (cuda-llm, NVRTC, driver, GPU and clocks) as JSON.
_V3 = """
ALTER TABLE sessions ADD COLUMN server TEXT;
ALTER TABLE sessions ADD COLUMN environment_json TEXT;
"""


# v4: the machine and GPU each candidate was judged on (its last GPU stage), as columns a query can
# group by: on a Ray cluster one session's candidates run on many machines. Earlier candidates were
# judged on the machine that ran their session; their GPU is the one their judgement names.
_V4 = """
ALTER TABLE candidates ADD COLUMN node TEXT;
ALTER TABLE candidates ADD COLUMN gpu TEXT
"""


def _backfill_v4(db: sqlite3.Connection) -> None:
    rows = db.execute(
        "SELECT c.id, c.judgement_json, s.owner_host FROM candidates c JOIN sessions s ON s.id = c.session_id "
        "WHERE c.judgement_json IS NOT NULL"
    ).fetchall()
    for row_id, judgement_json, host in rows:
        try:
            device = json.loads(judgement_json).get("device")
        except (ValueError, AttributeError):
            device = None
        if device:  # judged on a GPU (compile-only judgements name none)
            db.execute("UPDATE candidates SET node = ?, gpu = ? WHERE id = ?", (host, device, row_id))


def _v4(db: sqlite3.Connection) -> None:
    _statements(_V4)(db)
    _backfill_v4(db)


def _statements(script: str) -> Callable[[sqlite3.Connection], None]:
    # Statement by statement: executescript() would commit on its own, outside the migration's
    # transaction, and a half-applied migration must roll back as a whole.
    def apply(db: sqlite3.Connection) -> None:
        for statement in script.split(";"):
            if statement.strip():
                db.execute(statement)

    return apply


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _statements(_V1),
    2: _statements(_V2),
    3: _statements(_V3),
    4: _v4,
}
