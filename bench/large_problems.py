"""The field's problems at their own sizes: what judging costs a session, phase by phase.

Two example modules of examples/pytorch/ are scaled to the sizes of KernelBench's level-1 files and
imported with `tasks import`: an elementwise GELU over 4096 x 393216 floats (6.4 GB of input) and a
row softmax of 4096 rows of 393216 columns. For each, as a session does on one GPU worker: PyTorch
eager (the baseline) validated and timed, then two correct candidates (the hand-written reply of
examples/pytorch/replies/, judged twice: the first candidate pays for making the cases, the later one
finds them kept), then a kernel wrong at the smallest case. Printed per step: the wall time, the
phases (Judgement.phases: compile, inputs, reference, validation, timing), the verdict; per problem,
the GPU worker's peak host RSS (VmHWM, reset before each problem) and the device's peak memory in use
(nvidia-smi, sampled every 0.2 s), with the device named. Asserts nothing.

    python -m bench.large_problems [--out DIR] [--scale field|examples] [--json FILE]

`--scale examples` keeps the example files' own sizes (seconds; compile-only works without a GPU).
Targets (issue 41, H100/H200): first candidate <= 20 s, a later one <= 5 s, a kernel wrong at a small
case refused in <= 5 s, the worker's peak host RSS under 4 GB.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.proc_status import status_kib

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "pytorch"
REPLIES = EXAMPLES / "replies"


@dataclass(frozen=True)
class Problem:
    name: str
    module: str  # examples/pytorch/<module>.py
    field_sizes: dict[str, int]  # the constants at the field's sizes
    wrong: str  # a reply wrong at a small case


PROBLEMS = (
    Problem("gelu_6gb", "elementwise_gelu", {"batch_size": 4096, "features": 393216}, "elementwise_gelu.wrong.md"),
    Problem("softmax_393216", "softmax_rows", {"rows": 4096, "row_length": 393216}, "softmax_rows.tail.md"),
)
POLL_S = 0.2


def scaled_module(problem: Problem, folder: Path, scale: str) -> Path:
    """The example module with its size constants set to the field's (or left as they are)."""
    text = (EXAMPLES / f"{problem.module}.py").read_text(encoding="utf-8")
    if scale == "field":
        for name, value in problem.field_sizes.items():
            text, n = re.subn(rf"^{name} = .*$", f"{name} = {value}", text, flags=re.M)
            assert n == 1, f"{problem.module}.py has no constant {name}"
    path = folder / f"{problem.name}.py"
    path.write_text(text, encoding="utf-8")
    return path


class DeviceMemoryPeak:
    """The most device memory nvidia-smi reports in use on one GPU while it runs (None: unreadable)."""

    def __init__(self, index: int | None) -> None:
        self.index = index
        self.peak_mib: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _read(self) -> int | None:
        if self.index is None:
            return None
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", str(self.index)],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout
            return int(out.strip().splitlines()[0])
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            return None

    def _poll(self) -> None:
        while not self._stop.is_set():
            used = self._read()
            if used is not None:
                self.peak_mib = max(self.peak_mib or 0, used)
            self._stop.wait(POLL_S)

    def __enter__(self) -> DeviceMemoryPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def worker_pid(env) -> int | None:
    workers = getattr(env.gpu, "workers", None) or []
    proc = getattr(workers[0], "_proc", None) if workers else None
    return proc.pid if proc is not None else None


def reset_peak_rss(pid: int | None) -> None:
    if pid is not None:
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/clear_refs").write_text("5")  # Linux: VmHWM starts again from VmRSS


def peak_rss_mib(pid: int | None) -> float | None:
    kib = status_kib(pid, "VmHWM") if pid is not None else None
    return kib / 1024 if kib is not None else None


async def judge_problem(env, settings, problem: Problem, folder: Path, scale: str) -> dict:
    from cuda_llm.engine.judge.judgement import phases_text
    from cuda_llm.engine.task.loader import load_task
    from cuda_llm.engine.torchtask.importer import import_module

    started = time.monotonic()
    imported = import_module(scaled_module(problem, folder, scale), folder / "tasks")
    import_s = time.monotonic() - started
    task = load_task(imported.folder)
    judge = env.judge(task, settings)
    steps: list[dict] = []

    def step(what: str, j, wall: float) -> None:
        phases = j.phases()
        v = j.validation
        steps.append(
            {
                "step": what,
                "wall_s": round(wall, 3),
                "status": j.status,
                "phases_s": {k: round(s, 3) for k, s in phases.items()},
                "cases": len(v.cases) if v else 0,
                "not_run": v.not_run if v else 0,
                "message": j.message,
            }
        )
        print(f"  {what:<22} {wall:7.2f} s  {j.status:<9} {phases_text(phases)}")
        print(f"  {'':<22} {j.message[:150]}")

    pid = worker_pid(env)
    reset_peak_rss(pid)
    with DeviceMemoryPeak(env.device.index if env.device else None) as memory:
        t0 = time.monotonic()
        base = await judge.baseline_judgement()
        step("eager (the baseline)", base, time.monotonic() - t0)
        reply = (REPLIES / f"{problem.module}.md").read_text(encoding="utf-8")
        for label, what in (("r1-1", "first candidate"), ("r1-2", "later candidate")):
            cand = judge.parse(label, reply, origin="model")
            t0 = time.monotonic()
            j = await judge.judge(cand)
            step(what, j, time.monotonic() - t0)
        wrong = judge.parse("r1-3", (REPLIES / problem.wrong).read_text(encoding="utf-8"), origin="model")
        t0 = time.monotonic()
        j = await judge.judge(wrong)
        step("wrong at a small case", j, time.monotonic() - t0)
    rss = peak_rss_mib(pid)
    buffers = task.buffer_bytes(task.timing)
    print(
        f"  import {import_s:.1f} s; timing size's buffers {buffers / 2**30:.2f} GiB; worker peak RSS "
        + (f"{rss / 1024:.2f} GiB" if rss is not None else "unknown")
        + "; device peak in use "
        + (f"{memory.peak_mib / 1024:.1f} GiB" if memory.peak_mib is not None else "unknown")
    )
    return {
        "problem": problem.name,
        "sizes": problem.field_sizes if scale == "field" else imported.sizes,
        "import_s": round(import_s, 2),
        "timing_buffers_bytes": buffers,
        "steps": steps,
        "worker_peak_rss_mib": rss,
        "device_peak_mib": memory.peak_mib,
    }


async def main_async(args: argparse.Namespace) -> int:
    from cuda_llm.engine.core.settings import Settings
    from cuda_llm.engine.fsr.judging import open_environment
    from cuda_llm.engine.gpu.protocol import device_label

    settings = Settings()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="large_problems."))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    device = ""
    for problem in PROBLEMS:
        if args.only and problem.name not in args.only:
            continue
        # A worker of its own for each problem, as each session has: the cases one problem keeps on
        # the device are gone before the next is imported (its import asks for the GPU's free memory).
        env = await open_environment(settings, compile_only=args.compile_only, gpus=None if args.compile_only else "0")
        try:
            if not device:
                device = device_label(env.device, env.arch) if env.device else f"compile-only ({env.arch})"
                print(f"device: {device}; scale: {args.scale}")
            print(f"{problem.name}:")
            folder = out / problem.name
            folder.mkdir(exist_ok=True)
            rows.append(await judge_problem(env, settings, problem, folder, args.scale))
        finally:
            await env.close()
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "scale": args.scale, "rows": rows}, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="folder for the scaled modules and imported tasks (default: a temporary one)")
    parser.add_argument("--scale", choices=("field", "examples"), default="field")
    parser.add_argument("--only", nargs="*", help="problems to run (default: all)")
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--compile-only", action="store_true", help="no GPU: compile and bind only")
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
