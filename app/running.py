"""The sessions this app is running, so that none is ever left marked `running` in the database.

The engine records a session's end itself (finished, stopped, paused, failed). Two ends it cannot
record are the app's: a crash in the UI, and a quit that does not wait for the work in flight.
Either way the session is recorded as stopped, with why (a crash says `crashed: ...`, and the start
screen and the sessions list say so on the next start); `--resume` continues it.
"""

from __future__ import annotations

import contextlib

from cuda_llm.engine.core.errors import describe

INTERRUPTED = "stopped when cuda-llm quit before the work in flight ended"
MESSAGE_CHARS = 300  # the status message is one line in the sessions list


class RunningSessions:
    def __init__(self) -> None:
        self._db: dict[int, str] = {}  # session id -> its database
        self.crash: str | None = None  # what the app crashed with, once it has
        self.crashed_sessions: list[int] = []

    def add(self, session_id: int, db: str) -> None:
        self._db[session_id] = db

    def discard(self, session_id: int) -> None:
        self._db.pop(session_id, None)

    def __contains__(self, session_id: int) -> bool:
        return session_id in self._db

    def __len__(self) -> int:
        return len(self._db)

    def crashed(self, error: BaseException) -> list[int]:
        """The app is going down with `error`: every session it runs is recorded as stopped by it."""
        # The store (with the verdicts it reads back) loads here, not with the app: the start screen's
        # first frame does not wait for it.
        from cuda_llm.engine.store.sessions import CRASH_PREFIX

        self.crash = describe(error)
        for session_id in list(self._db):
            if self._mark(session_id, CRASH_PREFIX + self.crash):
                self.crashed_sessions.append(session_id)
        return self.crashed_sessions

    def interrupted(self, session_id: int) -> None:
        """The session's worker was cancelled: recorded as stopped (a crash's record stays)."""
        if self.crash is None and session_id in self._db:
            self._mark(session_id, INTERRUPTED)

    def _mark(self, session_id: int, message: str) -> bool:
        from cuda_llm.engine.store.sessions import SessionStore

        with contextlib.suppress(Exception):  # the database may be what failed; nothing more to do
            store = SessionStore(self._db[session_id])
            try:
                store.update_session(session_id, status="stopped", status_message=message[:MESSAGE_CHARS])
                return True
            finally:
                store.close()
        return False
