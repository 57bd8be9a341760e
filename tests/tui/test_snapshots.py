"""Snapshots (pytest-textual-snapshot) of the start and run screens at 80x24 and 160x48 in the dark
and light themes. Fixed data only: a fixed model list, an empty session database, no telemetry, and
the run screen fed the events of tests/tui/demo.py instead of a live session.

Update after an intended change with `pytest tests/tui/test_snapshots.py --snapshot-update` and
look at the SVGs under tests/tui/__snapshots__/ before committing them.
"""

from __future__ import annotations

import pytest

from cuda_llm.app.app import CudaLlmApp
from cuda_llm.app.messages import EngineEvent, SessionOpened
from cuda_llm.app.options import Defaults, SessionRequest
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.engine.fsr.session import SessionOptions
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.library import builtin_tasks_dir
from tui.demo import demo_events

SIZES = [(80, 24), (160, 48)]
THEMES = ["cuda-dark", "cuda-light"]


async def fixed_models(_host: str | None) -> list[str]:
    return ["loop-model", "qwen2.5-coder:32b"]


def snapshot_app(tmp_path, theme: str) -> CudaLlmApp:
    return CudaLlmApp(
        Defaults(db=str(tmp_path / "sessions.db"), host="http://127.0.0.1:11434"),
        config_path=tmp_path / "tui.toml",
        config_overrides={"theme": theme, "task": "vector_add", "model": "ollama:loop-model"},
        poll_telemetry=False,
        ollama_lister=fixed_models,
        library=TaskLibrary((builtin_tasks_dir(),)),  # not the developer's own tasks
    )


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_start_screen(snap_compare, tmp_path, size, theme):
    async def settle(pilot) -> None:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(snapshot_app(tmp_path, theme), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_run_screen(snap_compare, tmp_path, size, theme):
    async def feed(pilot) -> None:
        app = pilot.app
        await app.workers.wait_for_complete()
        screen = RunScreen(SessionRequest(SessionOptions("vector_add", "ollama:loop-model")), autostart=False)
        await app.push_screen(screen)
        screen.post_message(SessionOpened(7, "vector_add", "ollama:loop-model", None, False))
        for event in demo_events():
            screen.post_message(EngineEvent(event))
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(snapshot_app(tmp_path, theme), terminal_size=size, run_before=feed)
