"""A reply, a compiler log or a server error holding terminal escapes cannot act on the terminal: the
headless commands (`eval`, a headless `run` with its progress lines and closing line, `sessions`) print
them as visible escapes (app/cli/output.py wraps their output), and the TUI, run in a real
pseudo-terminal, writes none of them (app/widgets/text.py filters every rendered line)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time
from collections.abc import Callable

import pytest
from llm_servers import LoopbackLLMServer, Reply
from scripted import GOOD_KERNEL, chunked, reply

from cuda_llm.app.cli.main import main as cuda_llm

GROUP = "host safety"
# Retitle the window, clear the screen, home the cursor, then a forged verdict; a carriage return.
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[Hverdict: correct, 1000x\r"
RAW = ("\x1b", "\x07", "\r")
SESSION_S = 90.0  # the app's first start imports Textual and compiles the baseline


def evil_kernel() -> str:
    return f"#error {ESCAPES}\n" + GOOD_KERNEL


def assert_inert(text: str) -> None:
    assert not any(ch in text for ch in RAW), repr(text[:400])
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in text, "shown, as escapes"


@pytest.mark.fault(GROUP, "terminal escapes in a compile error, through `eval`", "printed as visible escapes")
def test_eval_prints_a_hostile_compile_log_inert(tmp_path, capsys, monkeypatch, observed):
    monkeypatch.setenv("CUDA_LLM_HOME", str(tmp_path / "home"))
    path = tmp_path / "reply.md"
    path.write_text(reply(evil_kernel()))
    code = cuda_llm(["eval", "vector_add", str(path), "--compile-only"])
    out = capsys.readouterr()
    assert code == 1
    assert_inert(out.out + out.err)
    observed(f"exit {code}; no ESC, BEL or CR reached the terminal")


@pytest.mark.fault(
    GROUP,
    "terminal escapes in a reply's compile error and in a server's error text, through a headless run",
    "progress and closing lines print them as visible escapes",
)
def test_a_headless_run_prints_hostile_text_inert(tmp_path, capsys, llm_server, observed):
    llm_server.script(chunked(reply(evil_kernel())), Reply.server_error(500, ESCAPES))
    code = cuda_llm(
        [
            "run", "vector_add", "--model", "ollama:loop-model", "--host", llm_server.url, "--headless",
            "--compile-only", "--rounds", "2", "--candidates", "1", "--repairs", "0", "--patience", "0",
            "--db", str(tmp_path / "s.db"),
        ]
    )  # fmt: skip
    out = capsys.readouterr()
    assert_inert(out.out + out.err)
    assert "pwned" in out.err, "the server's error text was shown too"
    code_sessions = cuda_llm(["sessions", "--db", str(tmp_path / "s.db")])
    listing = capsys.readouterr()
    assert not any(ch in listing.out + listing.err for ch in RAW)
    observed(f"run exit {code}, sessions exit {code_sessions}; no ESC, BEL or CR reached the terminal")


def _read_pty(fd: int, until: Callable[[bytes], bool], timeout: float) -> bytes:
    """Everything the program writes to its terminal, until `until(output)` or `timeout`."""
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not until(out):
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the program exited and the terminal closed
                break
            if not data:
                break
            out += data
    return out


# What the payload would look like had it reached the terminal: the sequences as the reply, the log,
# the server and the model list wrote them. (The app's own escapes, for colours and cursor moves, are
# expected; these are not among them.)
RAW_BYTES = (b"\x1b]0;pwned", b"pwned\x07", b"\x1b[2J\x1b[Hverdict", b"\xc2\x9b", b"\xe2\x80\xae")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pseudo-terminal of Linux")
@pytest.mark.fault(
    GROUP,
    "terminal escapes in a reply, its compile error, a server error and a model name, through the TUI in a "
    "real terminal",
    "none reaches the terminal: every rendered line is filtered (app/widgets/text.py); the text stays readable",
)
def test_the_tui_writes_no_hostile_escape_to_its_terminal(tmp_path, observed):
    evil_name = "evil" + ESCAPES.replace("\r", "") + "\u202e\x9b2J"
    explanation = f"Faster {ESCAPES} now\u202e."
    with LoopbackLLMServer(models=("loop-model", evil_name)) as server:
        server.script(chunked(reply(evil_kernel(), note=explanation)))
        server.default = Reply.server_error(500, "overloaded " + ESCAPES)
        pid, fd = pty.fork()
        if pid == 0:  # the child: the app, on the pseudo-terminal
            os.environ.update(CUDA_LLM_HOME=str(tmp_path / "home"), TERM="xterm-256color", COLUMNS="160", LINES="48")
            os.execv(
                sys.executable,
                [
                    sys.executable, "-m", "cuda_llm.app.launcher", "run", "vector_add", "--model", "ollama:loop-model",
                    "--host", server.url, "--compile-only", "--arch", "sm_90", "--candidates", "1", "--rounds", "2",
                    "--repairs", "0", "--patience", "0", "--db", str(tmp_path / "s.db"),
                ],
            )  # fmt: skip
        try:
            fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
            # The compile error's text, then the server's error text, each drawn without its escapes.
            output = _read_pty(fd, lambda out: b"]0;pwned" in out and b"overloaded" in out, SESSION_S)
            os.write(fd, b"\x11")  # Ctrl+Q
            output += _read_pty(fd, lambda out: False, 10)
        finally:
            with contextlib.suppress(ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
    assert b"]0;pwned" in output and b"overloaded" in output, output[-2000:]
    found = [raw for raw in RAW_BYTES if raw in output]
    assert not found, found
    observed(
        f"{len(output):,} bytes written to the terminal; the payload shown without its escapes, none of "
        f"{len(RAW_BYTES)} raw sequences among them"
    )
