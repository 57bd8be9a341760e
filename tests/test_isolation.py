"""The suite is isolated from the user's own data folders (tests/conftest.py): a task scaffolded in
the user's task folder or on CUDA_LLM_TASK_PATH, or a broken task.toml there, changes no count and
fails no test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cuda_llm.engine.core.paths import user_data_dir
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.library import builtin_tasks_dir
from cuda_llm.engine.task.scaffold import scaffold_task

ROOT = Path(__file__).resolve().parents[1]


def test_this_run_sees_only_the_builtin_library():
    assert "CUDA_LLM_TASK_PATH" not in os.environ
    assert TaskLibrary().names() == TaskLibrary((builtin_tasks_dir(),)).names()
    assert Path(os.environ["CUDA_LLM_HOME"]) in user_data_dir().parents


def _plant(home: Path, extra: Path) -> None:
    """What a user may have: a task of their own that loads, and one whose task.toml is broken,
    both in their task folder and on CUDA_LLM_TASK_PATH."""
    for root in (home / "data" / "tasks", extra):
        scaffold_task("my_own_task", root)
        broken = scaffold_task("my_broken_task", root)
        (broken / "task.toml").write_text("this is [not toml\n")


def test_a_users_tasks_and_a_broken_task_file_reach_no_test(tmp_path):
    home, extra = tmp_path / "users-home", tmp_path / "users-tasks"
    _plant(home, extra)
    env = {**os.environ, "CUDA_LLM_HOME": str(home), "CUDA_LLM_TASK_PATH": str(extra), "PYTHONPATH": str(ROOT)}

    # The control: outside the suite, this environment does show the planted tasks.
    listed = subprocess.run(
        [sys.executable, "-m", "cuda_llm.app.launcher", "tasks", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    records = json.loads(listed.stdout)
    assert listed.returncode == 1, "the broken task makes the listing fail"
    assert any(r.get("name") == "my_own_task" for r in records)
    assert sum("error" in r for r in records) == 1, "the broken one shadows its twin on the search path"

    # The suite run under it: the library tests pass and the GPU tests collect one per built-in task.
    builtin = len(TaskLibrary((builtin_tasks_dir(),)).names())
    tests = [
        "tests/test_isolation.py::test_this_run_sees_only_the_builtin_library",
        "tests/contract/test_binding.py::test_library_loader_yields_the_same_tasks",
        "tests/judge/test_library.py::test_tasks_without_a_library_say_so",
    ]
    inner = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert inner.returncode == 0, inner.stdout[-3000:]
    assert "3 passed" in inner.stdout
    collected = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--collect-only",
            "tests/gpu/test_baselines.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout[-3000:]
    assert f"{builtin} tests collected" in collected.stdout, collected.stdout[-1000:]
