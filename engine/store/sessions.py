"""Sessions in SQLite (WAL): every prompt, reply, judgement and decision, written as it happens.

A reply is written the moment it arrives and its judgement the moment it is made, so a crash or a
kill -9 loses at most the requests still in flight, and `--resume` continues from what is here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_llm.engine.core import serialize
from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.paths import user_data_dir
from cuda_llm.engine.core.settings import CompileSettings, LoopSettings
from cuda_llm.engine.gpu.protocol import device_label
from cuda_llm.engine.judge.judgement import Judgement
from cuda_llm.engine.judge.output_caps import capped_compile, cut_text
from cuda_llm.engine.llm.base import Completion, Message, RequestKey
from cuda_llm.engine.store.owner import owner_alive
from cuda_llm.engine.store.schema import MIGRATIONS, SCHEMA_VERSION

# A second process waits this long for a lock before giving up with a message.
BUSY_TIMEOUT_MS = 5000
# How often a process asks again to turn a new file to WAL while another holds it (SQLite does not
# wait for that one itself): short, as the other's hold lasts milliseconds.
WAL_RETRY_S = 0.02


class StoreError(UserError):
    """The database cannot be read or written (disk full, read-only, newer schema...)."""


def default_db_path() -> Path:
    return user_data_dir() / "sessions.sqlite3"


# A session stopped because the app crashed has this in front of its status message, then the crash.
CRASH_PREFIX = "crashed: "


@dataclass(frozen=True)
class SessionRecord:
    id: int
    created_at: float
    updated_at: float
    task: str
    task_folder: str
    task_fingerprint: str
    model: str
    settings: LoopSettings
    device: str
    arch: str
    status: str  # running | paused | stopped | finished | failed
    status_message: str
    best_label: str | None
    tokens_used: int
    owner_pid: int | None
    owner_host: str | None
    # The model server the session talked to (ollama host, OpenAI-compatible base URL), None for
    # sessions recorded before it was kept and for providers with no server (replay, manual).
    server: str | None = None
    # Versions and device facts needed to reproduce the session's figures (JSON object).
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def compile_only(self) -> bool:
        """Whether the session judged with no GPU, as its environment records it. A session recorded
        before the environment was kept (schema 3) has only its device label: compile-only where that
        is the label engine/gpu/protocol.py builds with no device."""
        recorded = self.environment.get("compile_only")
        if recorded is not None:
            return bool(recorded)
        return self.device == device_label(None, self.arch)

    @property
    def shown_status(self) -> str:
        """The status to show: `interrupted` for a session marked running whose process on this
        machine is gone (killed, or the machine restarted); it continues with --resume."""
        if (
            self.status == "running"
            and self.owner_pid
            and self.owner_host == socket.gethostname()
            and not owner_alive(self.owner_pid, self.updated_at)
        ):
            return "interrupted"
        return self.status

    @property
    def crashed(self) -> bool:
        """Stopped because the app died with it: app/running.py records the crash after CRASH_PREFIX."""
        return self.status_message.startswith(CRASH_PREFIX)

    @property
    def listed_status(self) -> str:
        """shown_status, with "(crashed)" after it where the app died with the session, as the start
        screen lists sessions (the headless `sessions` and `export` give shown_status alone)."""
        return f"{self.shown_status} (crashed)" if self.crashed else self.shown_status


@dataclass(frozen=True)
class CandidateRecord:
    label: str
    round: int
    attempt: int
    slot: int
    origin: str
    reply: str | None
    completion: Completion | None
    status: str | None  # None: received, not yet judged
    message: str | None
    median_us: float | None
    judgement: Judgement | None
    decision: str | None
    decision_reason: str | None
    node: str | None = None  # the machine its last GPU stage ran on (None: not run on a GPU)
    gpu: str | None = None  # and the GPU there: "NVIDIA H200 #1"

    @property
    def key(self) -> RequestKey:
        return RequestKey(self.round, self.attempt, self.slot)


def _storable(text: str | None) -> str | bytes | None:
    """Text as SQLite can hold it. A reply may carry lone surrogates (a server's \\udcff escape:
    text no UTF-8 can spell), which sqlite3 refuses to bind; such a reply is kept exactly, as the
    bytes Python's surrogatepass writes, and read back by `_text`."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def _text(value: str | bytes | None) -> str | None:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _column(row: sqlite3.Row, name: str, default: Any = None) -> Any:
    """A column that a file of an older schema, opened read-only and so never migrated, may lack."""
    names = row.keys()  # (a Row's `in` looks at its values, not its column names)
    return row[name] if name in names else default


def _completion(stored: str | None, reply: str | None) -> Completion | None:
    """A completion as recorded, its text taken from the reply column (older rows hold it twice)."""
    if not stored:
        return None
    completion = serialize.load(Completion, json.loads(stored))
    return dataclasses.replace(completion, text=reply) if reply is not None else completion


def _unwritable(path: Path) -> bool:
    """An existing database that this process may not write, or whose folder it may not write
    (SQLite keeps its -wal and -shm files beside it)."""
    return path.is_file() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _wrap(exc: sqlite3.Error, path: Path) -> StoreError:
    text = str(exc)
    if "full" in text:
        return StoreError(
            f"cannot write the session database {path}: the disk is full; free space and "
            "resume the session (nothing recorded so far is lost)"
        )
    if "malformed" in text or "disk i/o error" in text.lower() or "not a database" in text:
        return StoreError(
            f"the session database {path} is damaged ({text}): `sqlite3 {path} .recover` saves what it "
            "holds; use --db to start another file"
        )
    if "unable to open" in text and path.is_file() and not os.access(path, os.R_OK):
        # Not readable at all: no command can use it (a read-only hint would send the person to the
        # very command that just failed).
        return StoreError(
            f"cannot read the session database {path}: permission denied; fix its permissions "
            f"(`ls -l {path}`), or give another file with --db"
        )
    if "readonly" in text or "read-only" in text or ("unable to open" in text and _unwritable(path)):
        return StoreError(
            f"the session database {path} is read-only (read-only media, or a folder without write "
            "permission): `cuda-llm sessions` and `export` still read it; to run or resume a session, copy "
            "it somewhere writable and give that file with --db"
        )
    if "unable to open" in text:
        return StoreError(f"cannot open the session database {path} ({text}): check the folder, or use --db")
    if "locked" in text or "busy" in text:
        return StoreError(
            f"the session database {path} is locked by another cuda-llm process; try again when it is done, or use --db"
        )
    return StoreError(f"session database {path}: {text}")


# The tables whose rows belong to one session (deleted with it).
SESSION_TABLES = ("prompts", "candidates", "rounds")


class SessionStore:
    def __init__(self, path: Path | str | None = None, *, read_only: bool = False) -> None:
        """`read_only`: for the commands that only read (sessions, export): nothing is created,
        written or migrated, and a file on read-only media or without write permission opens."""
        self.path = Path(path) if path else default_db_path()
        self.read_only = read_only
        # The bound on what one session's judgements add (engine/core/settings.py), and what each
        # session holds so far (summed once per session, then counted as judgements are written).
        self.output_limits = CompileSettings()
        self._output_bytes: dict[int, int] = {}
        try:
            if read_only:
                self.db = self._connect_read_only()
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(
                    self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False
                )
            self.db.row_factory = sqlite3.Row
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # Before anything is written (WAL mode is written into the file's header): a file this
            # version must not touch is refused as it was found.
            self._check_version()
            if not read_only:
                self._enter_wal()
                self.db.execute("PRAGMA synchronous = NORMAL")
                self.db.execute("PRAGMA foreign_keys = ON")
                self._migrate()
        except OSError as exc:
            self._close_quietly()
            raise StoreError(f"cannot open the session database {self.path} ({exc.strerror}): use --db") from None
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            if "file is not a database" in str(exc):
                raise StoreError(
                    f"{self.path} is not a cuda-llm session database; use --db to choose another file"
                ) from None
            raise _wrap(exc, self.path) from None
        except BaseException:
            self._close_quietly()
            raise

    def _connect_read_only(self) -> sqlite3.Connection:
        if self.path.exists() and not self.path.is_file():
            # A folder or a device can never hold one: "recorded there once one runs" would be untrue.
            what = "a folder" if self.path.is_dir() else "a device or special file"
            raise StoreError(f"{self.path} is {what}, not a session database: give a database file with --db")
        blocked = next((p for p in self.path.parents if p.exists() and not p.is_dir()), None)
        if blocked is not None:
            raise StoreError(
                f"no session database can be at {self.path}: {blocked} is a file, not a folder "
                "(check --db, or CUDA_LLM_HOME)"
            )
        if not self.path.is_file():
            raise StoreError(
                f"no session database at {self.path}: sessions are recorded there once one runs (or use --db)"
            )
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        try:
            db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            return db
        except sqlite3.OperationalError:
            # On read-only media SQLite cannot create the WAL index next to a WAL-mode file; an
            # immutable open reads the file as it is (nothing else can be writing there anyway).
            db.close()
            return sqlite3.connect(f"{uri}&immutable=1", uri=True, isolation_level=None, check_same_thread=False)

    def _close_quietly(self) -> None:
        db = getattr(self, "db", None)
        if db is not None:
            with suppress(sqlite3.Error):
                db.close()

    def close(self) -> None:
        self.db.close()

    # ---- plumbing ----------------------------------------------------------------------------
    def _check_version(self) -> None:
        # One statement, so one snapshot: read apart, another process creating the same new file
        # could commit its tables between the two reads, and the file would look like another
        # program's (tables, no schema version).
        version, tables = self.db.execute(
            "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)"
        ).fetchone()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer cuda-llm (schema {version}; this one "
                f"knows {SCHEMA_VERSION}); upgrade cuda-llm or use --db"
            )
        if version == 0 and tables:
            raise StoreError(
                f"{self.path} is a database of another program, not a cuda-llm session database; "
                "use --db to choose another file"
            )

    def _enter_wal(self) -> None:
        """Turn the file to WAL (a no-op once it is). SQLite answers "locked" at once, without its
        busy wait, when another connection holds the file meanwhile: two runs started together on a
        new database would see one of them refused. So this waits as any other lock is waited for."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self.db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() > deadline:
                    raise
                time.sleep(WAL_RETRY_S)

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with self._tx():
                # Another process opening the same new file may have migrated it meanwhile.
                if self.db.execute("PRAGMA user_version").fetchone()[0] >= target:
                    continue
                MIGRATIONS[target](self.db)
                self.db.execute(f"PRAGMA user_version = {target}")

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                # SQLite rolls the transaction back by itself on some errors (SQLITE_FULL among
                # them); a ROLLBACK then fails and would hide the error that matters ("disk full").
                if self.db.in_transaction:
                    with suppress(sqlite3.Error):
                        self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise _wrap(exc, self.path) from None

    def _write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        with self._tx() as db:
            return db.execute(sql, params)

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """A read, all rows fetched, any SQLite error (a damaged page, a vanished file) made one
        clear StoreError: reads run long after the open that checked the file."""
        try:
            return self.db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise _wrap(exc, self.path) from None

    def _row(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def integrity_ok(self) -> bool:
        return self.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    # ---- sessions ------------------------------------------------------------------------------
    def create_session(
        self,
        task: str,
        task_folder: str,
        task_fingerprint: str,
        model: str,
        settings: LoopSettings,
        device: str,
        arch: str,
    ) -> int:
        now = time.time()
        cur = self._write(
            "INSERT INTO sessions (created_at, updated_at, task, task_folder, task_fingerprint, model, "
            "settings_json, device, arch, status, owner_pid, owner_host) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
            (
                now,
                now,
                task,
                task_folder,
                task_fingerprint,
                model,
                json.dumps(serialize.dump(settings)),
                device,
                arch,
                os.getpid(),
                socket.gethostname(),
            ),
        )
        assert cur.lastrowid is not None  # set by the INSERT just made
        return int(cur.lastrowid)

    def _row_to_session(self, row: sqlite3.Row) -> SessionRecord:
        return SessionRecord(
            id=row["id"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            task=row["task"],
            task_folder=row["task_folder"],
            task_fingerprint=row["task_fingerprint"],
            model=row["model"],
            settings=serialize.load(LoopSettings, json.loads(row["settings_json"])),
            device=row["device"],
            arch=row["arch"],
            status=row["status"],
            status_message=row["status_message"],
            best_label=row["best_label"],
            tokens_used=_column(row, "tokens_used", 0),
            owner_pid=_column(row, "owner_pid"),
            owner_host=_column(row, "owner_host"),
            server=_column(row, "server"),
            environment=json.loads(_column(row, "environment_json") or "{}"),
        )

    def session(self, session_id: int) -> SessionRecord:
        row = self._row("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if row is None:
            raise StoreError(f"no session {session_id} in {self.path}; `cuda-llm sessions` lists them")
        return self._row_to_session(row)

    def sessions(self, limit: int = 100) -> list[SessionRecord]:
        rows = self._rows("SELECT * FROM sessions ORDER BY id DESC LIMIT ?", (limit,))
        return [self._row_to_session(r) for r in rows]

    def delete_sessions(self, session_ids: Sequence[int]) -> list[int]:
        """Remove sessions and everything recorded for them; returns the ids that existed. A session
        that a live process is running is refused (StoreError), before anything is removed."""
        found = [rec for sid in dict.fromkeys(session_ids) if (rec := self._maybe_session(sid)) is not None]
        here = socket.gethostname()
        for rec in found:
            if (
                rec.status == "running"
                and rec.owner_pid
                and rec.owner_pid != os.getpid()
                and rec.owner_host == here
                and owner_alive(rec.owner_pid, rec.updated_at)
            ):
                raise StoreError(
                    f"session {rec.id} is being run by process {rec.owner_pid}; stop it first (nothing was removed)"
                )
        ids = [rec.id for rec in found]
        if ids:
            marks = ", ".join("?" * len(ids))
            with self._tx() as db:
                for table in SESSION_TABLES:
                    db.execute(f"DELETE FROM {table} WHERE session_id IN ({marks})", ids)
                db.execute(f"DELETE FROM sessions WHERE id IN ({marks})", ids)
        return ids

    def sessions_before(self, cutoff: float) -> list[int]:
        """The ids of sessions last written before `cutoff` (seconds since the epoch)."""
        return [r["id"] for r in self._rows("SELECT id FROM sessions WHERE updated_at < ? ORDER BY id", (cutoff,))]

    def _maybe_session(self, session_id: int) -> SessionRecord | None:
        row = self._row("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return self._row_to_session(row) if row is not None else None

    def update_session(self, session_id: int, **fields: Any) -> None:
        allowed = {
            "status",
            "status_message",
            "best_label",
            "tokens_used",
            "model",
            "settings_json",
            "owner_pid",
            "owner_host",
            "device",
            "arch",
            "server",
            "environment_json",
        }
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"not updatable: {bad}")
        fields["updated_at"] = time.time()
        cols = ", ".join(f"{k} = ?" for k in fields)
        self._write(f"UPDATE sessions SET {cols} WHERE id = ?", (*fields.values(), session_id))

    def set_settings(self, session_id: int, settings: LoopSettings) -> None:
        self.update_session(session_id, settings_json=json.dumps(serialize.dump(settings)))

    def claim(self, session_id: int) -> None:
        """Mark this process as the one running the session; refuse if another live one is."""
        rec = self.session(session_id)
        here = socket.gethostname()
        if (
            rec.status == "running" and rec.owner_pid and rec.owner_pid != os.getpid() and rec.owner_host == here
        ) and owner_alive(rec.owner_pid, rec.updated_at):
            raise StoreError(f"session {session_id} is being run by process {rec.owner_pid}; stop it first")
        self.update_session(session_id, owner_pid=os.getpid(), owner_host=here, status="running", status_message="")

    # ---- prompts, replies, judgements ------------------------------------------------------------
    def record_prompt(self, session_id: int, round_: int, attempt: int, messages: Sequence[Message]) -> None:
        self._write(
            "INSERT OR REPLACE INTO prompts VALUES (?, ?, ?, ?, ?)",
            (session_id, round_, attempt, json.dumps(serialize.dump(list(messages))), time.time()),
        )

    def prompt(self, session_id: int, round_: int, attempt: int) -> list[Message] | None:
        row = self._row(
            "SELECT messages_json FROM prompts WHERE session_id=? AND round=? AND attempt=?",
            (session_id, round_, attempt),
        )
        return serialize.load(list[Message], json.loads(row[0])) if row else None

    def record_reply(
        self,
        session_id: int,
        label: str,
        key: RequestKey,
        origin: str,
        reply: str,
        completion: Completion | None,
    ) -> None:
        """Write a reply when it arrives (before it is judged). Writing the same label again keeps
        one row: a candidate is never recorded twice."""
        with self._tx() as db:
            before = db.execute(
                "SELECT completion_json FROM candidates WHERE session_id=? AND label=?", (session_id, label)
            ).fetchone()
            db.execute(
                "INSERT INTO candidates (session_id, label, round, attempt, slot, origin, reply, "
                "completion_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(session_id, label) DO UPDATE SET reply = excluded.reply, "
                "completion_json = COALESCE(excluded.completion_json, candidates.completion_json)",
                (
                    session_id,
                    label,
                    key.round,
                    key.attempt,
                    key.slot,
                    origin,
                    _storable(reply),
                    # The reply's text is in `reply`; the completion keeps only its facts (tokens,
                    # times, finish reason), so no reply is stored twice.
                    json.dumps(serialize.dump(dataclasses.replace(completion, text=""))) if completion else None,
                    time.time(),
                ),
            )
            counted_before = before is not None and before[0] is not None
            if completion is not None and not counted_before:
                tokens = (completion.prompt_tokens or 0) + (completion.completion_tokens or 0)
                db.execute(
                    "UPDATE sessions SET tokens_used = tokens_used + ?, updated_at = ? WHERE id = ?",
                    (tokens, time.time(), session_id),
                )

    def record_judgement(
        self, session_id: int, judgement: Judgement, key: RequestKey | None = None, origin: str = "model"
    ) -> None:
        median = judgement.timing.median_us if judgement.timing else None
        payload = self._bounded_payload(session_id, judgement)
        ran_on = judgement.ran_on
        node = ran_on.node if ran_on else None
        gpu = f"{ran_on.gpu_name} #{ran_on.gpu_index}" if ran_on else judgement.device
        with self._tx() as db:
            exists = db.execute(
                "SELECT 1 FROM candidates WHERE session_id=? AND label=?", (session_id, judgement.label)
            ).fetchone()
            if exists:
                db.execute(
                    "UPDATE candidates SET status=?, message=?, median_us=?, judgement_json=?, "
                    "judged_at=?, node=?, gpu=? WHERE session_id=? AND label=?",
                    (
                        judgement.status,
                        judgement.message,
                        median,
                        payload,
                        time.time(),
                        node,
                        gpu,
                        session_id,
                        judgement.label,
                    ),
                )
            else:
                key = key or RequestKey(0, 0, 0)
                db.execute(
                    "INSERT INTO candidates (session_id, label, round, attempt, slot, origin, status, "
                    "message, median_us, judgement_json, created_at, judged_at, node, gpu) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session_id,
                        judgement.label,
                        key.round,
                        key.attempt,
                        key.slot,
                        origin,
                        judgement.status,
                        judgement.message,
                        median,
                        payload,
                        time.time(),
                        time.time(),
                        node,
                        gpu,
                    ),
                )

    def _bounded_payload(self, session_id: int, judgement: Judgement) -> str:
        """The judgement as stored: whole while the session's records are within
        CompileSettings.max_session_output_bytes, its PTX and compile log cut short once past it (a
        hostile model could otherwise add gigabytes in one session; the verdict and figures stay)."""
        limits = self.output_limits
        payload = json.dumps(serialize.dump(judgement))
        if session_id not in self._output_bytes:
            row = self._row(
                "SELECT COALESCE(SUM(LENGTH(CAST(judgement_json AS BLOB))), 0) FROM candidates WHERE session_id = ?",
                (session_id,),
            )
            self._output_bytes[session_id] = int(row[0]) if row is not None else 0
        if self._output_bytes[session_id] + len(payload) > limits.max_session_output_bytes:
            tail = limits.max_session_tail_bytes
            compiled = judgement.compile
            detail = cut_text(judgement.detail, tail, "detail (this session's records are at their size limit)")
            judgement = dataclasses.replace(
                judgement,
                compile=capped_compile(compiled, tail, tail) if compiled is not None else None,
                detail=detail if detail is not None else judgement.detail,
            )
            payload = json.dumps(serialize.dump(judgement))
        self._output_bytes[session_id] += len(payload)
        return payload

    def record_decision(self, session_id: int, label: str, decision: str, reason: str = "") -> None:
        self._write(
            "UPDATE candidates SET decision=?, decision_reason=? WHERE session_id=? AND label=?",
            (decision, reason, session_id, label),
        )

    def record_round(self, session_id: int, round_: int, summary: dict[str, Any]) -> None:
        self._write(
            "INSERT OR REPLACE INTO rounds VALUES (?, ?, ?, ?)",
            (session_id, round_, json.dumps(summary), time.time()),
        )

    def rounds(self, session_id: int) -> list[dict[str, Any]]:
        rows = self._rows("SELECT summary_json FROM rounds WHERE session_id=? ORDER BY round", (session_id,))
        return [json.loads(r[0]) for r in rows]

    def candidates(self, session_id: int) -> list[CandidateRecord]:
        rows = self._rows(
            "SELECT * FROM candidates WHERE session_id=? ORDER BY round, attempt, slot, id", (session_id,)
        )
        out = []
        for r in rows:
            out.append(
                CandidateRecord(
                    label=r["label"],
                    round=r["round"],
                    attempt=r["attempt"],
                    slot=r["slot"],
                    origin=r["origin"],
                    reply=_text(r["reply"]),
                    completion=_completion(r["completion_json"], _text(r["reply"])),
                    status=r["status"],
                    message=r["message"],
                    median_us=r["median_us"],
                    judgement=serialize.load(Judgement, json.loads(r["judgement_json"]))
                    if r["judgement_json"]
                    else None,
                    decision=r["decision"],
                    decision_reason=r["decision_reason"],
                    node=_column(r, "node"),
                    gpu=_column(r, "gpu"),
                )
            )
        return out

    def replies(self, session_id: int) -> dict[RequestKey, str]:
        """The model replies of a session by request key (what `replay:ID` plays back)."""
        self.session(session_id)
        rows = self._rows(
            "SELECT round, attempt, slot, reply FROM candidates WHERE session_id=? AND "
            "origin IN ('model', 'replay') AND reply IS NOT NULL",
            (session_id,),
        )
        return {RequestKey(r[0], r[1], r[2]): _text(r[3]) or "" for r in rows}  # the query left out NULL
