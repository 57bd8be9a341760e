"""Judging throughput on a Ray cluster of 1, 2 and 4 simulated GPU nodes: a round of 32 correct
candidates validated and then timed against the baseline, through the real cluster code (actors,
task shipping, the pool's queue, the Judge's split of the timing), with a simulated GPU in each
actor that takes the time a real one does. Target (issue 14): N nodes judge at least 0.9 x N as fast
as one.

The simulated GPU sleeps the per-candidate times measured on an H200 (docs/performance.md (a)):
validation, and timing per program (a profile there timed the candidate with its baseline, so half
of it each). The nodes are local Ray nodes (`ray.cluster_utils.Cluster`) on this machine; the
candidates are compiled once beforehand (compiling is the driver's, not the GPUs').

    python -m bench.cluster_scaling [--task median|vector_add|softmax_attention|gemm_fp16] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

# (Imported here, at the top: the simulated GPU below travels to the nodes by value, and names it
# uses must be ones it carries along, not imports the nodes would have to find.)
from fakes.fake_gpu import FakeGpu, FakeGpuFactory, OneJobAtATime  # noqa: E402

# (validation ms, profile ms) per candidate on an H200, docs/performance.md section (a). "median":
# the median task of the 20 by total time (reduction_sum's neighbours: 43 and 88 ms).
MEASURED_MS = {
    "vector_add": (33.0, 31.0),
    "median": (43.0, 88.0),
    "softmax_attention": (60.0, 263.0),
    "gemm_fp16": (103.0, 1050.0),
}
ROUND = 32


@dataclass(frozen=True)
class SimulatedGpuFactory:
    """The fake GPU of tests/fakes, taking a real GPU's time: `validate_s` per validation and
    `program_s` per program timed."""

    validate_s: float
    program_s: float

    def __call__(self, device_index, settings, log_dir=None):
        base = FakeGpuFactory()(device_index, settings, log_dir)
        validate_s, program_s = self.validate_s, self.program_s

        class SimulatedGpu(OneJobAtATime):  # one job at a time, as a GPU's worker process
            async def validate(self, task, program):
                async with self.lock:
                    await asyncio.sleep(validate_s)
                    return await FakeGpu.validate(self, task, program)

            async def profile(self, task, programs, library=False):
                async with self.lock:
                    await asyncio.sleep(program_s * len(programs))
                    return await FakeGpu.profile(self, task, programs, library)

        return SimulatedGpu(info=base.info)


async def one_round(judge, compiled) -> float:
    start = time.perf_counter()
    verdicts = await asyncio.gather(*(judge.validate(c) for c in compiled))
    assert all(v.status == "correct" for v in verdicts), [v.message for v in verdicts]
    timing = await judge.profile(list(zip(compiled, verdicts, strict=True)))
    assert len(timing.judgements) == len(compiled) and all(j.timing for j in timing.judgements)
    return time.perf_counter() - start


async def measure(address: str, factory: SimulatedGpuFactory, repeats: int) -> tuple[float, int, int]:
    """(median seconds for a round of 32, GPUs, nodes the judgements ran on)."""
    from cuda_llm.engine.cluster.cluster_environment import open_cluster_environment
    from cuda_llm.engine.cluster.cluster_settings import ClusterSettings
    from cuda_llm.engine.core.settings import Settings
    from cuda_llm.engine.judge.judgement import Compiled
    from cuda_llm.engine.task import TaskLibrary

    env = await open_cluster_environment(
        Settings(), address, worker_factory=factory, cluster=ClusterSettings(remote_compilers=0)
    )
    try:
        judge = env.judge(TaskLibrary().get("vector_add"), Settings())
        baseline = await judge.baseline()
        compiled = [
            Compiled(dataclasses.replace(baseline.candidate, label=f"c{i}", origin="model"), baseline.compile, b)
            for i, b in enumerate([baseline.bound] * ROUND)
        ]
        await one_round(judge, compiled[: env.gpu.size])  # warm-up: every actor has the task
        times = [await one_round(judge, compiled) for _ in range(repeats)]
        nodes = len({m.ran_on.node_id for m in env.gpu.members})
        return statistics.median(times), env.gpu.size, nodes
    finally:
        await env.close()


def run(nodes: int, factory: SimulatedGpuFactory, repeats: int) -> tuple[float, int, int]:
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "num_gpus": 1, "include_dashboard": False, "object_store_memory": 80 * 2**20},
    )
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=0, num_gpus=1, object_store_memory=80 * 2**20)
        cluster.wait_for_nodes()
        return asyncio.run(measure(cluster.address, factory, repeats))
    finally:
        cluster.shutdown()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=sorted(MEASURED_MS), default="median", help="whose measured times to simulate")
    p.add_argument("--nodes", default="1,2,4")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args(argv)
    import ray
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the simulated GPU travels by value
    import fakes.fake_gpu

    cloudpickle.register_pickle_by_value(fakes.fake_gpu)
    validate_ms, profile_ms = MEASURED_MS[args.task]
    factory = SimulatedGpuFactory(validate_ms / 1000, profile_ms / 2 / 1000)
    print(
        f"simulated GPU ({args.task}): {validate_ms:.0f} ms a validation, {profile_ms / 2:.0f} ms a program timed; "
        f"a round of {ROUND}; Ray {ray.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores ({platform.processor() or platform.machine()})",
        flush=True,
    )
    results = {}
    for n in (int(x) for x in args.nodes.split(",")):
        seconds, gpus, used = run(n, factory, args.repeats)
        results[n] = {"seconds": seconds, "candidates_per_s": ROUND / seconds, "gpus": gpus, "nodes": used}
        one = results.get(1)
        scale = f"; {one['seconds'] / seconds:.2f}x one node ({one['seconds'] / seconds / n:.2f} x N)" if one else ""
        what = f"{n} node(s), {gpus} GPU(s): {seconds:.2f} s a round, {ROUND / seconds:.1f} candidates/s"
        print(what + scale, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"task": args.task, "round": ROUND, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
