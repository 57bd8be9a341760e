"""Driving whole sessions in tests, compile-only: in process through open_session (fast, events
visible) or as the real CLI in a child process (for kills, signals and second instances).

Shared by tests/fsr and the fault-injection suite in tests/faults.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from cuda_llm.engine.core.settings import GenerateOptions, LoopSettings, RetryPolicy
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.control import Controller
from cuda_llm.engine.fsr.session import SessionOptions, open_session

ROOT = Path(__file__).resolve().parents[1]

# Retries in tests: as in production, but without the seconds of backoff.
FAST_RETRY = RetryPolicy(attempts=2, base_delay_s=0.01, max_delay_s=0.05)
FAST_GEN = GenerateOptions(timeout_s=10.0, first_token_timeout_s=5.0)


class Recorder:
    """An event bus subscriber that keeps every event."""

    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def __call__(self, event: ev.Event) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]

    def final_statuses(self) -> dict[str, str]:
        """Each candidate's status after its last stage."""
        return {e.judgement.label: e.judgement.status for e in self.of(ev.CandidateJudged)}


def options(tmp_path, model: str, **loop) -> SessionOptions:
    """A new compile-only vector_add session recording into tmp_path/sessions.db. It runs the rounds it is
    given: no stop for rounds without gain, nor at the roofline target (on a real GPU a good first kernel
    reaches 90% of it: the float4 add's 92.6% on an H200 ended a 2-round session after round 1)."""
    settings = dataclasses.replace(
        LoopSettings(retry=FAST_RETRY, generate=FAST_GEN, patience=None, target_roofline=None), **loop
    )
    return SessionOptions(
        task="vector_add", model=model, loop=settings, db=str(tmp_path / "sessions.db"), compile_only=True, arch="sm_90"
    )


async def run_session(
    opts: SessionOptions,
    host: str | None = None,
    base_url: str | None = None,
    control: Controller | None = None,
    recorder: Recorder | None = None,
    **open_kwargs,
):
    """Open and run a session to its end; returns (SessionResult, Recorder). `open_kwargs` go to
    open_session (settings=..., store=...)."""
    opts = dataclasses.replace(opts, host=host, base_url=base_url)
    control = control or Controller(auto_accept=True, stop_when_paused=True)
    recorder = recorder or Recorder()
    session = await open_session(opts, control, **open_kwargs)
    session.bus.subscribe(recorder)
    try:
        result = await session.run()
    finally:
        await session.close()
    return result, recorder


def cli_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a CLI child: a private CUDA_LLM_HOME, this checkout importable."""
    return {**os.environ, "CUDA_LLM_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}


def cli(*args: str, env: dict[str, str]) -> subprocess.Popen:
    """`cuda-llm ARGS` in a child process, stdout and stderr captured as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "cuda_llm.app.launcher", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def labels(db: Path, session_id: int | None = None) -> list[tuple[str, str | None, bool]]:
    """(label, status, has a reply) of every candidate recorded, in the order written. Read with a
    connection of its own, as another process would."""
    con = sqlite3.connect(db)
    try:
        where, params = ("WHERE session_id = ?", (session_id,)) if session_id is not None else ("", ())
        rows = con.execute(
            f"SELECT label, status, reply IS NOT NULL FROM candidates {where} ORDER BY id", params
        ).fetchall()
    except sqlite3.OperationalError:  # the other process has created the file but not the schema yet
        return []
    finally:
        con.close()
    return [(a, b, bool(c)) for a, b, c in rows]
