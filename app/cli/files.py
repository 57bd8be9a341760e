"""The files and folders named on a command line: one clear line for each way such a path can be wrong
(missing, a folder, unreadable, not text, too large) instead of a traceback; `-` reads standard input;
output folders are made, or refused with the reason."""

from __future__ import annotations

import errno
import stat
import sys
from pathlib import Path

from cuda_llm.engine.core.errors import UserError

STDIN = "-"


class FileArgumentError(UserError):
    """A path given on the command line that cannot be used as asked."""


class NotTextError(FileArgumentError):
    """The file was read but is not UTF-8 text (binary data, another encoding)."""


def shown(path: str | Path) -> str:
    """How messages name a path argument ("standard input" for -)."""
    return "standard input" if str(path) == STDIN else str(path)


def _why(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied"
    return exc.strerror or type(exc).__name__


def read_bytes(path: str | Path, what: str, max_bytes: int) -> bytes:
    """At most `max_bytes` of a file (or of standard input for -); more is an error, not a silent cut."""
    name = shown(path)
    try:
        if str(path) == STDIN:
            data = sys.stdin.buffer.read(max_bytes + 1)
        else:
            p = Path(path)
            if p.is_dir():
                raise FileArgumentError(f"{what} {name} is a folder, not a file")
            _refuse_special(p, what, name)
            with p.open("rb") as f:
                data = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise FileArgumentError(f"{what}: no such file: {name}") from None
    except IsADirectoryError:
        raise FileArgumentError(f"{what} {name} is a folder, not a file") from None
    except OSError as exc:
        raise FileArgumentError(f"cannot read {what} {name}: {_why(exc)}") from None
    if len(data) > max_bytes:
        raise FileArgumentError(f"{what} {name} is larger than {max_bytes:,} bytes: that is not a {what}")
    return data


def _refuse_special(path: Path, what: str, name: str) -> None:
    """Only a regular file is read by its name: opening a named pipe waits for a writer that may never
    come (the command would hang), and a device or socket is not a file anyone meant. Standard input
    (`-`) is how a pipe is given."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # open() says what is wrong with it
    if stat.S_ISREG(mode):
        return
    kind = "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    raise FileArgumentError(
        f"{what} {name} is {kind}, not a file: give a file, or - to read standard input (`... | cuda-llm ... -`)"
    )


def read_text(path: str | Path, what: str, max_bytes: int) -> str:
    """A text file's contents; NotTextError for binary data or another encoding than UTF-8."""
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise NotTextError(f"{shown(path)} is not UTF-8 text") from None


def output_folder(path: str | Path, option: str = "--out") -> Path:
    """A folder to write into, made if needed; `option` is what the person gave it with."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise FileArgumentError(f"{folder} exists and is not a folder: choose another {option}") from None
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            raise FileArgumentError(f"cannot make the folder {folder}: part of its path is a file") from None
        raise FileArgumentError(f"cannot make the folder {folder}: {_why(exc)}") from None
    return folder


def write_text(path: Path, text: str) -> None:
    """Write a file for people to read (an export, a report, a table): every control and invisible
    format character in it is written as a visible escape (app/terminal.py), since `cat` of the
    file is a screen. A .cu file is escaped as C source (c_source_safe), so that it still compiles
    to the program it was; JSON escapes its own."""
    from cuda_llm.app.terminal import c_source_safe, terminal_safe

    safe = c_source_safe if path.suffix in (".cu", ".cuh") else terminal_safe
    try:
        path.write_text(safe(text), encoding="utf-8")
    except OSError as exc:
        raise FileArgumentError(f"cannot write {path}: {_why(exc)}") from None
