"""What judging one correct candidate costs, stage by stage, for every task's baseline (a correct
candidate): compile (warm compiler pool), module load, validation, profiling (against the baseline,
as in a round), and the total. Median of 5 after one warm-up (the warm-up computes the references,
which a session does once). The same five profiles give the timing quality: the spread of their
medians, and the difference from an independent timer (triton.testing.do_bench on CuPy launches of
the same cubin) when CuPy and Triton are installed. Prints tables and the device.

    python -m bench.judge_cost [--tasks ...] [--repeats 5] [--json out.json]
Targets (issue 6): total under 1.5 s for every task; compile under 300 ms; repeated profiles within
1% (kernels over 100 us) or 3% (shorter); within 3% of the independent timer.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.fsr.judging import open_environment
from cuda_llm.engine.judge.judgement import Candidate, Compiled
from cuda_llm.engine.task import TaskLibrary


async def measure(names: list[str], repeats: int) -> tuple[list[dict], str]:
    settings = Settings()
    env = await open_environment(settings, gpus="0")
    device = f"{env.device.name} ({env.arch})" if env.device else f"compile-only ({env.arch})"
    rows = []
    have_independent = env.gpu is not None and bool(
        importlib.util.find_spec("cupy") and importlib.util.find_spec("triton")
    )
    try:
        await env.compiler.start()
        for name in names:
            task = TaskLibrary().get(name)
            judge = env.judge(task, settings)
            cand = Candidate("candidate", task.baseline_source, task.baseline_plan)
            stages: dict[str, list[float]] = {"compile": [], "load": [], "validate": [], "profile": [], "total": []}
            medians: list[float] = []
            for i in range(repeats + 1):
                t0 = time.perf_counter()
                compiled = await judge.compile(cand)
                t1 = time.perf_counter()
                assert isinstance(compiled, Compiled), compiled
                verdict = await judge.validate(compiled)
                t2 = time.perf_counter()
                assert verdict.status in ("correct", "compiled"), verdict.message
                if env.gpu is not None:
                    rt = await judge.profile([(compiled, verdict)])
                    if i and rt.judgements[0].timing is not None:
                        medians.append(rt.judgements[0].timing.median_us)
                    phases = {
                        "validate": verdict.validation.phases_s if verdict.validation else {},
                        "profile": rt.profile_phases_s[0] if rt.profile_phases_s else {},
                    }
                t3 = time.perf_counter()
                if i == 0:
                    continue  # the warm-up: references computed, baseline compiled, caches filled
                stages["compile"].append(t1 - t0)
                stages["load"].append(verdict.validation.load_s if verdict.validation else 0.0)
                stages["validate"].append(t2 - t1)
                stages["profile"].append(t3 - t2)
                stages["total"].append(t3 - t0)
            row = {"task": name, **{k: statistics.median(v) for k, v in stages.items()}}
            if env.gpu is not None:
                row["phases_s"] = phases  # the last repeat's, from the worker
            if medians:
                row["median_us"] = statistics.median(medians)
                row["spread"] = (max(medians) - min(medians)) / min(medians)
                if have_independent:
                    from bench.independent import do_bench_us

                    row["do_bench_us"] = do_bench_us(task, compiled)
                    row["vs_do_bench"] = (row["median_us"] - row["do_bench_us"]) / row["do_bench_us"]
            rows.append(row)
            print(f"{name:24s} " + "  ".join(f"{k} {row[k] * 1000:7.1f} ms" for k in stages), flush=True)
            for stage, ph in row.get("phases_s", {}).items():
                print(f"{'':24s}   {stage}: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in ph.items()), flush=True)
    finally:
        await env.close()
    return rows, device


def quality_markdown(rows: list[dict], device: str, repeats: int) -> str:
    lines = [
        f"Timing quality on {device}: the spread of {repeats} repeated profiles of each baseline "
        "((max - min) / min of their medians; target 1% above 100 us, 3% below) and the difference from "
        "triton.testing.do_bench on CuPy launches of the same cubin (target 3%).",
        "",
        "| task | median (us) | spread | do_bench (us) | vs do_bench |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        if "median_us" not in r:
            continue
        db = f"{r['do_bench_us']:.1f}" if "do_bench_us" in r else "n/a"
        vs = f"{r['vs_do_bench']:+.1%}" if "vs_do_bench" in r else "n/a"
        lines.append(f"| {r['task']} | {r['median_us']:.1f} | {r['spread']:.2%} | {db} | {vs} |")
    return "\n".join(lines) + "\n"


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
    text = markdown(rows, device, args.repeats) + "\n" + quality_markdown(rows, device, args.repeats)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "rows": rows}, indent=2))
    print(f"device: {device}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
