"""The process and the machine: kills, Ctrl-C, a full disk, a second instance, database files this
version must migrate or must not touch. The kills and signals go to the real CLI in a child process
(`python -m cuda_llm.app.launcher run ... --headless --compile-only`); the rest run in process."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from llm_servers import Reply
from scripted import chunked, reply
from session_driver import ROOT, cli, cli_env, labels, options, run_session

from cuda_llm.app.cli.interrupt import FIRST_PRESS
from cuda_llm.app.cli.main import main as cuda_llm
from cuda_llm.engine.core.settings import RetryPolicy
from cuda_llm.engine.store.schema import SCHEMA_VERSION
from cuda_llm.engine.store.sessions import SessionStore

from .helpers import RoundWatcher, assert_kept, integrity, one_line, resume, session_row, short, snapshot

GROUP = "process and machine"
GOOD = chunked(reply())
# Long enough that a kill or a signal certainly lands while this request is in flight; the server
# ends the stall at teardown, so a test never waits it out.
STALL_S = 8.0
# How long a child process may take to reach a state the test waits for (imports, compiler start).
WAIT_S = 60.0


def wait_for(what: str, ready, *procs) -> None:
    """Poll until ready() holds; fail at once if a child exits meanwhile."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if ready():
            return
        for p in procs:
            assert p.poll() is None, f"exited before {what}: {p.communicate()}"
        time.sleep(0.05)
    for p in procs:
        p.kill()
    raise AssertionError(f"timed out waiting for {what}")


def common(db: Path, server) -> list[str]:
    return ["--headless", "--compile-only", "--db", str(db), "--host", server.url]


def new_run(db: Path, server, env: dict[str, str], n: int, d: int):
    """`cuda-llm run vector_add -N n -D d --headless --compile-only` in a child process."""
    return cli(
        "run", "vector_add", "--model", "ollama:loop-model", "-N", str(n), "-D", str(d), *common(db, server), env=env
    )


class Streams:
    """A child's stdout and stderr read as they come (a thread each), so that a test waits for the line
    that says the child got somewhere instead of guessing how long it takes."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self._cond = threading.Condition()
        self._lines: dict[str, list[str]] = {"out": [], "err": []}
        self._open = 2
        self._threads = [
            threading.Thread(target=self._read, args=(name, stream), daemon=True)
            for name, stream in (("out", proc.stdout), ("err", proc.stderr))
        ]
        for thread in self._threads:
            thread.start()

    def _read(self, name: str, stream) -> None:
        for line in stream:
            with self._cond:
                self._lines[name].append(line)
                self._cond.notify_all()
        with self._cond:
            self._open -= 1
            self._cond.notify_all()

    def _err(self) -> str:
        return "".join(self._lines["err"])

    def wait_for_err(self, text: str) -> None:
        """Until `text` is on stderr (at most WAIT_S; at once if the child closed its streams)."""
        with self._cond:
            self._cond.wait_for(lambda: text in self._err() or not self._open, WAIT_S)
            err = self._err()
        assert text in err, f"no {text!r} on stderr: {err}"

    def finish(self, timeout_s: float) -> tuple[str, str]:
        """(stdout, stderr) once the child has exited."""
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        for thread in self._threads:
            thread.join(timeout_s)
        with self._cond:
            return "".join(self._lines["out"]), self._err()


def ctrl_c(proc: subprocess.Popen, times: int = 1, streams: Streams | None = None) -> tuple[str, str, float]:
    """Press Ctrl-C `times` times, each further press once stderr shows the first was taken; (stdout,
    stderr, seconds from the first press to the exit)."""
    streams = streams or Streams(proc)
    pressed = time.monotonic()
    for n in range(times):
        if n:
            streams.wait_for_err(FIRST_PRESS.strip())
        proc.send_signal(signal.SIGINT)
    out, err = streams.finish(60)
    return out, err, time.monotonic() - pressed


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- kills and signals ------------------------------------------------------------------------------


@pytest.mark.fault(
    GROUP,
    "SIGKILL of the application mid-round, then --resume",
    "only the request in flight is lost; --resume asks for it again, keeps the rest, finishes; no candidate twice",
)
def test_sigkill_mid_round_then_resume(tmp_path, llm_server, observed):
    db = tmp_path / "sessions.db"
    env = cli_env(tmp_path)
    # Round 1: two good replies; round 2: one good, one that hangs.
    llm_server.script(GOOD, GOOD, GOOD, Reply.stall_first(STALL_S, reply()))
    proc = cli(
        "run", "vector_add", "--model", "ollama:loop-model", "-N", "2", "-D", "3", *common(db, llm_server), env=env
    )
    wait_for(
        "round 2 to start",
        lambda: db.exists() and any(label.startswith("r2-") and status for label, status, _ in labels(db)),
        proc,
    )
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    before = [label for label, _, _ in labels(db)]
    # Which of the two round-2 requests got the hanging reply depends on arrival order at the server.
    done_r2 = [label for label in before if label.startswith("r2-")]
    assert len(done_r2) == 1, f"one round-2 request was in flight at the kill: {before}"
    assert sorted(before) == sorted(["baseline", "r1-1", "r1-2", *done_r2])

    requests_before = len(llm_server.chat_requests)
    llm_server.default = GOOD
    resumed = cli("run", "--resume", "1", *common(db, llm_server), env=env)
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
    asked_again = len(llm_server.chat_requests) - requests_before
    assert asked_again == 3
    assert integrity(db) == "ok" and session_row(db)[0] == "finished"
    observed(f"killed with {before}; resume asked {asked_again} requests (the lost one + round 3), finished")


@pytest.mark.fault(
    GROUP,
    "Ctrl-C (SIGINT) in headless mode while the server hangs",
    "stops at once (the hung request is cancelled, not waited for or retried): status 'stopped', exit "
    "code 130 and the line that continues it; --resume asks again and finishes",
)
def test_ctrl_c_headless_then_resume(tmp_path, llm_server, observed):
    db = tmp_path / "sessions.db"
    env = cli_env(tmp_path)
    stall = 60.0  # round 2's request hangs this long: far longer than a stop may take
    llm_server.script(GOOD, Reply.stall_first(stall, reply()))
    llm_server.default = GOOD
    proc = cli(
        "run", "vector_add", "--model", "ollama:loop-model", "-N", "1", "-D", "3", *common(db, llm_server), env=env
    )
    wait_for("round 2's request", lambda: len(llm_server.chat_requests) >= 2, proc)
    out, err, took = ctrl_c(proc)
    assert proc.returncode == 130, err
    # An order, not a time: the process ended while the request it stopped still hung on the server.
    assert not llm_server.chat_requests[1].finished, f"the stop waited for the request hanging {stall:.0f} s"
    assert "session 1: stopped (stopped by the user)" in out
    assert f"continue with: cuda-llm run --resume 1 --headless --db {db}" in out
    assert "stopping: requests in flight are cancelled" in err and "Traceback" not in err
    assert session_row(db)[0] == "stopped"
    before = snapshot(db)
    assert set(before) == {"baseline", "r1-1"}, "the hung request was cancelled: nothing of it is recorded"

    resumed = cli("run", "--resume", "1", *common(db, llm_server), env=env)
    out2, err2 = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err2
    assert "session 1: finished" in out2
    after = snapshot(db)
    assert set(after) == {"baseline", "r1-1", "r2-1", "r3-1"}
    assert_kept(before, after)
    assert integrity(db) == "ok" and session_row(db)[0] == "finished"
    observed(
        f"stopped {took:.1f} s after Ctrl-C (a request hanging for {stall:.0f} s was cancelled), exit 130 with "
        "the resume line; resumed: finished"
    )


@pytest.mark.fault(
    GROUP,
    "Ctrl-C twice in headless mode while a compile bomb holds the stop",
    "the second Ctrl-C quits at once (exit code 130, no traceback) with the line that continues it; what was "
    "recorded stays",
)
def test_ctrl_c_twice_quits_at_once(tmp_path, llm_server, observed):
    from faults.test_sources import BOMB_KERNEL

    db = tmp_path / "sessions.db"
    env = cli_env(tmp_path)
    # A clean stop cancels model requests but lets the judging of a received reply finish: this one
    # compiles until the compile time limit (30 s).
    llm_server.script(GOOD, chunked(reply(BOMB_KERNEL)))
    llm_server.default = GOOD
    proc = new_run(db, llm_server, env, n=1, d=3)
    wait_for("round 2's request", lambda: len(llm_server.chat_requests) >= 2, proc)
    wait_for("round 2's reply to be recorded", lambda: "r2-1" in snapshot(db), proc)
    out, err, took = ctrl_c(proc, times=2)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    # Quitting at once still says where the session stands and how to continue it.
    assert "session 1: stopped at once (Ctrl-C twice)" in out
    assert f"continue with: cuda-llm run --resume 1 --headless --db {db}" in out
    after = snapshot(db)
    # An order, not a time: had it waited for the compile, the bomb's verdict would be recorded.
    assert after["r2-1"][0] != "compile_error", "quit only after the compile's time limit: it waited for the compile"
    assert set(after) == {"baseline", "r1-1", "r2-1"} and integrity(db) == "ok"
    observed(f"quit {took:.1f} s after the first Ctrl-C, exit 130 with the resume line; round 2's reply kept")


@pytest.mark.fault(
    GROUP,
    "Ctrl-C in headless mode while retries back off against a server that keeps failing (HTTP 500)",
    "stops at once: the retry waiting for its turn is cancelled, no request after the Ctrl-C; status "
    "'stopped', exit code 130",
)
def test_ctrl_c_cancels_the_retries(tmp_path, llm_server, observed):
    db = tmp_path / "sessions.db"
    # The server asks for the longest wait the policy allows (Retry-After): a Ctrl-C that waited for
    # the retry would take that long, far more than any busy machine adds to a stop.
    wait = RetryPolicy().max_delay_s
    llm_server.default = Reply.status_error(500, "overloaded", retry_after=wait)
    proc = new_run(db, llm_server, cli_env(tmp_path), n=1, d=3)
    wait_for("the first answer", lambda: bool(llm_server.chat_requests) and llm_server.chat_requests[0].finished, proc)
    streams = Streams(proc)
    streams.wait_for_err("retrying in")  # the client has read the error and waits for its retry
    asked = len(llm_server.chat_requests)
    out, err, took = ctrl_c(proc, streams=streams)
    assert proc.returncode == 130, err  # a headless run stopped by Ctrl-C (app/cli)
    # Had the stop waited for the retry's turn, the retry would have gone out: none did.
    assert len(llm_server.chat_requests) == asked, "a request went out after the Ctrl-C"
    assert "session 1: stopped (stopped by the user)" in out and "Traceback" not in err
    assert session_row(db)[0] == "stopped" and integrity(db) == "ok"
    observed(f"stopped {took:.2f} s after Ctrl-C during the backoff after try {asked}; no request after it; exit 130")


@pytest.mark.fault(
    GROUP,
    "Ctrl-C in `bench` while a request hangs; Ctrl-C twice",
    "the first stops the running session cleanly ('stopped'), starts no further task and prints the table "
    "of what ran, exit 0; the second quits at once (exit 130)",
)
def test_ctrl_c_in_bench(tmp_path, llm_server, observed):
    env = cli_env(tmp_path)
    llm_server.default = Reply.stall_first(STALL_S * 4, reply())
    bench = ["bench", "--tasks", "vector_add", "leaky_relu", "--model", "ollama:loop-model", "-N", "1", "-D", "2"]
    db = tmp_path / "sessions.db"
    proc = cli(*bench, *common(db, llm_server)[1:], env=env)  # bench has no --headless: it never has a UI
    wait_for("vector_add's request", lambda: len(llm_server.chat_requests) >= 1, proc)
    out, err, took = ctrl_c(proc)
    assert proc.returncode == 0, err
    assert not llm_server.chat_requests[0].finished, f"the stop waited for the request hanging {STALL_S * 4:.0f} s"
    assert "| vector_add |" in out and "leaky_relu and the tasks after it were not run" in err
    assert "Traceback" not in err and session_row(db)[0] == "stopped"
    assert len(llm_server.chat_requests) == 1, "no task started after the Ctrl-C"

    # Twice, while a compile bomb holds the clean stop (a received reply is judged to the end).
    from faults.test_sources import BOMB_KERNEL

    db2 = tmp_path / "second.db"
    llm_server.script(chunked(reply(BOMB_KERNEL)))
    proc = cli(*bench, *common(db2, llm_server)[1:], env=env)

    def bomb_recorded() -> bool:
        try:
            return "r1-1" in snapshot(db2)
        except sqlite3.Error:  # not created yet
            return False

    wait_for("the bomb to be recorded", bomb_recorded, proc)
    _out, err2, took2 = ctrl_c(proc, times=2)
    assert proc.returncode == 130 and err2.strip().endswith("cuda-llm: interrupted"), err2
    assert "Traceback" not in err2
    assert snapshot(db2)["r1-1"][0] != "compile_error", "quit only after the compile's time limit"
    observed(
        f"first Ctrl-C: exit 0 after {took:.1f} s, vector_add 'stopped', leaky_relu not started, the table printed; "
        f"twice while a compile bomb held the stop: exit 130 after {took2:.1f} s"
    )


@pytest.mark.skipif(shutil.which("unshare") is None, reason="no unshare(1) to mount a folder read-only")
@pytest.mark.fault(
    GROUP,
    "the database on read-only media (a read-only bind mount)",
    "`sessions` and `export` read it; `run --resume` says in one line that it is read-only and what to do "
    "(exit 2, no traceback)",
)
def test_a_database_on_read_only_media(tmp_path, llm_server, observed):
    folder = tmp_path / "media"
    folder.mkdir()
    asyncio.run(one_recorded_session(folder, llm_server))
    out = tmp_path / "exported"
    launcher = f"{sys.executable} -m cuda_llm.app.launcher"
    db = folder / "sessions.db"
    # A mount namespace of a user namespace of our own: no privileges needed, nothing outside changes.
    script = (
        f"mount --bind -o ro {folder} {folder} && touch {folder}/probe 2>/dev/null && exit 90; "
        f"{launcher} sessions --db {db}; echo rc=$?; "
        f"{launcher} export 1 --db {db} --out {out}; echo rc=$?; "
        f"{launcher} run --resume 1 --headless --compile-only --host {llm_server.url} --db {db}; echo rc=$?"
    )
    done = subprocess.run(
        ["unshare", "--map-root-user", "--mount", "sh", "-c", script],
        capture_output=True, text=True, timeout=180, env=cli_env(tmp_path), cwd=ROOT,
    )  # fmt: skip
    if done.returncode != 0 and "rc=" not in done.stdout:
        pytest.skip(f"no read-only mount here: {done.stderr.strip()[:200]}")
    codes = [int(line[3:]) for line in done.stdout.splitlines() if line.startswith("rc=")]
    assert codes == [0, 0, 2], (done.stdout, done.stderr)
    assert "vector_add" in done.stdout and (out / "report.json").is_file()
    errors = [line for line in done.stderr.splitlines() if line.startswith("cuda-llm:")]
    assert len(errors) == 1 and "is read-only" in errors[0] and "--db" in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    observed(f"sessions and export read it (exit 0, 0); run --resume exit 2: {short(errors[0], tmp_path)!r}")


# ---- the disk fills up ---------------------------------------------------------------------------


@pytest.mark.fault(
    GROUP,
    "disk full while writing the database (SQLite max_page_count)",
    "session pauses with one line saying the disk is full; integrity_check ok; earlier rows intact; "
    "once space is back, --resume finishes",
)
async def test_disk_full(tmp_path, llm_server, observed):
    db = tmp_path / "sessions.db"
    store = SessionStore(db)

    def fill_the_disk() -> None:
        # The file may not grow any more, and ballast takes whatever free space its pages still
        # have: from here on the next write that adds a row fails with SQLITE_FULL, as on a full disk.
        store.db.execute("CREATE TABLE ballast (b BLOB)")
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {pages}")
        for size in (4096, 512, 64, 8, 1):
            with contextlib.suppress(sqlite3.OperationalError):
                for _ in range(10_000):
                    store.db.execute("INSERT INTO ballast VALUES (zeroblob(?))", (size,))

    watcher = RoundWatcher(db, then=fill_the_disk)
    llm_server.default = GOOD
    opts = options(tmp_path, "ollama:loop-model", candidates=1, rounds=3)
    result, _ = await run_session(opts, host=llm_server.url, recorder=watcher, store=store)
    assert result.status == "paused"
    assert one_line(result.reason) and "the disk is full; free space and resume the session" in result.reason
    assert integrity(db) == "ok"
    assert_kept(watcher.before, snapshot(db))
    assert "r2-1" not in snapshot(db), "round 2 could not even record its prompt"
    # Space is back (a new connection has no page limit): --resume asks for round 2 again and finishes.
    resumed, _ = await resume(db, host=llm_server.url)
    assert resumed.status == "finished", resumed.reason
    after = snapshot(db)
    assert set(after) == {"baseline", "r1-1", "r2-1", "r3-1"}
    assert_kept(watcher.before, after)
    assert integrity(db) == "ok"
    observed(f"paused: {short(result.reason, tmp_path)!r}; integrity ok; round 1 intact; resumed: finished")


# ---- a second instance ---------------------------------------------------------------------------


@pytest.mark.fault(
    GROUP,
    "a second instance resumes a session another live process is running",
    "refused with one line naming the other process; nothing written; the first run finishes",
)
def test_second_instance_on_a_running_session(tmp_path, llm_server, observed):
    db = tmp_path / "sessions.db"
    env = cli_env(tmp_path)
    # The first run stays in round 1 until the second instance is done: a reply it received meanwhile
    # would be written by the first run, not the refused one.
    release = threading.Event()
    llm_server.script(Reply.held(release, reply()))
    llm_server.default = GOOD
    first = cli(
        "run", "vector_add", "--model", "ollama:loop-model", "-N", "1", "-D", "2", *common(db, llm_server), env=env
    )
    wait_for("the first run's request", lambda: len(llm_server.chat_requests) >= 1, first)
    before = snapshot(db)
    second = cli("run", "--resume", "1", *common(db, llm_server), env=env)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 2, (out, err)
    assert err.strip() == f"cuda-llm: session 1 is being run by process {first.pid}; stop it first"
    assert snapshot(db) == before, "the refused instance wrote nothing"
    release.set()
    out1, err1 = first.communicate(timeout=60)
    assert first.returncode == 0, err1
    assert "session 1: finished" in out1 and set(snapshot(db)) == {"baseline", "r1-1", "r2-1"}
    observed(f"refused: {err.strip()!r} (exit 2); the first run finished")


@pytest.mark.fault(
    GROUP,
    "two processes run different sessions on one (new) database file",
    "both finish; every candidate of each recorded once; integrity_check ok",
)
def test_two_instances_on_one_database(tmp_path, llm_server, observed):
    db = tmp_path / "sessions.db"
    env = cli_env(tmp_path)
    # The two runs overlap, writing to the file at the same time: round 1's replies wait until a
    # request of the second run has arrived too (each run asks for two), however slow the machine.
    chunks = [reply()[i : i + 40] for i in range(0, len(reply()), 40)]
    llm_server.default = Reply.gathered(3, *chunks, chunk_delay_s=0.01)
    args = ["run", "vector_add", "--model", "ollama:loop-model", "-N", "2", "-D", "2", *common(db, llm_server)]
    runs = [cli(*args, env=env), cli(*args, env=env)]  # both start on a file that does not exist yet
    results = [p.communicate(timeout=120) for p in runs]
    for p, (out, err) in zip(runs, results, strict=True):
        assert p.returncode == 0, err
        assert ": finished" in out
    expected = {"baseline", "r1-1", "r1-2", "r2-1", "r2-2"}
    for sid in (1, 2):
        names = [label for label, _, _ in labels(db, sid)]
        assert sorted(names) == sorted(expected), f"session {sid}: {names}"
        assert session_row(db, sid)[0] == "finished"
    assert integrity(db) == "ok"
    assert llm_server.peak_concurrency >= 2
    observed("both finished; sessions 1 and 2 each hold their 5 candidates once; integrity ok")


# ---- database files this version must migrate, or must not touch ----------------------------------------


async def make_v1_database(tmp_path, server) -> Path:
    """A real one-round session, then taken back to schema 1 (what the first release wrote)."""
    server.default = GOOD
    result, _ = await run_session(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), host=server.url)
    assert result.status == "finished"
    db = tmp_path / "sessions.db"
    con = sqlite3.connect(db)
    try:
        con.execute("DROP INDEX candidates_by_session")
        for column in ("owner_pid", "owner_host", "tokens_used", "server", "environment_json"):
            con.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
        for column in ("node", "gpu"):
            con.execute(f"ALTER TABLE candidates DROP COLUMN {column}")
        con.execute("PRAGMA user_version = 1")
        con.commit()
    finally:
        con.close()
    return db


@pytest.mark.fault(
    GROUP,
    "a database file from an older schema (version 1)",
    "migrated in place on open; its sessions kept; --resume of an old session finishes",
)
async def test_older_schema_is_migrated(tmp_path, llm_server, observed):
    db = await make_v1_database(tmp_path, llm_server)
    before = snapshot(db)
    resumed, _ = await resume(db, host=llm_server.url, rounds=2)
    assert resumed.status == "finished", resumed.reason
    con = sqlite3.connect(db)
    try:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        columns = {row[1] for row in con.execute("PRAGMA table_info(sessions)")}
    finally:
        con.close()
    assert version == SCHEMA_VERSION and {"owner_pid", "owner_host", "tokens_used", "server"} <= columns
    after = snapshot(db)
    assert_kept(before, after)
    assert set(after) == {"baseline", "r1-1", "r2-1"}
    assert integrity(db) == "ok"
    observed(f"schema 1 -> {version} on open; the old session resumed and finished; its rows intact")


def refused(capsys, db: Path) -> tuple[int, str, str]:
    """`cuda-llm sessions --db DB` and `cuda-llm run --resume 1 --db DB` in process: both must refuse
    the file the same way. Returns (exit code, stderr of `run`, the file's digest after both)."""
    code = cuda_llm(["sessions", "--db", str(db)])
    err = capsys.readouterr().err
    code_run = cuda_llm(["run", "--resume", "1", "--headless", "--compile-only", "--db", str(db)])
    err_run = capsys.readouterr().err
    assert code == code_run == 2
    assert err == err_run, "the same one line from every command"
    return code, err.strip(), digest(db)


@pytest.mark.fault(
    GROUP,
    "a database file from a newer schema",
    "refused with one line (upgrade cuda-llm or use --db); exit code 2; the file is not touched",
)
def test_newer_schema_is_refused(tmp_path, capsys, observed):
    db = tmp_path / "sessions.db"
    SessionStore(db).close()
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version = 99")  # what a later release, with more tables, would write
    con.close()
    before = digest(db)
    code, err, after = refused(capsys, db)
    assert one_line(err) and f"was written by a newer cuda-llm (schema 99; this one knows {SCHEMA_VERSION})" in err
    assert after == before, "the newer file is left exactly as it was"
    observed(f"exit {code}: {short(err, tmp_path)!r}; file unchanged")


@pytest.mark.fault(
    GROUP,
    "a file that is not a database",
    "refused with one line (use --db); exit code 2; the file is not touched",
)
def test_not_a_database(tmp_path, capsys, observed):
    db = tmp_path / "notes.txt"
    db.write_text("Meeting notes, not a database.\n" * 200)
    before = digest(db)
    code, err, after = refused(capsys, db)
    assert (
        one_line(err) and err == f"cuda-llm: {db} is not a cuda-llm session database; use --db to choose another file"
    )
    assert after == before
    observed(f"exit {code}: {short(err, tmp_path)!r}; file unchanged")


@pytest.mark.fault(
    GROUP,
    "a SQLite database of another program given as --db",
    "refused with one line (use --db); exit code 2; no table added, the file is not touched",
)
def test_another_programs_database(tmp_path, capsys, observed):
    db = tmp_path / "places.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
    con.execute("INSERT INTO moz_places (url) VALUES ('https://example.org/')")
    con.commit()
    con.close()
    before = digest(db)
    code, err, after = refused(capsys, db)
    assert one_line(err) and "is a database of another program, not a cuda-llm session database" in err
    assert after == before, "no cuda-llm table was added to the other program's file"
    observed(f"exit {code}: {short(err, tmp_path)!r}; file unchanged")


async def one_recorded_session(tmp_path, server) -> Path:
    server.default = GOOD
    result, _ = await run_session(options(tmp_path, "ollama:loop-model", candidates=2, rounds=2), host=server.url)
    assert result.status == "finished"
    return tmp_path / "sessions.db"


@pytest.mark.fault(
    GROUP,
    "a database whose pages are damaged (bytes overwritten mid-file)",
    "every command that reads it says so in one line (exit 2, no traceback) and names the recovery",
)
def test_damaged_database(tmp_path, llm_server, capsys, observed):
    db = asyncio.run(one_recorded_session(tmp_path, llm_server))
    data = bytearray(db.read_bytes())
    assert len(data) > 4 * 4096, "several pages to damage"
    for page in range(1, len(data) // 4096):  # keep the header page, garble every other one
        data[page * 4096 + 8 : page * 4096 + 4096] = bytes([0xA5]) * (4096 - 8)
    db.write_bytes(bytes(data))
    seen = {}
    for args in (
        ["sessions"],
        ["export", "1", "--out", str(tmp_path / "out")],
        ["run", "--resume", "1", "--headless", "--compile-only"],
        ["replay", "1", "--compile-only"],
    ):
        code = cuda_llm([*args, "--db", str(db)])
        err = capsys.readouterr().err
        assert code == 2 and one_line(err) and "Traceback" not in err, (args, err)
        assert "damaged" in err or "not a cuda-llm session database" in err, (args, err)
        seen[args[0]] = err.strip()
    observed(f"exit 2 from sessions, export, run --resume, replay: {short(seen['export'], tmp_path)!r}")


@pytest.mark.fault(
    GROUP,
    "`sessions` and `export` read the database read-only; `sessions` with a mistyped --db",
    "the file is left byte for byte; the listing and the export work; a mistyped path creates nothing",
)
def test_reading_commands_write_nothing(tmp_path, llm_server, capsys, observed):
    db = asyncio.run(one_recorded_session(tmp_path, llm_server))
    before = {p.name: digest(p) for p in tmp_path.iterdir() if p.name.startswith("sessions.db")}
    assert cuda_llm(["sessions", "--db", str(db)]) == 0
    listing = capsys.readouterr().out
    assert cuda_llm(["export", "1", "--db", str(db), "--out", str(tmp_path / "exported")]) == 0
    capsys.readouterr()
    # (SQLite may add its -wal and -shm side files for a reader, where the folder allows.)
    assert digest(db) == before["sessions.db"], "the database file is unchanged"
    assert "vector_add" in listing and (tmp_path / "exported" / "report.json").is_file()
    code = cuda_llm(["sessions", "--db", str(tmp_path / "typo" / "x.db")])
    err = capsys.readouterr().err
    assert code == 2 and "no session database at" in err and not (tmp_path / "typo").exists()
    observed("listing and export read the file as it was; a mistyped --db creates nothing: " + short(err, tmp_path))


@pytest.mark.fault(
    GROUP,
    "a session whose process is gone without a trace (kill -9, power loss)",
    "listed as 'interrupted', not 'running'; --resume continues it",
)
async def test_a_session_whose_process_is_gone_shows_interrupted(tmp_path, llm_server, capsys, observed):
    db = await one_recorded_session(tmp_path, llm_server)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    store = SessionStore(db)
    try:
        store.update_session(1, status="running", owner_pid=gone.pid)
    finally:
        store.close()
    assert cuda_llm(["sessions", "--db", str(db), "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["status"] == "interrupted"
    resumed, _ = await resume(db, host=llm_server.url, rounds=3)
    assert resumed.status == "finished"
    observed("listed as interrupted; --resume finished it")
