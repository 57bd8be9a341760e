"""Does a program's latency depend on where in device memory its buffers lie?
Each task's baseline (or a candidate reply, with --reply) runs through CuPy on buffers allocated
afresh at several placements (kept alive, with unequal padding between them, so each set lands on
other physical pages); triton.testing.do_bench times every placement in turn, several rounds over.
Prints, per task, the median of each placement, the spread across placements (median over the
rounds) and the spread within a placement (between rounds), and the device. When the first is much
larger than the second, where the buffers lie decides the figure, not noise. Needs CuPy and Triton.

    python -m bench.placement [--tasks layernorm softmax ...] [--placements 8] [--rounds 3]
    python -m bench.placement --tasks layernorm --reply reply.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.fsr.judging import open_environment
from cuda_llm.engine.judge.judgement import Candidate, Compiled
from cuda_llm.engine.task import TaskLibrary

# The padding before each placement is a different number of 2 MiB pages, so successive
# sets of buffers do not keep one fixed distance (which could keep one physical mapping pattern).
PAD_PAGES = (1, 3, 7, 5, 11, 2, 13, 9, 4, 6, 15, 8)


async def _compile(task, reply: Path | None, arch: str) -> Compiled:
    settings = Settings()
    env = await open_environment(settings, arch=arch, compile_only=True)
    try:
        judge = env.judge(task, settings)
        if reply is None:
            return await judge.baseline()
        cand = judge.parse(reply.name, reply.read_text())
        if not isinstance(cand, Candidate):
            raise SystemExit(f"{reply}: {cand.message}")
        compiled = await judge.compile(cand)
        if not isinstance(compiled, Compiled):
            raise SystemExit(f"{task.name}: does not compile: {compiled.message}")
        return compiled
    finally:
        await env.close()


def measure(task, compiled: Compiled, placements: int, rounds: int) -> dict:
    import cupy as cp
    import triton.testing

    from bench.independent import cupy_plan_runner, profile_inputs

    inputs = profile_inputs(task)
    runs, kept = [], []
    for k in range(placements):
        kept.append(cp.empty(PAD_PAGES[k % len(PAD_PAGES)] * 2**21, dtype=cp.uint8))
        runs.append(cupy_plan_runner(task, compiled, inputs))
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(rounds):
        for k, run in enumerate(runs):
            run()
            cp.cuda.Device().synchronize()
            times[k].append(float(triton.testing.do_bench(run, warmup=25, rep=200, return_mode="median")) * 1000.0)
    medians = [statistics.median(t) for t in times]
    within = statistics.median((max(t) - min(t)) / min(t) for t in times)
    del runs, kept
    cp.get_default_memory_pool().free_all_blocks()
    return {
        "task": task.name,
        "placement_medians_us": medians,
        "across": (max(medians) - min(medians)) / min(medians),
        "within": within,
        "rounds_us": times,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="*", default=["layernorm"])
    parser.add_argument("--reply", type=Path, help="a candidate reply (Markdown) to time instead of the baseline")
    parser.add_argument("--placements", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.reply and len(args.tasks) != 1:
        raise SystemExit("--reply needs exactly one task in --tasks")

    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    device = f"{props['name'].decode()} (sm_{props['major']}{props['minor']})"
    print(f"device: {device}; {args.placements} placements x {args.rounds} rounds of do_bench", flush=True)
    library = TaskLibrary()
    results = []
    for name in args.tasks:
        task = library.get(name)
        compiled = asyncio.run(_compile(task, args.reply, args.arch))
        r = measure(task, compiled, args.placements, args.rounds)
        r["program"] = str(args.reply) if args.reply else "baseline"
        results.append(r)
        cells = " ".join(f"{m:.1f}" for m in r["placement_medians_us"])
        print(
            f"{name:24s} {r['program']}: across placements {r['across']:.2%}, within a placement "
            f"{r['within']:.2%}; medians (us): {cells}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps({"device": device, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
