"""Driving `cuda-llm` in a real terminal: a tmux server of our own (its own socket, so a developer's
sessions are never touched), keys in with send-keys, the screen back with capture-pane.

Used by tests/tui/test_tmux.py and by the benchmarks that drive the app as a person would
(bench/tui_soak.py, bench/tmux_session.py). The app runs as `python tests/tui/tmux_app.py ARGS`:
the real launcher, with a telemetry source that changes every second when there is no NVML device.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from textual.geometry import Size

from cuda_llm.app.panes.layout import layout_for

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "tests" / "tui" / "tmux_app.py"
STEP_S = 0.05  # how often a wait looks at the screen again
TMUX_TIMEOUT_S = 20.0


class TmuxError(RuntimeError):
    pass


class Tmux:
    def __init__(self, name: str, tmux: str | None = None) -> None:
        self.tmux = tmux or shutil.which("tmux") or "tmux"
        self.socket = f"cuda-llm-{os.getpid()}-{name}"
        self.target = name

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=TMUX_TIMEOUT_S
        )
        if done.returncode != 0:
            raise TmuxError(f"tmux {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def start(self, command: str, size: tuple[int, int]) -> None:
        """Run `command` in a new detached session of this size. The pane stays after the program
        exits (remain-on-exit), so a crash's last screen can still be read."""
        width, height = str(size[0]), str(size[1])
        # A detached session's program can start before its terminal has the size -x/-y ask for
        # (it sees 80x24), so the shell sets the size first; the shell waits a moment so that
        # remain-on-exit is set before anything can exit.
        command = f"sleep 0.3; stty cols {width} rows {height} && {command}"
        self.run("new-session", "-d", "-s", self.target, "-x", width, "-y", height, command)
        self.run("set-option", "-t", self.target, "remain-on-exit", "on")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.target, *keys)

    def text(self, text: str) -> None:
        self.run("send-keys", "-t", self.target, "-l", text)

    def screen(self, escapes: bool = False) -> str:
        """The screen as text (with escapes: colours and styles too, so a highlight shows)."""
        return self.run("capture-pane", "-p", *(["-e"] if escapes else []), "-t", self.target)

    def pipe(self, path: Path) -> None:
        """Append everything the program writes to its terminal, raw (escape sequences and all, as
        tmux receives them), to `path`: what capture-pane cannot show, such as an OSC 52 copy."""
        self.run("pipe-pane", "-o", "-t", self.target, f"cat >> {shlex.quote(str(path))}")

    def resize(self, width: int, height: int) -> None:
        self.run("resize-window", "-t", self.target, "-x", str(width), "-y", str(height))

    def zoom(self) -> None:
        """Split the window and zoom the first pane in and out, as a person does in tmux."""
        self.run("split-window", "-d", "-t", self.target, "sleep 3600")
        self.run("resize-pane", "-Z", "-t", f"{self.target}.0")
        self.run("resize-pane", "-Z", "-t", f"{self.target}.0")
        self.run("kill-pane", "-t", f"{self.target}.1")

    def dead(self) -> bool:
        """The program in the pane has exited."""
        return self.run("display-message", "-p", "-t", self.target, "#{pane_dead}").strip() == "1"

    def pid(self) -> int:
        return int(self.run("display-message", "-p", "-t", self.target, "#{pane_pid}").strip())

    def wait_for(self, texts: list[str], timeout: float, what: str, absent: list[str] | None = None) -> str:
        return self.wait_until(
            lambda s: all(t in s for t in texts) and not any(t in s for t in absent or []),
            timeout,
            f"{what}: {texts}" + (f" without {absent}" if absent else ""),
        )

    def wait_until(self, ok: Callable[[str], bool], timeout: float, what: str, escapes: bool = False) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            dead = self.dead()  # before the screen: what the screen shows then is final
            screen = self.screen(escapes)
            if ok(screen):
                return screen
            if dead:
                break
            time.sleep(STEP_S)
        raise AssertionError(f"waiting for {what}; the screen:\n{self.screen()}")

    def kill(self) -> None:
        subprocess.run([self.tmux, "-L", self.socket, "kill-server"], capture_output=True, timeout=TMUX_TIMEOUT_S)


def app_command(args: list[str], env: dict[str, str], python: str | None = None) -> str:
    """The shell command that runs the app with these arguments and environment, from the repo."""
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    argv = " ".join(shlex.quote(a) for a in [python or sys.executable, str(APP), *args])
    return f"cd {shlex.quote(str(ROOT))} && env PYTHONPATH={shlex.quote(str(ROOT))} {assignments} {argv}"


# What each layout shows, to tell that the app has laid itself out for a size (app/panes/layout.py):
# the wide one's pane borders and no tabs, the split one's tabs and the kernel's border beside the
# focused pane, the narrow one's tabs and no border.
WIDE_MARK = "╭─ 1 prompt"
BESIDE_MARK = "╭─ 2 kernel"
NARROW_MARK = "1 Prompt  2 Kernel"


def laid_out_for(screen: str, size: tuple[int, int]) -> bool:
    mode = layout_for(Size(*size))
    lines = screen.splitlines()
    # The app draws its last row (the footer) only once it has the new size.
    whole = len(lines) >= size[1] - 1 and any("palette" in line for line in lines[-2:])
    if mode == "wide":
        return whole and WIDE_MARK in screen and NARROW_MARK not in screen
    if mode == "split":
        return whole and NARROW_MARK in screen and BESIDE_MARK in screen
    return whole and NARROW_MARK in screen and WIDE_MARK not in screen and BESIDE_MARK not in screen
