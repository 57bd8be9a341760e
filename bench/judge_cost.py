"""What judging one correct candidate costs, stage by stage, for every task's baseline (a correct
candidate): compile (warm compiler pool), module load, validation, profiling (against the baseline,
as in a round), and the total. Median of 5 after one warm-up (the warm-up computes the references,
which a session does once). Prints a table and the device.

    python -m bench.judge_cost [--tasks ...] [--repeats 5] [--json out.json]
Target (issue 6): total median under 1.5 s for every task; compile under 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

from engine.judge.environment import open_environment
from engine.judge.judgement import Candidate, Compiled
from engine.settings import Settings
from engine.task import TaskLibrary


async def measure(names: list[str], repeats: int) -> tuple[list[dict], str]:
    settings = Settings()
    env = await open_environment(settings, gpus="0")
    device = f"{env.device.name} ({env.arch})" if env.device else f"compile-only ({env.arch})"
    rows = []
    try:
        await env.compiler.start()
        for name in names:
            task = TaskLibrary().get(name)
            judge = env.judge(task, settings)
            cand = Candidate("candidate", task.baseline_source, task.baseline_plan)
            stages: dict[str, list[float]] = {"compile": [], "load": [], "validate": [], "profile": [], "total": []}
            for i in range(repeats + 1):
                t0 = time.perf_counter()
                compiled = await judge.compile(cand)
                t1 = time.perf_counter()
                assert isinstance(compiled, Compiled), compiled
                verdict = await judge.validate(compiled)
                t2 = time.perf_counter()
                assert verdict.status in ("correct", "compiled"), verdict.message
                if env.gpu is not None:
                    await judge.profile([(compiled, verdict)])
                t3 = time.perf_counter()
                if i == 0:
                    continue  # the warm-up: references computed, baseline compiled, caches filled
                stages["compile"].append(t1 - t0)
                stages["load"].append(verdict.validation.load_s if verdict.validation else 0.0)
                stages["validate"].append(t2 - t1)
                stages["profile"].append(t3 - t2)
                stages["total"].append(t3 - t0)
            row = {"task": name, **{k: statistics.median(v) for k, v in stages.items()}}
            rows.append(row)
            print(f"{name:24s} " + "  ".join(f"{k} {row[k] * 1000:7.1f} ms" for k in stages), flush=True)
    finally:
        await env.close()
    return rows, device


def markdown(rows: list[dict], device: str, repeats: int) -> str:
    lines = [
        f"Per-stage cost of judging one correct candidate (each task's baseline) on {device}, median of "
        f"{repeats} after a warm-up; `python -m bench.judge_cost`.",
        "",
        "| task | compile (ms) | load (ms) | validate (ms) | profile (ms) | total (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['compile'] * 1e3:.0f} | {r['load'] * 1e3:.1f} | {r['validate'] * 1e3:.0f} | "
            f"{r['profile'] * 1e3:.0f} | {r['total'] * 1e3:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="*")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json")
    args = p.parse_args(argv)
    names = args.tasks or TaskLibrary().names()
    rows, device = asyncio.run(measure(names, args.repeats))
    text = markdown(rows, device, args.repeats)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "rows": rows}, indent=2))
    print(f"device: {device}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
