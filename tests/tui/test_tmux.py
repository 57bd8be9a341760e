"""End to end in a real terminal: `cuda-llm` (python -m cuda_llm.app.launcher) in a detached tmux session
against the loopback model server, compile-only. Keys go in with send-keys; the screen comes back
with capture-pane. Skipped cleanly where tmux is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scripted import chunked, reply

ROOT = Path(__file__).resolve().parents[2]
SIZE = (160, 48)  # wide enough for every pane at once
# Times the task filter is typed before the test gives up (keys sent before the app reads them are lost).
FILTER_ATTEMPTS = 3
STEP_S = 0.25
START_S = 60.0  # the app's first start imports Textual and compiles the baseline
SESSION_S = 90.0

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """One tmux server of our own (its own socket), so a developer's sessions are never touched."""

    def __init__(self, name: str) -> None:
        self.socket = f"cuda-llm-test-{os.getpid()}-{name}"
        self.target = name

    def run(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=20)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def start(self, command: str, size: tuple[int, int]) -> None:
        width, height = str(size[0]), str(size[1])
        # A detached session's program can start before its terminal has the size -x/-y ask for
        # (it sees 80x24), so the shell sets the size before the program starts.
        command = f"stty cols {width} rows {height} && {command}"
        self.run("new-session", "-d", "-s", self.target, "-x", width, "-y", height, command)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.target, *keys)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.target)

    def wait_for(self, texts: list[str], timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            try:
                screen = self.screen()
            except RuntimeError:  # the app exited: the last screen says why
                break
            if all(t in screen for t in texts):
                return screen
            time.sleep(STEP_S)
        missing = [t for t in texts if t not in screen]
        raise AssertionError(f"waiting for {what}: {missing} not on the screen:\n{screen}")

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=20)


def test_a_session_in_tmux(tmp_path, llm_server):
    llm_server.default = chunked(reply())
    home = tmp_path / "home"
    env = f"CUDA_LLM_HOME={home} PYTHONPATH={ROOT} OLLAMA_HOST={llm_server.url}"
    app = (
        f"{sys.executable} -m cuda_llm.app.launcher --compile-only --arch sm_90 --candidates 1 --rounds 1 "
        f"--model ollama:loop-model --db {tmp_path / 'sessions.db'}"
    )
    tmux = Tmux("tui")
    try:
        # Textual draws on stderr, so nothing is redirected; a crash would show on the screen.
        tmux.start(f"cd {ROOT} && env {env} {app}", SIZE)
        tmux.wait_for(["New session", "black_scholes", "loop-model"], START_S, "the start screen")
        # The first frame is drawn before the app reads keys, and on a loaded machine keys sent too
        # early are lost: type the filter again until the app has taken it.
        for attempt in range(FILTER_ATTEMPTS):
            time.sleep(1.0)
            tmux.keys("BTab")  # from the task list back to its filter
            tmux.keys("-l", "vector_a")
            tmux.keys("Enter")
            try:
                tmux.wait_for(["Element-wise sum"], 10, "vector_add's summary")
                break
            except AssertionError:
                if attempt == FILTER_ATTEMPTS - 1:
                    raise
                tmux.keys("C-u")  # clear whatever part of the filter did arrive
        tmux.keys("F5")
        screen = tmux.wait_for(
            [
                "r1-1: round 1 (compiled)",  # the prompt pane: the prompt, then the reply scrolled into view
                "```json",
                'extern "C" __global__ void vadd4',  # the kernel pane
                "compiled for sm_90",  # the compiler pane
                "compile-only (sm_90): nothing is timed",  # the latency pane
                "finished: 1 rounds done",  # the status line
                "r1-1 compiled",  # the candidates tree (its mark can trail the status line by a frame)
            ],
            SESSION_S,
            "the session's content in every pane",
        )
        assert "Traceback" not in screen
        tmux.keys("C-q")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                tmux.screen()
            except RuntimeError:
                break  # the app quit and tmux closed its window
            time.sleep(STEP_S)
        else:
            pytest.fail("cuda-llm did not quit on Ctrl+Q")
    finally:
        tmux.kill()
