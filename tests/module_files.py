"""Module files for the tests of `tasks import`: a good one to start from, writing one into a test's
folder, and running the import on one that must be refused."""

from __future__ import annotations

import textwrap
from pathlib import Path

from cli_run import cli, one_line

# The smallest module file the importer takes: one size constant, one input, one output.
GOOD = """
import torch
import torch.nn as nn

n = 4096


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
"""


def write(tmp_path: Path, name: str, text: str, head: str = "") -> Path:
    """tmp_path/name holding `text`, after `head` (lines the module runs first), each dedented."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(head) + textwrap.dedent(text), encoding="utf-8")
    return path


def nothing_created(root: Path) -> bool:
    return not root.exists() or not any(root.iterdir())


def refused(tmp_path: Path, capsys, text: str, *options: str, name: str = "m.py") -> str:
    """The one line `tasks import` refuses the module `text` with (exit 2, no task folder made)."""
    path = write(tmp_path, name, text)
    root = tmp_path / "tasks"
    code, _out, err = cli(capsys, "tasks", "import", str(path), "--dir", str(root), *options)
    assert code == 2, err
    assert nothing_created(root)
    return one_line(err)
