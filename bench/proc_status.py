"""What Linux's /proc says of a process, for the benches that measure memory: one field of its
status file (VmRSS, VmHWM, in KiB) and the processes under it."""

from __future__ import annotations

import contextlib
from pathlib import Path


def status_kib(pid: int, key: str) -> int | None:
    """Field `key` of /proc/PID/status in KiB (None: no such process, or no such field)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def descendants(pid: int) -> list[int]:
    """pid and every process under it (from each of their threads' children lists)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{p}/task").iterdir():
                with contextlib.suppress(OSError):
                    todo += [int(c) for c in (task / "children").read_text().split()]
    return out
