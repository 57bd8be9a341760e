"""A session marked running belongs to its recorded process only while that PID is still the same
process: a PID given to another process after the owner died (a kill -9, a restart) must not keep
the session looking live, nor make --resume ask the user to stop a stranger."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import pytest

from cuda_llm.engine.core.settings import LoopSettings
from cuda_llm.engine.store.owner import owner_alive, process_started_at
from cuda_llm.engine.store.sessions import SessionStore, StoreError

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process start times come from /proc")


def running_session(db, owner_pid: int, last_write: float) -> SessionStore:
    store = SessionStore(db)
    sid = store.create_session("vector_add", "/t", "abc", "ollama:m", LoopSettings(), "gpu", "sm_90")
    store.update_session(sid, status="running", owner_pid=owner_pid)
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (last_write, sid))
    con.close()
    return store


@linux_only
def test_a_pid_taken_by_a_newer_process_is_not_the_owner(tmp_path):
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        # The session was last written a minute before this process (reusing the PID) started.
        store = running_session(tmp_path / "s.db", stranger.pid, time.time() - 60)
        try:
            assert store.session(1).shown_status == "interrupted"
            store.claim(1)  # no "being run by process N; stop it first"
            assert store.session(1).owner_pid != stranger.pid
        finally:
            store.close()
    finally:
        stranger.kill()
        stranger.wait()


def test_a_live_owner_that_started_before_its_last_write_still_holds_it(tmp_path):
    store = running_session(tmp_path / "s.db", 1, time.time())  # pid 1 started at boot
    try:
        assert store.session(1).shown_status == "running"
        with pytest.raises(StoreError, match="being run by process 1"):
            store.claim(1)
    finally:
        store.close()


def test_the_start_time_is_read_past_a_command_name_with_spaces_and_parentheses(tmp_path):
    proc = tmp_path / "proc"
    (proc / "4242").mkdir(parents=True)
    (proc / "stat").write_text("cpu  1 2 3\nbtime 1700000000\nprocesses 9\n")
    fields = ["S"] + ["0"] * 18 + ["12345"] + ["0"] * 10  # field 22 (starttime) is the 20th after the name
    (proc / "4242" / "stat").write_text("4242 (my (odd) name) " + " ".join(fields) + "\n")
    assert process_started_at(4242, proc) == pytest.approx(1700000000 + 12345 / os.sysconf("SC_CLK_TCK"))
    assert process_started_at(4243, proc) is None  # no such process: unknown, not an error


@linux_only
def test_this_process_started_before_now():
    started = process_started_at(os.getpid())
    assert started is not None and started <= time.time() + 1.5
    assert owner_alive(os.getpid(), time.time())
    assert not owner_alive(os.getpid(), started - 60), "a session written before this process started"
