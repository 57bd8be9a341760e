"""Usage errors, whole process: how long `cuda-llm` takes to refuse a mistake it can see on the command
line or in the environment (`-N 0`, an unknown `--model`, `--gpus abc`, `--target-roofline 2`, a bad
OLLAMA_HOST...), against an unknown option that argparse alone refuses. Each is refused in the parser's
pass, before a task, a model library or CUDA is loaded. Target (issue 47): under 0.5 s each on an idle
2-core machine. Medians of several runs; prints the machine and its load average before and after: on a
shared machine, measure when it is low, and say what it was.

    python -m bench.usage_errors [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ["run", "vector_add", "--model", "ollama:m", "--headless"]

# (what, arguments, environment): each must exit 2 with one line.
CASES: list[tuple[str, list[str], dict[str, str]]] = [
    ("unknown option (argparse alone)", [*RUN, "--bogus"], {}),
    ("-N 0", [*RUN, "-N", "0"], {}),
    ("unknown --model", ["run", "vector_add", "--model", "foo:bar", "--headless"], {}),
    ("--target-roofline 2", [*RUN, "--target-roofline", "2"], {}),
    ("--gpus abc", [*RUN, "--gpus", "abc"], {}),
    ("task beside --resume", ["run", "vector_add", "--resume", "3", "--headless"], {}),
    ("OLLAMA_HOST=localhost:abc", RUN, {"OLLAMA_HOST": "localhost:abc"}),
    ("TUI --config missing", ["--config", "/no/such/tui.toml"], {}),
]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cuda_llm", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **env},
        timeout=120,
    )
    return time.perf_counter() - start, done.returncode, done.stderr.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"machine: {platform.node()}, {os.cpu_count()} CPU(s), {platform.processor() or platform.machine()}")
    print(f"python {platform.python_version()}; load average before: {os.getloadavg()}")
    print(f"{'case':34} {'median':>8} {'min':>8}  exit  first line")
    for what, argv, env in CASES:
        times, code, line = [], 0, ""
        for _ in range(args.runs):
            seconds, code, err = timed(argv, env)
            times.append(seconds)
            line = err.splitlines()[0] if err else ""
        print(f"{what:34} {statistics.median(times):7.3f}s {min(times):7.3f}s  {code:4}  {line[:90]}")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
