"""Files that several processes may write at once: one GPU worker per GPU storing measured peaks,
two app instances saving their state. A write goes to a temporary file of its own in the target's
folder and is renamed over the target, so a reader sees the old file or the new one, never half of
either; an update (read, change, write) holds a lock beside the file, so two updates do not drop
each other's change."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8) in one rename. Raises OSError; no temporary file is left
    behind either way. Each writer gets its own temporary name, so writers never rename each
    other's half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path`'s lock file (`path` + ".lock") while the block runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def update_atomically(path: Path, change: Callable[[str | None], str]) -> None:
    """Read `path` (None when it does not exist), pass its text to `change` and write what it
    returns, under the lock: a concurrent update waits, then sees this one's result."""
    with locked(path):
        try:
            old: str | None = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            old = None
        write_atomically(path, change(old))
