"""What the counters step costs per candidate (engine/counters): for each task's baseline, the wall
time of the whole step (ncu starting the probe, the probe loading the inputs at the timing size, each
launch replayed once per counter pass), the probe alone without ncu (what the ncu passes add is the
difference), and the judge's profiling of the same candidate for scale. Median of --repeats after one
warm-up. Prints a table, the device and ncu's version; never asserts a time.

    python -m bench.counters_cost [--tasks vector_add matrix_transpose ...] [--repeats 3] [--json out.json]
                                  [--keep-logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cuda_llm.engine.core.settings import CountersSettings, Settings
from cuda_llm.engine.counters.probe import ProbeSpec, write_spec
from cuda_llm.engine.counters.runner import find_ncu
from cuda_llm.engine.fsr.judging import open_environment
from cuda_llm.engine.judge.judgement import Candidate, Compiled
from cuda_llm.engine.task import TaskLibrary

DEFAULT_TASKS = ("vector_add", "matrix_transpose", "reduction_sum", "softmax", "matmul", "conv2d")


def _probe_alone(spec: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cuda_llm.engine.counters.probe", str(spec)], check=True)
    return time.perf_counter() - t0


def _ncu_version(settings: Settings) -> str:
    ncu = find_ncu(settings.counters)
    if ncu is None:
        return "no ncu"
    out = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return out[-1] if out else ncu


async def measure(names: list[str], repeats: int, keep_logs: str | None = None) -> tuple[list[dict], str, str]:
    settings = Settings(counters=CountersSettings(keep_logs=keep_logs))
    env = await open_environment(settings, gpus="0")
    if env.gpu is None or env.device is None:
        raise SystemExit(f"counters need a GPU: {env.notice}")
    device = f"{env.device.name} ({env.arch})"
    rows = []
    try:
        for name in names:
            task = TaskLibrary().get(name)
            judge = env.judge(task, settings)
            compiled = await judge.compile(Candidate("baseline", task.baseline_source, task.baseline_plan))
            assert isinstance(compiled, Compiled), compiled
            verdict = await judge.validate(compiled)
            step, alone, profile = [], [], []
            report = None
            with tempfile.TemporaryDirectory() as tmp:
                spec = Path(tmp) / "spec.pkl"
                write_spec(ProbeSpec(str(task.folder), compiled.program(), env.device, settings.validation), spec)
                for i in range(repeats + 1):
                    t0 = time.perf_counter()
                    report = await judge.read_counters(compiled)
                    t1 = time.perf_counter()
                    if report.unavailable is not None:
                        raise SystemExit(f"{name}: {report.line()}")
                    probe_s = _probe_alone(spec)
                    t2 = time.perf_counter()
                    await judge.profile([(compiled, verdict)])
                    t3 = time.perf_counter()
                    if i:  # the first run warms the page cache, ncu's own files and the reference inputs
                        step.append(t1 - t0)
                        alone.append(probe_s)
                        profile.append(t3 - t2)
            assert report is not None
            rows.append(
                {
                    "task": name,
                    "launches": len(report.kernels),
                    "kernel_us": round(report.duration_us, 1),
                    "counters_s": round(statistics.median(step), 2),
                    "probe_alone_s": round(statistics.median(alone), 2),
                    "ncu_adds_s": round(statistics.median(step) - statistics.median(alone), 2),
                    "profile_s": round(statistics.median(profile), 2),
                    "what_limits_it": report.summary,
                }
            )
            print(f"{name}: {rows[-1]['counters_s']} s; {report.line()}", file=sys.stderr)
    finally:
        await env.close()
    return rows, device, _ncu_version(settings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(DEFAULT_TASKS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--keep-logs", metavar="DIR", help="keep ncu's raw output of every run here")
    args = parser.parse_args(argv)
    rows, device, ncu = asyncio.run(measure(args.tasks, args.repeats, args.keep_logs))
    print(f"counters step per candidate on {device}, {ncu}; median of {args.repeats} after a warm-up\n")
    print("| task | launches | kernel (us) | counters step (s) | probe alone (s) | ncu adds (s) | profiling (s) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['task']} | {r['launches']} | {r['kernel_us']} | {r['counters_s']} | {r['probe_alone_s']} | "
            f"{r['ncu_adds_s']} | {r['profile_s']} |"
        )
    print()
    for r in rows:
        print(f"- {r['task']}: {r['what_limits_it']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "ncu": ncu, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
