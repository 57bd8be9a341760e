"""What the Ray path itself costs a round, with no GPU work to hide it: the fake GPU of tests/fakes
(it answers at once) judges a round of 8 (validations, then one profile) through the local path and
through local Ray nodes of one fake GPU each, and single actor calls are timed beside it: an empty
one (`placed`) and a validation. The difference is the cluster layer's own cost per round and per
call on this machine's CPUs. bench/round_gpus.py --cluster measures the same round on real GPUs,
where the Ray path costs more than this (issue 27): what is left over happens with GPUs only.

    python -m bench.cluster_overhead [--gpus 1,2] [--repeats 20] [--json F]

Needs the cluster extra (Ray); no GPU. Measure on an idle machine: beside a busy one the figures
come out ten times higher.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "cluster")]

from fakes.fake_gpu import FakeGpu, FakeGpuFactory, fake_environment  # noqa: E402

from cuda_llm.engine.core.settings import Settings  # noqa: E402
from cuda_llm.engine.task import TaskLibrary  # noqa: E402

ROUND = 8  # candidates a round, as bench/round_gpus.py
TASK = "vector_add"


async def median_s(call: Callable[[], Awaitable[Any]], repeats: int) -> float:
    """The median wall time of `call`, after one call that is not counted (first-use costs)."""
    await call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def round_figures(env: Any, repeats: int) -> dict[str, float]:
    """Medians, in ms, of a round's validations (all at once) and of its profile."""
    judge = env.judge(TaskLibrary().get(TASK), Settings())
    baseline = await judge.baseline()
    judged: list[Any] = []

    async def validate_all() -> None:
        judged[:] = await asyncio.gather(*(judge.validate(baseline) for _ in range(ROUND)))

    validate_s = await median_s(validate_all, repeats)
    profile_s = await median_s(lambda: judge.profile([(baseline, j) for j in judged]), repeats)
    return {"validate_ms": validate_s * 1e3, "profile_ms": profile_s * 1e3}


async def call_figures(env: Any, repeats: int) -> dict[str, float]:
    """Medians, in ms, of one actor call with nothing to do, and of one validation sent to an actor."""
    from cuda_llm.engine.cluster.connection import ray_result

    task = TaskLibrary().get(TASK)
    program = (await env.judge(task, Settings()).baseline()).program()
    shipped = await env.gpu.shipper.ship(task)
    actor = env.gpu.members[0].handle
    empty_s = await median_s(lambda: ray_result(actor.placed.remote()), repeats)
    validate_s = await median_s(lambda: ray_result(actor.validate.remote(shipped, program)), repeats)
    return {"empty_call_ms": empty_s * 1e3, "validate_call_ms": validate_s * 1e3}


async def measure(gpus: list[int], repeats: int) -> dict[str, Any]:
    from ray_nodes import QUIET, require_ray, start_cluster

    from cuda_llm.engine.cluster.cluster_environment import open_cluster_environment

    require_ray()
    env = fake_environment(FakeGpu())
    try:
        out: dict[str, Any] = {"local": await round_figures(env, repeats)}
    finally:
        await env.close()
    for count in gpus:
        cluster = start_cluster(count + 1, head_gpus=0)  # a head, and a node of one fake GPU each
        try:
            env = await open_cluster_environment(
                Settings(), cluster.address, worker_factory=FakeGpuFactory(), cluster=QUIET
            )
            try:
                out[f"ray {count}"] = await round_figures(env, repeats) | await call_figures(env, repeats)
            finally:
                await env.close()
        finally:
            cluster.shutdown()
    return out


def report(figures: dict[str, Any], repeats: int) -> list[str]:
    import ray

    lines = [
        f"host: {platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs), Ray {ray.__version__}, "
        f"fake GPUs, {TASK}, round of {ROUND}, median of {repeats}"
    ]
    for path, f in figures.items():
        line = f"{path:>6}: validations {f['validate_ms']:6.1f} ms, profile {f['profile_ms']:5.1f} ms"
        if "empty_call_ms" in f:
            line += f"; one call: empty {f['empty_call_ms']:.2f} ms, a validation {f['validate_call_ms']:.2f} ms"
        lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cluster_overhead", description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", default="1,2", help="fake GPU nodes of the Ray runs, comma-separated (default 1,2)")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--json", help="also write the figures to this file")
    args = p.parse_args(argv)
    figures = asyncio.run(measure([int(n) for n in args.gpus.split(",")], args.repeats))
    print("\n".join(report(figures, args.repeats)))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
