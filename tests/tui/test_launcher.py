"""The console script: --help never imports Textual, and the TUI's options are listed there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_help_lists_the_tui_options_without_importing_textual():
    code = (
        "import sys, io, contextlib\n"
        "from cuda_llm.app.launcher import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    rc = main(['--help'])\n"
        "assert rc == 0, rc\n"
        "assert 'textual' not in sys.modules, 'help imported textual'\n"
        "print(out.getvalue())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--compile-only" in done.stdout and "with no command (the terminal UI)" in done.stdout


def test_headless_manual_is_refused_in_one_line():
    argv = "['run', 'vector_add', '--model', 'manual', '--headless']"
    code = f"from cuda_llm.app.launcher import main; raise SystemExit(main({argv}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "needs the terminal UI" in done.stderr
