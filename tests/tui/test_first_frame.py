"""What the start screen's first frame waits for, counted (no timing): the engine modules it does not
draw with load after it, and multiprocessing's resource tracker (a process of its own) starts after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Read for the start screen's lists or its field texts, once the first frame is drawn.
AFTER_THE_FIRST_FRAME = (
    "cuda_llm.engine.store.sessions",  # the stored sessions (app/catalog.py, app/running.py)
    "cuda_llm.engine.task.library",  # the task library
    "cuda_llm.engine.judge.judgement",  # the best results the lists show
    "cuda_llm.engine.judge.metrics",  # the roofline tooltip's names
    "cuda_llm.engine.gpu.protocol",
)

FIRST_FRAME = """
import sys
from pathlib import Path
from multiprocessing import resource_tracker as rt
from cuda_llm.app.app import CudaLlmApp
from cuda_llm.app.options import Defaults

app = CudaLlmApp(Defaults(compile_only=True), config_path=Path(sys.argv[1]), poll_telemetry=False)
shown = app._display
seen = []

def display(screen, renderable):
    shown(screen, renderable)
    if renderable is not None and type(screen).__name__ == "StartScreen" and app.is_running and not seen:
        seen.append(1)
        loaded = [m for m in sys.argv[2:] if m in sys.modules]
        tracker = rt._resource_tracker._pid is not None
        print("AT_FIRST_FRAME", loaded, tracker, screen.query_one("#task-list").option_count, flush=True)
        screen.call_after_refresh(app.exit)

app._display = display
app.run(headless=True)
print("AFTER", [m for m in sys.argv[2:] if m in sys.modules], rt._resource_tracker._pid is not None, flush=True)
"""


def test_the_first_frame_waits_for_neither_the_catalog_nor_the_tracker(tmp_path):
    env = {**os.environ, "CUDA_LLM_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME, str(tmp_path / "tui.toml"), *AFTER_THE_FIRST_FRAME],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first = next(line for line in done.stdout.splitlines() if line.startswith("AT_FIRST_FRAME"))
    assert first == "AT_FIRST_FRAME [] False 0", first  # nothing of them loaded, no tracker, the list not read yet
    after = next(line for line in done.stdout.splitlines() if line.startswith("AFTER"))
    # ... and read once the frame is drawn (the app left after the lists were read), the tracker started
    assert "cuda_llm.engine.store.sessions" in after and "cuda_llm.engine.task.library" in after, after
    assert after.endswith(" True"), after
