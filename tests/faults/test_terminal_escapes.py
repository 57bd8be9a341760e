"""A reply, a compiler log or a server error holding terminal escapes cannot act on the terminal
of a headless command: `eval`, a headless `run` (its progress lines and its closing line) and
`sessions` print them as visible escapes (engine/cli/output.py wraps their output)."""

from __future__ import annotations

import pytest
from llm_servers import Reply
from scripted import GOOD_KERNEL, chunked, reply

from cuda_llm.engine.cli.main import main as cuda_llm

GROUP = "host safety"
# Retitle the window, clear the screen, home the cursor, then a forged verdict; a carriage return.
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[Hverdict: correct, 1000x\r"
RAW = ("\x1b", "\x07", "\r")


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
