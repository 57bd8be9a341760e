"""Edits that were not submitted, kept beside the sessions database so none is lost.

An edit is kept when it cannot be submitted (its session ended while the editor was open) or when
the app is quit with the editor holding unsaved text. The next run screen of that session (a resume)
offers it first, and a new session offers any that are kept; `e` opens it, and it is deleted once it
is submitted or discarded in the editor. Each draft is one file in the reply format (a ```cuda block
and a ```json block), so it can also be read, or submitted by hand, without the app.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cuda_llm.engine.contract.reply import parse_reply
from cuda_llm.engine.core.errors import FormatError
from cuda_llm.engine.core.files import write_atomically
from cuda_llm.engine.store.sessions import default_db_path

DRAFTS_FOLDER = "drafts"
_NAME = re.compile(r"^session-(\d+)-(.+)\.md$")


@dataclass(frozen=True)
class Draft:
    session_id: int
    based_on: str  # the kernel the edit started from ("" when unknown)
    path: Path
    source: str
    plan: str  # JSON


def drafts_folder(db: str | None) -> Path:
    return (Path(db) if db else default_db_path()).parent / DRAFTS_FOLDER


def keep(db: str | None, session_id: int, based_on: str, source: str, plan: str) -> Path:
    """Write the draft (over an earlier one of the same session and kernel); its path."""
    from cuda_llm.app.editing import compose_reply

    folder = drafts_folder(db)
    folder.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", based_on or "kernel")
    path = folder / f"session-{session_id}-{safe}.md"
    note = f"An edit of {based_on or 'a kernel'} in session {session_id}, kept by cuda-llm: it was not submitted."
    write_atomically(path, compose_reply(source, plan, note=note))
    return path


def kept(db: str | None, session_id: int | None = None) -> list[Draft]:
    """The drafts kept (of one session when given), newest first; unreadable files are skipped."""
    folder = drafts_folder(db)
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("session-*.md"), key=lambda p: p.stat().st_mtime, reverse=True):
        m = _NAME.match(path.name)
        if m is None or (session_id is not None and int(m.group(1)) != session_id):
            continue
        try:
            reply = parse_reply(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, FormatError):
            continue
        out.append(Draft(int(m.group(1)), m.group(2), path, reply.source, reply.plan_json))
    return out


def forget(draft: Draft) -> None:
    draft.path.unlink(missing_ok=True)
