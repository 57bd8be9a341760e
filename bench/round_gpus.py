"""A round of 8 correct candidates judged (compiled, validated, timed against the baseline) on 1 GPU
and on 2 GPUs of the same host. Median of 3 rounds after a warm-up round. Prints the wall times, the
ratio and the device. Target (issue 6): 2 GPUs at least 1.7x faster than 1.

    python -m bench.round_gpus [--task vector_add] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

from engine.contract.plan import parse_plan
from engine.judge.environment import open_environment
from engine.judge.judgement import Candidate, Compiled
from engine.settings import Settings
from engine.task import TaskLibrary

SCALAR = (
    'extern "C" __global__ void k(const float* a, const float* b, float* c, int n)'
    " { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }"
)
VECTOR = (
    'extern "C" __global__ void k(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,'
    " int n) { int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4; if (i + 3 < n) {"
    " float4 x = *reinterpret_cast<const float4*>(a + i), y = *reinterpret_cast<const float4*>(b + i);"
    " *reinterpret_cast<float4*>(c + i) = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w); }"
    " else { for (int j = i; j < n; ++j) c[j] = a[j] + b[j]; } }"
)


def candidates() -> list[Candidate]:
    out = []
    for block in (128, 256, 512, 1024):
        plan = {
            "launches": [{"kernel": "k", "grid": [f"cdiv(n, {block})"], "block": [block], "args": ["a", "b", "c", "n"]}]
        }
        out.append(Candidate(f"scalar{block}", SCALAR, parse_plan(plan)))
        plan4 = {
            "launches": [
                {"kernel": "k", "grid": [f"cdiv(cdiv(n, 4), {block})"], "block": [block], "args": ["a", "b", "c", "n"]}
            ]
        }
        out.append(Candidate(f"vector{block}", VECTOR, parse_plan(plan4)))
    return out


async def one_round(judge, cands: list[Candidate]) -> tuple[float, float, float]:
    """Wall seconds for the round, for its compile-and-validate phase and for its timing phase."""
    start = time.perf_counter()

    async def check(c: Candidate):
        compiled = await judge.compile(c)
        assert isinstance(compiled, Compiled), compiled
        return compiled, await judge.validate(compiled)

    judged = await asyncio.gather(*(check(c) for c in cands))
    assert all(j.status == "correct" for _c, j in judged), [j.message for _c, j in judged]
    validated = time.perf_counter()
    timing = await judge.profile(judged)
    assert all(j.timing is not None for j in timing.judgements)
    end = time.perf_counter()
    return end - start, validated - start, end - validated


async def measure(task_name: str, gpus: str, repeats: int) -> tuple[tuple[float, float, float], str]:
    settings = Settings()
    env = await open_environment(settings, gpus=gpus)
    if env.gpu is None:
        raise SystemExit(f"bench/round_gpus needs GPUs: {env.notice}")
    try:
        judge = env.judge(TaskLibrary().get(task_name), settings)
        cands = candidates()
        await one_round(judge, cands)  # warm-up: references, baseline, compiler processes
        rounds = [await one_round(judge, cands) for _ in range(repeats)]
        medians = tuple(statistics.median(r[i] for r in rounds) for i in range(3))
        return medians, env.gpu.describe()  # type: ignore[return-value]
    finally:
        await env.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="vector_add")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args(argv)
    (one, one_val, one_prof), dev1 = asyncio.run(measure(args.task, "0", args.repeats))
    (two, two_val, two_prof), dev2 = asyncio.run(measure(args.task, "0,1", args.repeats))
    result = {
        "task": args.task,
        "candidates": 8,
        "one_gpu_s": one,
        "two_gpus_s": two,
        "speedup": one / two,
        "phases_s": {"1": {"validate": one_val, "profile": one_prof}, "2": {"validate": two_val, "profile": two_prof}},
        "device_1": dev1,
        "device_2": dev2,
    }
    print(
        f"round of 8 {args.task} candidates: 1 GPU {one:.2f} s ({dev1}), 2 GPUs {two:.2f} s ({dev2}): {one / two:.2f}x"
    )
    print(
        f"  compile+validate: {one_val:.2f} s vs {two_val:.2f} s ({one_val / two_val:.2f}x); "
        f"timing: {one_prof:.2f} s vs {two_prof:.2f} s ({one_prof / two_prof:.2f}x)"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
