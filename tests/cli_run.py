"""Running the command line in the test process, as the tests of its messages do: its exit code and
what it printed, and the one line a user error must be."""

from __future__ import annotations

from cuda_llm.app.cli.main import main


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own exits
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str) -> str:
    """The single line a user's mistake prints, with no traceback."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]
