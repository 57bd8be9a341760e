"""The child that runs a module file for `tasks import` is bounded (engine/torchtask/child.py): its
memory is capped, only the tail of what it prints is kept, and nothing it starts outlives it,
whether it ends by itself, by a time-out or because `tasks import` was sent SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import cli, one_line
from module_files import GOOD, nothing_created, write

pytest.importorskip("torch")


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def kill_if_alive(pid: int) -> None:
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


def test_a_daemon_holding_the_pipe_neither_delays_the_import_nor_outlives_it(tmp_path, capsys):
    # A double fork and setsid: a daemon of its own session, holding the child's stdout and stderr.
    # Waiting for the pipes' end would wait for the daemon (the import's whole time limit).
    pidfile = tmp_path / "daemon.pid"
    path = write(
        tmp_path,
        "forks.py",
        GOOD,
        head=f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                open({str(pidfile)!r}, "w").write(str(os.getpid()))
                time.sleep(600)
            os._exit(0)
        os.wait()
        """,
    )
    try:
        code, out, err = cli(capsys, "tasks", "import", str(path), "--dir", str(tmp_path / "tasks"))
        assert code == 0, err
        assert "created" in out
        daemon = int(pidfile.read_text())
        assert not alive(daemon), "the module's daemon outlived the import"
    finally:
        if pidfile.exists():
            kill_if_alive(int(pidfile.read_text()))


def test_a_module_that_allocates_gigabytes_is_refused_by_the_memory_cap(tmp_path, capsys):
    # 8 GiB asked for and never touched: without the cap it costs nothing and the import succeeds.
    path = write(tmp_path, "hog.py", GOOD, head="import numpy as np\n_hog = np.empty(8 << 30, dtype=np.uint8)\n")
    code, _out, err = cli(capsys, "tasks", "import", str(path), "--dir", str(tmp_path / "tasks"))
    assert code == 2
    line = one_line(err)
    assert "hog.py needed more than 4 GiB of memory while loading" in line
    assert nothing_created(tmp_path / "tasks")


def test_what_the_module_prints_is_not_kept_whole(tmp_path):
    # 512 MiB printed while loading. The import runs in a process of its own so that its peak
    # resident memory (wait4's) is the parent's alone beside its child's, which imports PyTorch.
    path = write(
        tmp_path,
        "chatty.py",
        GOOD,
        head="""
        import sys
        for _ in range(512):
            sys.stdout.write("x" * (1 << 20))
        sys.stdout.write("\\n")
        sys.stdout.flush()
        """,
    )
    script = (
        "import sys; from pathlib import Path; "
        "from cuda_llm.engine.torchtask.inspect_module import inspect_module; "
        "facts = inspect_module(Path(sys.argv[1])); print(facts.sizes)"
    )
    # Measured by a small intermediate process: a process's peak RSS (wait4's ru_maxrss) starts from
    # that of the process it was forked from, and a pytest worker that has run the torch tests holds
    # gigabytes (CI saw 2662 MiB here from the worker alone).
    measure = (
        "import os, subprocess, sys; "
        "p = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]]); "
        "_pid, status, usage = os.wait4(p.pid, 0); "
        "print('rc', os.waitstatus_to_exitcode(status), 'maxrss_kib', usage.ru_maxrss)"
    )
    proc = subprocess.Popen([sys.executable, "-c", measure, script, str(path)], stdout=subprocess.PIPE)
    out, _ = proc.communicate()
    assert proc.returncode == 0 and b"'n': 4096" in out, out[-500:]
    rc, maxrss = out.split(b"rc ")[-1].split(b" maxrss_kib ")
    assert int(rc) == 0
    peak_mib = int(maxrss) / 1024  # KiB on Linux
    assert peak_mib < 900, f"peak {peak_mib:.0f} MiB: the printed output was kept"


def test_sigterm_to_tasks_import_ends_the_child_and_what_it_started(tmp_path):
    # The module tells the test, through a FIFO, the pids of the probe child and of a process it
    # forked, then loops. The test blocks on the FIFO (no sleeps), sends SIGTERM to `tasks import`.
    fifo = tmp_path / "pids"
    os.mkfifo(fifo)
    path = write(
        tmp_path,
        "loops.py",
        GOOD,
        head=f"""
        import os
        pid = os.fork()
        if pid == 0:
            while True:
                pass
        with open({str(fifo)!r}, "w") as f:
            f.write(f"{{os.getpid()}} {{pid}}\\n")
        while True:
            pass
        """,
    )
    cmd = [sys.executable, "-m", "cuda_llm.app.launcher", "tasks", "import", str(path), "--dir", str(tmp_path / "t")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    pids: list[int] = []
    try:
        with open(fifo, encoding="utf-8") as f:  # blocks until the module opens it
            pids = [int(p) for p in f.read().split()]
        assert all(alive(p) for p in pids)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM
        assert [p for p in pids if alive(p)] == [], "the probe child or its fork outlived tasks import"
    finally:
        proc.kill()
        proc.wait()
        for p in pids:
            kill_if_alive(p)
