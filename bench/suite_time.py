"""The CPU suite's wall time with N busy processes beside it: the goal of issue 46 is under 10 minutes
on the 2-core machine with two (`yes > /dev/null` twice). Starts N busy loops (each a process that
only spins), runs `python -m pytest` with the project's own options (or those given after `--`),
stops the loops, and prints the wall time, pytest's summary line, the load average before, during
and after, and the machine. Asserts nothing: on a shared machine, say what else ran beside it.

    python -m bench.suite_time [--busy 2] [--durations 30] [-- PYTEST ARGS...]
    python -m bench.suite_time --busy 0 -- -n 4 tests/fsr      # a part, another worker count
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# How often the load average is sampled while the suite runs: a minute's average moves slowly.
LOAD_SAMPLE_S = 15.0


def busy_loops(count: int) -> list[subprocess.Popen[bytes]]:
    """`yes > /dev/null`, COUNT times: a process that is always runnable and does no I/O."""
    return [
        subprocess.Popen(["yes"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]


def machine() -> str:
    memory = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
        memory = f", {kib / 1024**2:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{platform.node()}: {os.cpu_count()} CPU(s), {cpu}{memory}; python {platform.python_version()}"


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    return (done.stdout.strip() or "?") + (" (with uncommitted changes)" if dirty.strip() else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2, help="busy processes beside the suite (default 2)")
    parser.add_argument("--durations", type=int, default=30, help="pytest's --durations N (0: none)")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's own arguments")
    args = parser.parse_args()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.pytest_args]
    if args.durations:
        command.append(f"--durations={args.durations}")
    print(f"machine: {machine()}")
    print(f"commit: {commit()}")
    print(f"command: {' '.join(command[1:])}, beside {args.busy} busy process(es)")
    print(f"load average before: {os.getloadavg()}", flush=True)
    loads: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(LOAD_SAMPLE_S):
            loads.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample, daemon=True)
    loops = busy_loops(args.busy)
    started = time.perf_counter()
    sampler.start()
    try:
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    finally:
        wall = time.perf_counter() - started
        done.set()
        for loop in loops:
            loop.kill()
            loop.wait()
    out = result.stdout + result.stderr
    sys.stdout.write(out[-6000:] if len(out) > 6000 else out)
    summary = next((ln for ln in reversed(out.splitlines()) if re.search(r"\b(passed|failed|error)", ln)), "")
    print()
    print(f"pytest exit code: {result.returncode}")
    print(f"summary: {summary.strip('= ')}")
    print(f"wall time: {wall:.0f} s ({wall / 60:.1f} min) beside {args.busy} busy process(es)")
    if loads:
        print(f"load average (1 min) during: min {min(loads):.1f}, max {max(loads):.1f}, {len(loads)} samples")
    print(f"load average after: {os.getloadavg()}")
    print(f"machine: {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
