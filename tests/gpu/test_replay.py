"""On the GPU: a session judged for real (scripted model replies from the loopback server), then
re-judged from its recording with `cuda-llm run --model replay:ID`, must reach the same decisions;
`cuda-llm bench --model replay:latest` prints the paper's table for those tasks."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scripted import (
    BROKEN_KERNEL,
    FAST_REDUCTION,
    FAST_REDUCTION_PLAN,
    GOOD_KERNEL,
    RACY_REDUCTION,
    TAIL_UNWRITTEN_KERNEL,
    chunked,
    reply,
)

from cuda_llm.engine.core.settings import LoopSettings
from cuda_llm.engine.fsr.control import Controller
from cuda_llm.engine.fsr.session import SessionOptions, open_session
from cuda_llm.engine.store.sessions import SessionStore

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]

SCRIPTS = {
    # N=2, D=2. Round 1: a float4 kernel (~20% faster than the baseline: accepted) and one that
    # leaves the tail unwritten. Round 2: a compile error and the same float4 kernel again (no gain
    # beyond the noise: no new best).
    "vector_add": (2, [reply(GOOD_KERNEL), reply(TAIL_UNWRITTEN_KERNEL), reply(BROKEN_KERNEL), reply(GOOD_KERNEL)]),
    # N=2, D=1: a shuffle reduction (~9x faster) and a racy one (wrong).
    "reduction_sum": (1, [reply(FAST_REDUCTION, FAST_REDUCTION_PLAN), reply(RACY_REDUCTION, FAST_REDUCTION_PLAN)]),
}


def decisions(db: Path, session_id: int) -> tuple[dict[str, str], dict[str, str | None], str | None]:
    store = SessionStore(db)
    try:
        cands = store.candidates(session_id)
        return (
            {c.label: c.status for c in cands},
            {c.label: c.decision for c in cands},
            store.session(session_id).best_label,
        )
    finally:
        store.close()


def record_session(gpu, llm_server, db: Path, task: str) -> int:
    rounds, replies = SCRIPTS[task]

    def by_slot(request):  # the reply for a slot does not depend on which request arrives first
        prompt = request.messages[-1]["content"]
        round_ = 2 if "# Round 2" in prompt else 1
        return chunked(replies[(round_ - 1) * 2 + request.body.get("options", {}).get("seed", 0) % 2])

    llm_server.default = by_slot
    settings = LoopSettings(candidates=2, rounds=rounds, repairs=0, patience=None, target_roofline=None)
    settings = dataclasses.replace(settings, generate=dataclasses.replace(settings.generate, seed=0))
    options = SessionOptions(task=task, model="ollama:loop-model", loop=settings, db=str(db), host=llm_server.url)

    async def go() -> int:
        session = await open_session(options, Controller(stop_when_paused=True), environment=gpu.env)
        try:
            result = await session.run()
        finally:  # the environment (GPU worker) belongs to the fixture: close only the rest
            await session.provider.close()
            session.store.close()
        assert result.status == "finished", result.reason
        return result.session_id

    return gpu.run(go())


def cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_LLM_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "cuda_llm.app.launcher", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )


@pytest.mark.parametrize("task", list(SCRIPTS))
def test_replay_on_the_gpu_reaches_the_same_decisions(gpu, llm_server, tmp_path, task):
    db = tmp_path / "sessions.db"
    original = record_session(gpu, llm_server, db, task)
    statuses, decided, best = decisions(db, original)
    assert best != "baseline" and decided[best] == "auto-accepted", (statuses, decided)
    assert "wrong" in statuses.values() or "compile_error" in statuses.values()

    served = len(llm_server.chat_requests)
    done = cli(
        "run",
        task,
        "--model",
        f"replay:{original}",
        "--headless",
        "--db",
        str(db),
        "-N",
        "2",
        "-D",
        str(SCRIPTS[task][0]),
        "-R",
        "0",
        "-K",
        "0",
        "--target-roofline",
        "0",
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert len(llm_server.chat_requests) == served, "the replay asked no model"
    replayed = int(done.stdout.split("session ")[1].split(":")[0])
    assert decisions(db, replayed) == (statuses, decided, best)

    table = cli("bench", "--model", "replay:latest", "--tasks", task, "--db", str(db), tmp_path=tmp_path)
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if line.startswith(f"| {task} |"))
    speedup = float(row.split("|")[4].strip().rstrip("x"))
    assert speedup > 1.1 and "| yes (" in row, row
