"""End to end in a real terminal: `cuda-llm` in a detached tmux session against the loopback model
server, compile-only. Keys go in with send-keys; the screen comes back with capture-pane (see
tests/tui/tmux_driver.py). Skipped cleanly where tmux is missing."""

from __future__ import annotations

import base64
import re
import shutil
import time

import pytest
from llm_servers import Reply
from scripted import BROKEN_KERNEL, chunked, reply

from cuda_llm.engine.store.sessions import SessionStore
from tui.helpers import reply_for
from tui.tmux_driver import STEP_S, Tmux, app_command, laid_out_for

START_S = 60.0  # the app's first start imports Textual and compiles the baseline
SESSION_S = 90.0
LAYOUT_S = 15.0  # the longest a resize may take to show (a loaded 2-core CI machine)
KEY_S = 10.0
# The sizes the resize test goes through, from 80x24, this many times.
SIZES = ((200, 60), (120, 40), (80, 24))
CYCLES = 20

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _env(tmp_path, url: str) -> dict[str, str]:
    return {"CUDA_LLM_HOME": str(tmp_path / "home"), "OLLAMA_HOST": url}


def footer(screen: str) -> str:
    return [line for line in screen.splitlines() if line.strip()][-1].lstrip()


def task_filter(screen: str) -> str | None:
    """What the task filter reads (its placeholder reads as empty), or None where it is not shown."""
    for line in screen.splitlines()[:8]:
        if line.rstrip().endswith("Model"):
            text = line.rstrip().removesuffix("Model").strip()
            return "" if text == "filter tasks" else text
    return None


def filter_tasks(tmux: Tmux, text: str, timeout: float) -> str:
    """Type `text` into the start screen's task filter and leave the focus on the list. A key is sent
    only once the screen shows the one before it taken, and what is sent follows what the screen
    shows: keys sent before the app reads them are lost, a key sent while a busy app is still on the
    one before lands in the wrong widget (a loaded CI machine typed "s" into the filter, and read an
    Esc and the "/" after it as one Alt key), and a key sent twice is undone rather than repeated."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = tmux.screen()
        typed, keys = task_filter(screen), footer(screen)
        in_field = keys.startswith("f1 Help")  # a field has the focus: letters type, so the footer offers F-keys
        try:
            if not in_field and typed == text and keys.startswith("s Start"):
                return screen
            if not in_field:
                tmux.keys("/")
                tmux.wait_until(lambda s: footer(s).startswith("f1 Help"), KEY_S, "the focus in the filter")
            elif typed != text:
                tmux.keys("C-u")
                tmux.text(text)
                tmux.wait_until(lambda s: task_filter(s) == text, KEY_S, f"the filter to read {text!r}")
            else:
                tmux.keys("Enter")
                tmux.wait_until(lambda s: footer(s).startswith("s Start"), KEY_S, "the focus back on the list")
        except AssertionError:
            continue  # not taken (yet): look at the screen again and send what it then needs
    raise AssertionError(f"the task filter never read {text!r} with the list focused; the screen:\n{tmux.screen()}")


def test_a_session_in_tmux(tmp_path, llm_server):
    llm_server.default = chunked(reply())
    args = ["--compile-only", "--arch", "sm_90", "--candidates", "1", "--rounds", "1"]
    args += ["--model", "ollama:loop-model", "--db", str(tmp_path / "sessions.db")]
    tmux = Tmux("tui")
    try:
        # Textual draws on stderr, so nothing is redirected; a crash would show on the screen.
        tmux.start(app_command(args, _env(tmp_path, llm_server.url)), (160, 48))
        tmux.wait_for(["New session", "black_scholes", "loop-model"], START_S, "the start screen")
        filter_tasks(tmux, "vector_a", START_S)
        tmux.wait_for(["Element-wise sum"], KEY_S, "the summary of vector_add, the one task the filter leaves")
        tmux.keys("s")
        screen = tmux.wait_for(
            [
                "r1-1: round 1 (compiled)",  # the prompt pane: the prompt, then the reply scrolled into view
                "```json",
                'extern "C" __global__ void vadd4',  # the kernel pane
                "compiled for sm_90",  # the compiler pane
                "nothing is",  # the latency pane
                "finished: 1 rounds done",  # the status line
                "r1-1 compiled",  # the candidates tree (its mark can trail the status line by a frame)
                "no winner could be chosen",  # compile-only: why no decision was asked
            ],
            SESSION_S,
            "the session's content in every pane",
        )
        assert "Traceback" not in screen
        tmux.keys("C-q")
        tmux.wait_until(lambda _s: tmux.dead(), 20, "cuda-llm to quit on Ctrl+Q")
    finally:
        tmux.kill()


def test_resizing_a_live_run_never_loses_a_pane(tmp_path, llm_server):
    """80x24 -> 200x60 -> 120x40 -> 80x24, twenty times, while replies stream and the telemetry bar
    changes every second: the app lays itself out for every size, and at the end it still answers
    keys and stops cleanly (the session recorded as stopped, never left running)."""
    good = reply_for("vadd4", "Four floats a thread. " * 6)
    bad = reply(BROKEN_KERNEL)

    def slowly(rec) -> Reply:
        # ~2 s a reply, two at a time, one in three a compile error: something always streams.
        text = bad if len(llm_server.chat_requests) % 3 == 0 else good
        return Reply.text(*[text[i : i + 12] for i in range(0, len(text), 12)], chunk_delay_s=0.02)

    llm_server.default = slowly
    db = tmp_path / "sessions.db"
    args = ["run", "vector_add", "--model", "ollama:loop-model", "--compile-only", "--arch", "sm_90"]
    args += ["-N", "2", "-D", "500", "-K", "0", "--db", str(db)]
    tmux = Tmux("resize")
    try:
        tmux.start(app_command(args, _env(tmp_path, llm_server.url)), (80, 24))
        tmux.wait_for(["streaming"], START_S, "the first reply streaming")
        bars = set()
        for cycle in range(CYCLES):
            if cycle == CYCLES // 2:  # a dialog open while the sizes change: the screen under it follows
                tmux.keys("?")
                tmux.wait_for(["Run screen keys"], KEY_S, "the help")
            for size in SIZES:
                tmux.resize(*size)
                if cycle == CYCLES // 2:
                    tmux.wait_for(["Run screen keys"], LAYOUT_S, f"the help at {size}")
                    continue
                screen = tmux.wait_until(lambda s, size=size: laid_out_for(s, size), LAYOUT_S, f"the layout for {size}")
                assert "Traceback" not in screen and "NoMatches" not in screen
                bars.add(screen.splitlines()[0][-40:])
            if cycle == CYCLES // 2:
                tmux.keys("Escape")
                tmux.wait_until(lambda s: laid_out_for(s, SIZES[-1]), LAYOUT_S, "the run screen after the help")
        # A zoomed pane: split the window (the app gets half of it), zoom in and out, close the split.
        tmux.zoom()
        tmux.wait_until(lambda s: laid_out_for(s, SIZES[-1]), LAYOUT_S, "the layout after a zoom")
        assert not tmux.dead(), tmux.screen()
        assert len(bars) > 3, f"the telemetry bar did not change: {bars}"
        assert len(llm_server.chat_requests) > 4, "the session did not go on while the sizes changed"
        # Responsive: help opens and closes, then a stop shows at once and ends the session.
        tmux.keys("?")
        tmux.wait_for(["Run screen keys"], KEY_S, "the help")
        tmux.keys("Escape")
        tmux.wait_for(["running round"], KEY_S, "the run screen again", absent=["Run screen keys"])
        tmux.keys("s")
        tmux.wait_for(["stopp"], KEY_S, "the stop, said at once")
        tmux.wait_for(["■ stopped"], 30, "the end of the session")
        tmux.keys("q")
        tmux.wait_until(lambda _s: tmux.dead(), 20, "cuda-llm to quit")
    finally:
        tmux.kill()
    store = SessionStore(db)
    try:
        (record,) = store.sessions()
        assert record.status == "stopped", (record.status, record.status_message)
    finally:
        store.close()


def test_copy_the_wrapped_reply_and_the_resume_line(tmp_path, llm_server):
    """At 120x40 the reply is wrapped to the pane (its long line is read whole without scrolling
    sideways); `y` copies the kernel with OSC 52, which reaches the terminal (and through tmux the
    person's clipboard); `q` leaves the session's id, state and resume command on the terminal."""
    long_line = " ".join(f"word{i}" for i in range(60)) + " END-OF-THE-LONG-LINE"
    llm_server.default = chunked(reply() + "\n" + long_line + "\n")
    db = tmp_path / "sessions.db"
    args = ["run", "vector_add", "--model", "ollama:loop-model", "--compile-only", "--arch", "sm_90"]
    args += ["-N", "1", "-D", "1", "--db", str(db)]
    raw = tmp_path / "pane.raw"
    tmux = Tmux("copy")
    try:
        tmux.start(app_command(args, _env(tmp_path, llm_server.url)), (120, 40))
        tmux.pipe(raw)
        screen = tmux.wait_for(["finished: 1 rounds done", "END-OF-THE-LONG-LINE"], SESSION_S, "the wrapped reply")
        lines = [line for line in screen.splitlines() if "word" in line]
        assert len(lines) >= 2 and "word0" in lines[0] and "END-OF-THE-LONG-LINE" in lines[-1], lines
        tmux.keys("y")
        tmux.wait_for(["copied r1-1"], KEY_S, "the copy, said")
        deadline = time.monotonic() + KEY_S
        copied = None
        while copied is None and time.monotonic() < deadline:
            found = re.search(rb"\x1b\]52;c;([A-Za-z0-9+/=]+)(?:\x07|\x1b\\\\)", raw.read_bytes())
            copied = base64.b64decode(found.group(1)).decode() if found else None
            time.sleep(STEP_S)
        assert copied is not None, "no OSC 52 sequence in the pane's raw output"
        assert 'extern "C" __global__ void vadd4' in copied
        tmux.keys("q")
        tmux.wait_until(lambda _s: tmux.dead(), 20, "cuda-llm to quit")
        # The terminal's last lines, the scrolled-off ones too, each joined back where it wrapped.
        screen = tmux.run("capture-pane", "-p", "-J", "-S", "-100", "-t", tmux.target)
        assert re.search(r"session 1 finished; resume it with: cuda-llm run --resume 1 --db \S+", screen), screen
    finally:
        tmux.kill()
