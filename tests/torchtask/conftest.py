"""Shared helpers for the tests of tasks imported from PyTorch modules (engine/torchtask/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_session import gpu  # noqa: F401  (the session-wide GPU fixture, for the gpu tests here)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "pytorch"
REPLIES = EXAMPLES / "replies"
EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("*.py"))


@pytest.fixture(scope="session")
def imported(tmp_path_factory) -> dict[str, Path]:
    """Every example module imported once (each import starts PyTorch in a child: seconds)."""
    pytest.importorskip("torch")
    from cuda_llm.engine.torchtask.importer import import_module

    root = tmp_path_factory.mktemp("imported")
    return {name: import_module(EXAMPLES / f"{name}.py", root).folder for name in EXAMPLE_NAMES}


# Small module files shaped like KernelBench's problems with 0-d tensors, numbers and bools
# (test_import_types.py), and their hand-written replies.
KB_LIKE = Path(__file__).resolve().parent / "kb_like"
KB_REPLIES = KB_LIKE / "replies"
KB_NAMES = sorted(p.stem for p in KB_LIKE.glob("*.py"))


@pytest.fixture(scope="session")
def kb_imported(tmp_path_factory) -> dict[str, Path]:
    """Every kb_like module imported once (each import starts PyTorch in a child: seconds)."""
    pytest.importorskip("torch")
    from cuda_llm.engine.torchtask.importer import import_module

    root = tmp_path_factory.mktemp("kb_like")
    return {name: import_module(KB_LIKE / f"{name}.py", root).folder for name in KB_NAMES}
