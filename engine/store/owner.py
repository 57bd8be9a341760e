"""Whether the process recorded as running a session is still that process.

A session marked `running` names its owner by host and PID. A PID alone is not enough: after the
owner was killed (or the machine restarted) the PID may be given to an unrelated process, and the
session would look live forever, with `--resume` telling the user to stop a stranger. The owner
started before it claimed the session, and the session is written to as it runs; a process with that
PID that started after the session's last write cannot be its owner.
"""

from __future__ import annotations

import os
from pathlib import Path

# /proc/stat's boot time is in whole seconds, so a process start time read from /proc is only good to
# about a second; a PID reused within this much after the session's last write still counts as live
# (the safe side: --resume then asks to stop it rather than running the session twice).
START_TIME_SLACK_S = 2.0


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


def process_started_at(pid: int, proc: Path = Path("/proc")) -> float | None:
    """The wall-clock time process `pid` started, from /proc (Linux); None where that is not known."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
        boot = next(
            float(line.split()[1]) for line in (proc / "stat").read_text().splitlines() if line.startswith("btime ")
        )
        # Field 22 (starttime, in clock ticks since boot) counts from the end of the command name,
        # which is in parentheses and may itself hold spaces or parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks = int(fields[19])
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def owner_alive(pid: int, last_write: float, proc: Path = Path("/proc")) -> bool:
    """Whether process `pid` can still be the owner of a session last written at `last_write`."""
    if not process_alive(pid):
        return False
    started = process_started_at(pid, proc)
    return started is None or started <= last_write + START_TIME_SLACK_S
