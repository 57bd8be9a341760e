"""The child process of `tasks import`, bounded: memory, output, time and every process it starts.

Importing a module file runs the user's code. The child that does it (probe.py) gets:
- a memory cap (RLIMIT_DATA: allocated memory; RLIMIT_AS would also count the address space
  PyTorch's libraries merely map), so a file that allocates gigabytes at import is refused, not
  the machine's memory taken;
- a process group and a session of its own, and it is the "child subreaper" of what it starts: a
  process the module forks stays its descendant even after a double fork and setsid, so the whole
  tree is found through /proc and killed when the child ends, is timed out, or when `tasks import`
  itself is ended by SIGTERM, SIGHUP or Ctrl-C; PR_SET_PDEATHSIG kills the child if the parent dies
  by SIGKILL;
- its output read as it comes and only the tail kept (what the module prints is not the answer:
  the answer comes back in a file of its own), and the parent stops reading as soon as the child
  exits: a grandchild that holds the pipe open cannot keep the import waiting.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# The meta-device probes need no tensor memory; the CPU fallback holds inputs up to 1 GiB
# (probe.CPU_FALLBACK_MAX_BYTES) with outputs and intermediates beside them, and PyTorch's import
# takes a few hundred MB. A file that needs more than this to load is not a problem the importer
# can check on a shared machine.
CHILD_MEMORY_BYTES = 4 * 2**30
# What the module printed is kept only for the last line of a failure: the tail is enough.
OUTPUT_TAIL_BYTES = 64 * 1024
# The facts of a whole model (hundreds of parameters, each with its name and shape) are tens of KB.
RESULT_MAX_BYTES = 16 * 2**20
# Reads of the child's pipes, per call.
_READ_CHUNK = 65536

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class ChildRun:
    returncode: int  # negative: ended by that signal
    result: str | None  # what the child wrote to its result file (None: nothing)
    stderr_tail: str
    timed_out: bool
    memory_limit: int


def _prctl(option: int, value: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _limit_child(memory_bytes: int, parent_pid: int) -> None:
    """Run in the child between fork and exec (async-signal-safe enough: no locks taken)."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    cap = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))  # the module cannot raise it again
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if os.getppid() != parent_pid:  # the parent died before PDEATHSIG took effect
        os._exit(1)


def _children_of() -> dict[int, list[int]]:
    """Every process's children, from /proc (empty where there is no /proc)."""
    out: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            out.setdefault(int(fields[1]), []).append(int(entry))
    return out


def descendants(pid: int) -> list[int]:
    """The processes below `pid` (children, theirs, ...), found through their parent links."""
    tree = _children_of()
    found: list[int] = []
    todo = list(tree.get(pid, []))
    while todo:
        p = todo.pop()
        if p not in found:
            found.append(p)
            todo.extend(tree.get(p, []))
    return found


def end_tree(pid: int, include_root: bool = True) -> None:
    """Stop then kill every descendant of `pid` (and `pid`): stopped first, so none can fork a new
    one between the look and the kill; looked for again until none is left."""
    for _ in range(8):  # each pass finds what forked during the last; a fork bomb is stopped by then
        found = descendants(pid)
        if not found:
            break
        for p in found:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGSTOP)
        for p in found:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
    if include_root:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        end_tree(proc.pid)
    else:
        end_tree(proc.pid, include_root=False)  # a zombie until waited for: its tree still hangs off it
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever of its group the tree walk missed
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


class _EndedBySignal(BaseException):
    """SIGTERM or SIGHUP arrived while the child ran: end it, then end as the signal meant."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _signals_end_the_child() -> Iterator[None]:
    """While the child runs, SIGTERM and SIGHUP unwind this call (so the child and its tree are
    killed in the `finally`), then end the process as they would have."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; PDEATHSIG still ends the child with us
        return

    def handler(signum: int, _frame: object) -> None:
        raise _EndedBySignal(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    except _EndedBySignal as ended:
        for s, h in old.items():
            signal.signal(s, h)
        signal.raise_signal(ended.signum)  # the previous disposition decides (default: the process ends)
        raise SystemExit(128 + ended.signum) from None
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class _Tail:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > 2 * self.limit:  # trimmed now and then, not on every chunk
            del self.data[: len(self.data) - self.limit]

    def text(self) -> str:
        return bytes(self.data[-self.limit :]).decode("utf-8", "replace")


def _pump(proc: subprocess.Popen[bytes], deadline: float, out: _Tail, err: _Tail) -> bool:
    """Read the child's pipes until it exits (True) or the deadline passes (False). Never waits for
    the pipes' end: a process the child left behind may hold them open."""
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    pidfd = -1
    with contextlib.suppress(OSError, AttributeError):
        pidfd = os.pidfd_open(proc.pid)  # readable once the child has exited
    try:
        for stream, tail in ((proc.stdout, out), (proc.stderr, err)):
            os.set_blocking(stream.fileno(), False)
            sel.register(stream.fileno(), selectors.EVENT_READ, tail)
        if pidfd >= 0:
            sel.register(pidfd, selectors.EVENT_READ, None)
        while True:
            remaining = deadline - time.monotonic()
            if proc.poll() is not None:
                _drain(sel)
                return True
            if remaining <= 0:
                return False
            # Without a pidfd the exit is noticed on the next wake-up: a quarter second at most.
            for key, _ in sel.select(timeout=remaining if pidfd >= 0 else min(remaining, 0.25)):
                if key.data is None:
                    continue
                chunk = _read(key.fd)
                if chunk:
                    key.data.add(chunk)
                elif chunk is not None:  # end of this pipe
                    sel.unregister(key.fd)
    finally:
        sel.close()
        if pidfd >= 0:
            os.close(pidfd)


def _read(fd: int) -> bytes | None:
    try:
        return os.read(fd, _READ_CHUNK)
    except BlockingIOError:
        return None


def _drain(sel: selectors.BaseSelector) -> None:
    """What the exited child left in the pipes, without waiting for more."""
    for key in list(sel.get_map().values()):
        if key.data is None:
            continue
        for _ in range(2 * OUTPUT_TAIL_BYTES // _READ_CHUNK + 1):
            chunk = _read(key.fd)
            if not chunk:
                break
            key.data.add(chunk)


def run_bounded(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    memory_bytes: int = CHILD_MEMORY_BYTES,
) -> ChildRun:
    """Run `argv` + [RESULT_FILE] as the bounded child; return its result file's text and the tail
    of its stderr. The child, everything it started and its pipes are gone when this returns,
    however it returns."""
    with _signals_end_the_child(), tempfile.TemporaryDirectory(prefix="cuda-llm-import-") as tmp:
        result_path = Path(tmp) / "result.json"
        out, err = _Tail(OUTPUT_TAIL_BYTES), _Tail(OUTPUT_TAIL_BYTES)
        parent = os.getpid()
        proc = subprocess.Popen(
            [*argv, str(result_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            preexec_fn=lambda: _limit_child(memory_bytes, parent),
        )
        try:
            finished = _pump(proc, time.monotonic() + timeout_s, out, err)
        finally:
            _end_group(proc)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        result = None
        with contextlib.suppress(OSError):
            if result_path.stat().st_size <= RESULT_MAX_BYTES:
                result = result_path.read_text(encoding="utf-8", errors="replace")
        return ChildRun(
            returncode=proc.returncode if proc.returncode is not None else -signal.SIGKILL,
            result=result,
            stderr_tail=err.text(),
            timed_out=not finished,
            memory_limit=memory_bytes,
        )
