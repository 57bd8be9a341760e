"""Resident memory of the application (the `cuda-llm run` process; the GPU worker is a process of its
own and is reported apart) during a 20-round session against a loopback model server with scripted
replies. Samples /proc/PID/status every 0.2 s; prints the peak and the last value, and the machine.
Target (issue 6): under 400 MB after 20 rounds.

    python -m bench.memory [--rounds 20] [--candidates 4] [--compile-only]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the loopback model server and scripted replies live there

from llm_servers import LoopbackLLMServer  # noqa: E402
from scripted import chunked, reply  # noqa: E402

from bench.proc_status import status_kib  # noqa: E402

SAMPLE_S = 0.2


def rss_mb(pid: int) -> float | None:
    kib = status_kib(pid, "VmRSS")
    return kib / 1024 if kib is not None else None


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--candidates", type=int, default=4)
    p.add_argument("--compile-only", action="store_true")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, LoopbackLLMServer() as server:
        server.default = chunked(reply())
        cmd = [
            sys.executable,
            "-m",
            "cuda_llm.app.launcher",
            "run",
            "vector_add",
            "--model",
            "ollama:loop-model",
            "--headless",
            "--host",
            server.url,
            "--db",
            f"{tmp}/s.db",
            "-D",
            str(args.rounds),
            "-N",
            str(args.candidates),
            "-R",
            "0",
            "-K",
            "0",
            "--target-roofline",
            "0",
        ] + (["--compile-only"] if args.compile_only else [])
        env = {**os.environ, "CUDA_LLM_HOME": f"{tmp}/home", "PYTHONPATH": str(ROOT)}
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        app, worker = [], []
        while proc.poll() is None:
            a = rss_mb(proc.pid)
            if a:
                app.append(a)
            # The GPU worker is `python -m engine.gpu.worker`; the compiler pool's children are small.
            for child in children(proc.pid):
                try:
                    cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"cuda_llm.engine.gpu.worker_process" in cmdline and (w := rss_mb(child)):
                    worker.append(w)
            time.sleep(SAMPLE_S)
        _out, err = proc.communicate()
        took = time.monotonic() - start
    if proc.returncode != 0:
        print(err[-2000:], file=sys.stderr)
        return 1
    print(
        f"{args.rounds} rounds x {args.candidates} candidates in {took:.0f} s; "
        f"application RSS peak {max(app):.0f} MB, last {app[-1]:.0f} MB"
        + (
            f"; GPU worker RSS peak {max(worker):.0f} MB, last {worker[-1]:.0f} MB "
            f"(peak over the first half of the run {max(worker[: len(worker) // 2 or 1]):.0f} MB, "
            f"over the second half {max(worker[len(worker) // 2 :]):.0f} MB)"
            if worker
            else "; no GPU worker (compile-only)"
        )
    )
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
