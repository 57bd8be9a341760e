"""What the start screen lists: the task library, and the stored sessions with each task's last best
result. Plain Python over the engine's library and store (no Textual).

The library and the store are imported where they are read, not with this module: the start screen
draws its first frame before it reads them (a third of the engine's modules are theirs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuda_llm.engine.core.errors import TaskFileError

if TYPE_CHECKING:
    from cuda_llm.engine.store.sessions import SessionRecord, SessionStore
    from cuda_llm.engine.task import TaskLibrary


@dataclass(frozen=True)
class TaskRow:
    name: str
    summary: str
    category: str
    error: str | None = None  # the task file does not load


@dataclass(frozen=True)
class StoredSession:
    id: int
    task: str
    model: str
    status: str  # the store's word: SessionRecord.shown_status ("interrupted" for a dead process)
    shown_status: str  # as the table lists it: SessionRecord.listed_status (with "(crashed)")
    crashed: bool  # the app died with it: SessionRecord.crashed
    device: str
    best: str  # "r2-1 30.0 us (3.33x)", or "" when the baseline is still the best
    rounds: int
    updated_at: float
    message: str = ""  # why it stopped or paused ("crashed: ..." when the app died with it)


@dataclass(frozen=True)
class Catalog:
    sessions: list[StoredSession]
    last_best: dict[str, str]  # task -> "3.33x, 30.0 us (session 12)"
    error: str | None = None  # the database cannot be read


def load_tasks(library: TaskLibrary | None = None) -> list[TaskRow]:
    from cuda_llm.engine.task import TaskLibrary

    rows = []
    for item in (library or TaskLibrary()).load_all():
        if isinstance(item, TaskFileError):
            name = Path(item.path).name if Path(item.path).is_dir() else Path(item.path).parent.name
            rows.append(TaskRow(name, "", "?", item.problem.splitlines()[0] if item.problem else str(item)))
        else:
            rows.append(TaskRow(item.name, item.summary, item.category))
    return sorted(rows, key=lambda r: r.name)


def _best_text(store: SessionStore, record: SessionRecord) -> tuple[str, str]:
    """(short text for the sessions table, text for the task list), empty when nothing beat the baseline."""
    from cuda_llm.engine.judge.judgement import BASELINE_LABEL

    if not record.best_label or record.best_label == BASELINE_LABEL:
        return "", ""
    for c in store.candidates(record.id):
        if c.label != record.best_label or c.judgement is None:
            continue
        j = c.judgement
        if j.timing is None:
            return record.best_label, ""
        speed = f"{j.figures.speedup:.2f}x" if j.figures and j.figures.speedup else ""
        short = f"{record.best_label} {j.timing.median_us:.1f} us" + (f" ({speed})" if speed else "")
        long = f"{speed or 'best'} {j.timing.median_us:.1f} us (session {record.id})".strip()
        return short, long
    return record.best_label, ""


def load_catalog(db: str | None, limit: int = 200) -> Catalog:
    from cuda_llm.engine.store.sessions import SessionStore, StoreError

    try:
        store = SessionStore(db)
    except StoreError as exc:
        return Catalog([], {}, str(exc))
    try:
        records = store.sessions(limit)
        sessions: list[StoredSession] = []
        last_best: dict[str, str] = {}
        for r in records:
            short, long = _best_text(store, r)
            rounds = len(store.rounds(r.id))
            sessions.append(
                StoredSession(
                    id=r.id,
                    task=r.task,
                    model=r.model,
                    status=r.shown_status,
                    shown_status=r.listed_status,
                    crashed=r.crashed,
                    device=r.device,
                    best=short,
                    rounds=rounds,
                    updated_at=r.updated_at,
                    message=r.status_message,
                )
            )
            if long and r.task not in last_best:
                last_best[r.task] = long
        return Catalog(sessions, last_best)
    except StoreError as exc:
        return Catalog([], {}, str(exc))
    finally:
        store.close()
