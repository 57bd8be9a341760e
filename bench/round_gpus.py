"""A round of 8 correct candidates judged (compiled, validated, timed against the baseline) on 1 GPU
and on 2 GPUs of the same host. Median of 3 rounds after a warm-up round. Prints the wall times, the
ratio and the device. Target (issue 6): 2 GPUs at least 1.7x faster than 1.

    python -m bench.round_gpus [--task vector_add] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import sys
import time
from dataclasses import dataclass

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.fsr.judging import open_environment
from cuda_llm.engine.judge.judgement import Candidate, Compiled
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.plan import parse_plan

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


@dataclass(frozen=True)
class RoundResult:
    total_s: float
    validate_s: float  # compiling and validating the 8
    profile_s: float  # timing them against the baseline
    validation_phases_s: dict[str, float]  # in the workers, summed over the 8 candidates
    profile_phases_s: tuple[dict[str, float], ...]  # each GPU's timing job


async def one_round(judge, cands: list[Candidate]) -> RoundResult:
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
    val_phases = summed(j.validation.phases_s for _c, j in judged if j.validation)
    return RoundResult(end - start, validated - start, end - validated, val_phases, timing.profile_phases_s)


def summed(phases) -> dict[str, float]:
    out: dict[str, float] = {}
    for p in phases:
        for k, v in p.items():
            out[k] = out.get(k, 0.0) + v
    return out


def fmt_phases(p: dict[str, float]) -> str:
    return ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in p.items())


async def measure(task_name: str, gpus: str, repeats: int) -> tuple[RoundResult, str]:
    """The median of `repeats` rounds (by each figure), with the phases of the last round."""
    settings = Settings()
    env = await open_environment(settings, gpus=gpus)
    if env.gpu is None:
        raise SystemExit(f"bench/round_gpus needs GPUs: {env.notice}")
    try:
        judge = env.judge(TaskLibrary().get(task_name), settings)
        cands = candidates()
        await one_round(judge, cands)  # warm-up: references, baseline, compiler processes
        rounds = [await one_round(judge, cands) for _ in range(repeats)]
        median = RoundResult(
            statistics.median(r.total_s for r in rounds),
            statistics.median(r.validate_s for r in rounds),
            statistics.median(r.profile_s for r in rounds),
            rounds[-1].validation_phases_s,
            rounds[-1].profile_phases_s,
        )
        return median, env.gpu.describe()
    finally:
        await env.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="vector_add")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args(argv)
    one, dev1 = asyncio.run(measure(args.task, "0", args.repeats))
    two, dev2 = asyncio.run(measure(args.task, "0,1", args.repeats))
    result = {
        "task": args.task,
        "candidates": 8,
        "one_gpu_s": one.total_s,
        "two_gpus_s": two.total_s,
        "speedup": one.total_s / two.total_s,
        "one_gpu": dataclasses.asdict(one),
        "two_gpus": dataclasses.asdict(two),
        "device_1": dev1,
        "device_2": dev2,
    }
    print(
        f"round of 8 {args.task} candidates: 1 GPU {one.total_s:.2f} s ({dev1}), 2 GPUs {two.total_s:.2f} s "
        f"({dev2}): {one.total_s / two.total_s:.2f}x"
    )
    print(
        f"  compile+validate: {one.validate_s:.2f} s vs {two.validate_s:.2f} s "
        f"({one.validate_s / two.validate_s:.2f}x); "
        f"timing: {one.profile_s:.2f} s vs {two.profile_s:.2f} s ({one.profile_s / two.profile_s:.2f}x)"
    )
    for gpus, r in (("1 GPU", one), ("2 GPUs", two)):
        print(f"  {gpus}, last round: validation (all 8, in the workers): {fmt_phases(r.validation_phases_s)}")
        for i, p in enumerate(r.profile_phases_s):
            print(f"  {gpus}, last round: timing job on GPU {i}: {fmt_phases(p)}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
