"""A headless session killed with SIGKILL mid-round resumes with --resume and finishes: no candidate
recorded twice, none lost except the one in flight (which is asked for again)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from llm_servers import Reply
from scripted import chunked, reply

ROOT = Path(__file__).resolve().parents[2]
# Long enough that the kill certainly lands while this request is in flight.
STALL_S = 8.0


def cli(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "app.launcher", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def labels(db: Path) -> list[tuple[str, str | None, bool]]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT label, status, reply IS NOT NULL FROM candidates ORDER BY id").fetchall()
    except sqlite3.OperationalError:  # the other process has created the file but not the schema yet
        return []
    finally:
        con.close()
    return [(a, b, bool(c)) for a, b, c in rows]


def test_sigkill_mid_round_then_resume(tmp_path, llm_server):
    db = tmp_path / "sessions.db"
    env = {**os.environ, "CUDA_LLM_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    llm_server.script(
        chunked(reply()),
        chunked(reply()),  # round 1
        chunked(reply()),
        Reply.stall_first(STALL_S, reply()),
    )  # round 2: one hangs
    common = ["--headless", "--compile-only", "--db", str(db), "--host", llm_server.url]
    proc = cli("run", "vector_add", "--model", "ollama:loop-model", "-N", "2", "-D", "3", *common, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if db.exists() and any(label.startswith("r2-") and status for label, status, _ in labels(db)):
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    else:
        proc.kill()
        raise AssertionError("round 2 never started")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    before = [label for label, _, _ in labels(db)]
    # Which of the two round-2 requests got the hanging reply depends on arrival order at the server.
    done_r2 = [label for label in before if label.startswith("r2-")]
    assert len(done_r2) == 1, f"one round-2 request was in flight at the kill: {before}"
    assert sorted(before) == sorted(["baseline", "r1-1", "r1-2", *done_r2])

    requests_before = len(llm_server.chat_requests)
    llm_server.default = chunked(reply())
    resumed = cli("run", "--resume", "1", *common, env=env)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert "session 1: finished" in out

    after = labels(db)
    names = [label for label, _, _ in after]
    assert len(names) == len(set(names)), "a candidate was recorded twice"
    assert names[:4] == before, "what was recorded before the kill stays, first"
    assert set(names) == {"baseline", "r1-1", "r1-2", "r2-1", "r2-2", "r3-1", "r3-2"}
    assert all(status == "compiled" and (has_reply or label == "baseline") for label, status, has_reply in after)
    # Only the lost round-2 request and round 3 went to the model again; the other reply was kept.
    assert len(llm_server.chat_requests) - requests_before == 3
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("SELECT status FROM sessions WHERE id = 1").fetchone()[0] == "finished"
    finally:
        con.close()
