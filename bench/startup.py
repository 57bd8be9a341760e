"""Start-up: `cuda-llm --help` as a whole process, and the TUI from process start to its first frame
(the start screen, mounted and drawn, headless). Medians of several runs; prints the machine.
Targets: --help under 150 ms on the 2-core machine (issue 25; it was 300 ms in issue 6); the TUI's
first frame under 1.5 s. The load average is printed before and after: on a shared machine, measure
when it is low, and say what it was. `--busy 2` starts two `yes > /dev/null` processes for the run (as
bench/relayout.py does): the first-frame target is for the 2-core machine with two busy processes.

    python -m bench.startup [--runs 10] [--help-only] [--busy 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs in a fresh interpreter: builds the app as `cuda-llm` does and prints a marker the moment the
# first frame of the start screen is handed to the terminal (Textual's display step: what a person
# would see first), then quits.
FIRST_FRAME = """
import sys
import time
from cuda_llm.app.app import CudaLlmApp
from cuda_llm.app.options import Defaults

app = CudaLlmApp(Defaults(compile_only=True), poll_telemetry=False)
shown = app._display

def display(screen, renderable):
    shown(screen, renderable)
    if renderable is not None and type(screen).__name__ == "StartScreen" and app.is_running:
        # the CPU it took (all threads), and the modules imported by then
        print("FIRST_FRAME", time.process_time(), len(sys.modules), flush=True)
        app.exit()

app._display = display
app.run(headless=True)
"""


def children_cpu_s() -> float:
    """CPU seconds (user + system) of the waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(
    cmd: list[str],
    env: dict[str, str],
    marker: str | None = None,
    cpu: list[float] | None = None,
    modules: list[int] | None = None,
) -> float:
    """Wall seconds of one run (to the marker, or to its exit); with `cpu`, the CPU seconds it took are
    appended to it (a figure a busy machine disturbs far less than the wall time): to the marker where
    the marker's line gives them, else the whole process's. With `modules`, the count of modules
    imported by the marker, where its line gives it (a figure no load disturbs)."""
    start = time.perf_counter()
    cpu_start = children_cpu_s()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if marker is None:
        proc.communicate(timeout=60)
        took = time.perf_counter() - start
        if cpu is not None:
            cpu.append(children_cpu_s() - cpu_start)
        return took
    assert proc.stdout is not None
    for line in proc.stdout:
        if marker in line:
            took = time.perf_counter() - start
            proc.wait(timeout=30)
            if cpu is not None:  # the CPU to the marker, when the line gives it; else to the exit
                said = line.split(marker, 1)[1].split()
                cpu.append(float(said[0]) if said else children_cpu_s() - cpu_start)
            if modules is not None and len(said) > 1:
                modules.append(int(said[1]))
            return took
    raise RuntimeError(f"{marker} never printed (exit code {proc.wait()})")


def measure(runs: int, help_only: bool) -> tuple[list[float], list[float], list[float], list[float], list[int]]:
    """(--help wall seconds, --help CPU seconds, first-frame wall seconds, first-frame CPU seconds,
    modules imported by the first frame), `runs` of each after a warm-up run that fills the OS file cache."""
    frames: list[float] = []
    help_cpu: list[float] = []
    frame_cpu: list[float] = []
    frame_modules: list[int] = []
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "CUDA_LLM_HOME": home, "PYTHONPATH": str(ROOT)}
        help_cmd = [sys.executable, "-m", "cuda_llm.app.launcher", "--help"]
        timed(help_cmd, env)
        helps = [timed(help_cmd, env, cpu=help_cpu) for _ in range(runs)]
        if not help_only:
            timed([sys.executable, "-c", FIRST_FRAME], env, "FIRST_FRAME")
            frame_cmd = [sys.executable, "-c", FIRST_FRAME]
            frames = [timed(frame_cmd, env, "FIRST_FRAME", cpu=frame_cpu, modules=frame_modules) for _ in range(runs)]
    return helps, help_cpu, frames, frame_cpu, frame_modules


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--help-only", action="store_true", help="time `cuda-llm --help` only (not the TUI)")
    p.add_argument("--busy", type=int, default=0, help="background `yes > /dev/null` processes during the runs")
    args = p.parse_args(argv)
    load_before = os.getloadavg()
    busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.busy)]
    try:
        helps, help_cpu, frames, frame_cpu, frame_modules = measure(args.runs, args.help_only)
    finally:
        for proc in busy:
            proc.terminate()
            proc.wait()
    print(
        f"cuda-llm --help: median {statistics.median(helps) * 1000:.0f} ms (min {min(helps) * 1000:.0f}, "
        f"max {max(helps) * 1000:.0f}) over {args.runs} runs; CPU (user + system) median "
        f"{statistics.median(help_cpu) * 1000:.0f} ms"
    )
    if frames:
        print(
            f"TUI to first frame: median {statistics.median(frames) * 1000:.0f} ms (min {min(frames) * 1000:.0f}, "
            f"max {max(frames) * 1000:.0f}) over {args.runs} runs; CPU (user + system, all threads) to the "
            f"first frame median {statistics.median(frame_cpu) * 1000:.0f} ms"
            + (f"; {max(frame_modules)} modules imported by it" if frame_modules else "")
        )
    print(f"background: {args.busy} busy `yes > /dev/null` processes")
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    load_after = os.getloadavg()
    print(
        "load average (1, 5, 15 min): before "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.2f}" for x in load_after)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
