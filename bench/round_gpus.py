"""A round of 8 correct candidates judged (compiled, validated, timed against the baseline) on 1, 2
and 4 GPUs of the same host; with --cluster also through the Ray path on the same GPUs (a local Ray
head with one actor per GPU, compiles on this process as without Ray). Median of --repeats rounds
after a warm-up round. Prints the device, the wall times, the ratios and where the workers spent
their time; --json writes it all. Targets (issue 27): 2 GPUs at least 1.8x faster than 1, 4 GPUs
3.4x.

    python -m bench.round_gpus [--gpus 1,2,4] [--repeats 5] [--cluster] [--programs] [--json F] [--md F]

Each count N judges on GPUs 0..N-1 (counts beyond the host's GPUs are skipped, and said so). Every
configuration gets the compiler processes the engine gives that many GPUs (compile_workers), the Ray
one as well, so the two paths differ only in how jobs reach the GPUs. bench/round_tasks.py runs the
same measurement over five tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.judge.judge_environment import compile_workers
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
# A Ray head for --cluster: one CPU per GPU actor is plenty (actors take none), a small object store
# (the round ships a few KiB of task files and cubins).
RAY_OBJECT_STORE_BYTES = 256 * 2**20


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
class ProgramStop:
    """How one program's sampling stopped (engine/gpu/stop_rule.py): enough samples with a spread
    pooled over the placements under stop_rel_iqr, or the cap. A program that runs to the cap costs
    its GPU up to a second, and a round waits for its slowest GPU."""

    label: str
    gpu: str
    median_us: float
    samples: int
    discarded: int  # taken under a throttled SM clock; they count towards the cap
    rel_iqr: float  # the interquartile range over the median, pooled over the placements
    placements: int
    sm_clock_mhz: float | None
    placement_spread: float | None = None  # the spread the stop rule judged, within each placement
    replays: int = 1  # plan runs per sample (a graph's K; 1 without a graph)


@dataclass(frozen=True)
class RoundResult:
    total_s: float
    validate_s: float  # compiling and validating the 8
    profile_s: float  # timing them against the baseline
    validation_phases_s: dict[str, float]  # in the workers, summed over the 8 candidates
    profile_phases_s: tuple[dict[str, float], ...]  # each GPU's timing job
    validations_per_gpu: dict[str, int]  # where the 8 were validated
    timed_per_gpu: dict[str, int]  # where they were timed
    programs: tuple[ProgramStop, ...] = ()  # each candidate's sampling, in the order judged
    # Seconds from the round's start at which each candidate's compile ended and its validation
    # ended (the order of `cands`): the round's critical path, the compiles' floor first.
    compiled_at_s: tuple[float, ...] = ()
    validated_at_s: tuple[float, ...] = ()
    nvrtc_s: tuple[float, ...] = ()  # each compile's own time inside its compiler process


async def one_round(judge, cands: list[Candidate]) -> RoundResult:
    start = time.perf_counter()

    compiled_at: dict[str, float] = {}
    validated_at: dict[str, float] = {}

    async def check(c: Candidate):
        compiled = await judge.compile(c)
        compiled_at[c.label] = time.perf_counter() - start
        assert isinstance(compiled, Compiled), compiled
        judgement = await judge.validate(compiled)
        validated_at[c.label] = time.perf_counter() - start
        return compiled, judgement

    judged = await asyncio.gather(*(check(c) for c in cands))
    assert all(j.status == "correct" for _c, j in judged), [j.message for _c, j in judged]
    validated = time.perf_counter()
    timing = await judge.profile(judged)
    assert all(j.timing is not None for j in timing.judgements), [j.message for j in timing.judgements]
    end = time.perf_counter()
    val_phases = summed(j.validation.phases_s for _c, j in judged if j.validation)
    return RoundResult(
        end - start,
        validated - start,
        end - validated,
        val_phases,
        timing.profile_phases_s,
        dict(Counter(_where(j) for _c, j in judged)),
        dict(Counter(_where(j) for j in timing.judgements)),
        tuple(_stop(j) for j in timing.judgements),  # every one timed: asserted above
        tuple(compiled_at[c.label] for c in cands),
        tuple(validated_at[c.label] for c in cands),
        tuple(compiled.compile.elapsed_s for compiled, _j in judged),
    )


def _stop(judgement) -> ProgramStop:
    t = judgement.timing
    return ProgramStop(
        judgement.label,
        _where(judgement),
        t.median_us,
        t.samples,
        t.discarded,
        t.rel_iqr,
        t.placements,
        t.sm_clock_mhz,
        t.placement_spread,
        t.replays,
    )


def _where(judgement) -> str:
    r = judgement.ran_on
    if r is None:
        return "?"
    return f"{r.gpu_index}@{r.node_id[:8]}" if r.node_id else str(r.gpu_index)


def critical_path(res: RoundResult) -> str:
    """When the round's compiles and validations ended (the last round's): the first validation can
    start no sooner than its compile ends, whatever the GPUs."""
    ms = [t * 1000 for t in res.compiled_at_s]
    vs = [t * 1000 for t in res.validated_at_s]
    nv = [t * 1000 for t in res.nvrtc_s] or [0.0]
    return (
        f"last round: compiles ended at {min(ms):.0f}-{max(ms):.0f} ms (NVRTC {min(nv):.0f}-{max(nv):.0f} ms "
        f"each), validations at {min(vs):.0f}-{max(vs):.0f} ms"
    )


def summed(phases) -> dict[str, float]:
    out: dict[str, float] = {}
    for p in phases:
        for k, v in p.items():
            out[k] = out.get(k, 0.0) + v
    return out


def fmt_phases(p: dict[str, float]) -> str:
    return ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in p.items())


def median_round(rounds: list[RoundResult]) -> RoundResult:
    """The median of each figure, with the phases, placement and programs of the last round."""
    last = rounds[-1]
    return dataclasses.replace(
        last,
        total_s=statistics.median(r.total_s for r in rounds),
        validate_s=statistics.median(r.validate_s for r in rounds),
        profile_s=statistics.median(r.profile_s for r in rounds),
    )


def settings_for(gpus: int) -> Settings:
    """The settings a session on `gpus` GPUs of this host gets (the compiler pool sized for them),
    for the Ray path too."""
    base = Settings()
    return dataclasses.replace(base, compile=dataclasses.replace(base.compile, max_workers=compile_workers(base, gpus)))


class RayHead:
    """A local Ray head that believes in `gpus` GPUs: Ray gives its actors GPUs 0..gpus-1, as the
    local pool uses them."""

    def __init__(self, gpus: int) -> None:
        from ray.cluster_utils import Cluster

        head = {
            "num_cpus": gpus,
            "num_gpus": gpus,
            "include_dashboard": False,
            "object_store_memory": RAY_OBJECT_STORE_BYTES,
        }
        self.cluster = Cluster(initialize_head=True, head_node_args=head)
        self.address = self.cluster.address

    def close(self) -> None:
        self.cluster.shutdown()


async def open_env(gpus: int, ray_head: RayHead | None):
    settings = settings_for(gpus)
    if ray_head is None:
        from cuda_llm.engine.fsr.judging import open_environment

        env = await open_environment(settings, gpus=",".join(str(i) for i in range(gpus)))
    else:
        from cuda_llm.engine.cluster.cluster_environment import open_cluster_environment
        from cuda_llm.engine.cluster.cluster_settings import ClusterSettings

        # Compiles stay on this process, as on the local path: only the way to the GPUs differs.
        env = await open_cluster_environment(settings, ray_head.address, cluster=ClusterSettings(remote_compilers=0))
    if env.gpu is None:
        raise SystemExit(f"bench needs GPUs: {env.notice}")
    return env, settings


async def measure(
    rounds_by_task: dict[str, list[Candidate]], gpus: int, repeats: int, ray: bool
) -> tuple[dict[str, RoundResult], str]:
    """Each task's median round on GPUs 0..gpus-1 (through Ray with `ray`), and the device."""
    head = RayHead(gpus) if ray else None
    try:
        env, settings = await open_env(gpus, head)
        try:
            out = {}
            for name, cands in rounds_by_task.items():
                judge = env.judge(TaskLibrary().get(name), settings)
                await one_round(judge, cands)  # warm-up: references, baseline, compiler processes
                out[name] = median_round([await one_round(judge, cands) for _ in range(repeats)])
            return out, env.gpu.describe()
        finally:
            await env.close()
    finally:
        if head is not None:
            head.close()


def gpu_counts(text: str) -> list[int]:
    from cuda_llm.engine.gpu.gpu_pool import visible_gpu_count

    wanted = sorted({int(x) for x in text.split(",") if x.strip()})
    have = visible_gpu_count()
    counts = [n for n in wanted if 1 <= n <= have]
    skipped = [n for n in wanted if n not in counts]
    if skipped:
        print(f"(skipped {', '.join(map(str, skipped))} GPU(s): this host has {have})", file=sys.stderr)
    if not counts:
        raise SystemExit(f"bench needs GPUs: this host has {have}")
    return counts


def run_all(
    rounds_by_task: dict[str, list[Candidate]], counts: Sequence[int], repeats: int, cluster: bool
) -> list[dict[str, Any]]:
    """One entry per (path, GPU count): the local pool for every count, then Ray's with `cluster`."""
    runs = []
    for path in ("local", "ray") if cluster else ("local",):
        for n in counts:
            results, device = asyncio.run(measure(rounds_by_task, n, repeats, path == "ray"))
            runs.append({"path": path, "gpus": n, "device": device, "rounds": results})
    return runs


def ratios(runs: list[dict[str, Any]], task: str | None) -> dict[str, float]:
    """Speedups over the local pool on 1 GPU, by 'path:N' (`task` None: the tasks' rounds summed),
    and Ray's time over the local pool's for the same GPUs ('ray/local:N')."""

    def total(run: dict[str, Any]) -> float:
        rounds = run["rounds"]
        return rounds[task].total_s if task else sum(r.total_s for r in rounds.values())

    by = {(r["path"], r["gpus"]): total(r) for r in runs}
    base = by.get(("local", 1)) or by[min(k for k in by if k[0] == "local")]
    out = {f"{path}:{n}": base / t for (path, n), t in by.items()}
    for (path, n), t in by.items():
        if path == "ray" and ("local", n) in by:
            out[f"ray/local:{n}"] = t / by[("local", n)]
    return out


def report(runs: list[dict[str, Any]], task: str, programs: bool = False) -> None:
    """The lines for one task: the times and ratios, then where each configuration spent them (with
    `programs`, how each candidate's sampling stopped)."""
    speed = ratios(runs, task)
    first = runs[0]
    print(f"round of 8 {task} candidates on {first['device'].split(' x ')[-1]}:")
    for r in runs:
        res: RoundResult = r["rounds"][task]
        n, path = r["gpus"], r["path"]
        label = f"{n} GPU{'s' if n > 1 else ''}" + (" via Ray" if path == "ray" else "")
        extra = f", {speed[f'ray/local:{n}']:.2f}x the local pool's time" if path == "ray" else ""
        print(
            f"  {label:>14}: {res.total_s:.3f} s ({speed[f'{path}:{n}']:.2f}x){extra}; "
            f"compile+validate {res.validate_s:.3f} s, timing {res.profile_s:.3f} s  [{r['device']}]"
        )
    for r in runs:
        res = r["rounds"][task]
        label = f"{r['path']} {r['gpus']}"
        print(f"  {label}: validation (all 8, in the workers): {fmt_phases(res.validation_phases_s)}")
        print(f"  {label}: validated per GPU {res.validations_per_gpu}, timed per GPU {res.timed_per_gpu}")
        if res.compiled_at_s:
            print(f"  {label}: {critical_path(res)}")
        for i, p in enumerate(res.profile_phases_s):
            print(f"  {label}: timing job {i}: {fmt_phases(p)}")
        if programs:
            for stop in res.programs:
                clock = f"{stop.sm_clock_mhz:.0f} MHz" if stop.sm_clock_mhz else "clock unread"
                within = "" if stop.placement_spread is None else f" ({stop.placement_spread:.2%} within placements)"
                print(
                    f"  {label}: {stop.label} on GPU {stop.gpu}: {stop.median_us:.1f} us, {stop.samples} samples "
                    f"({stop.discarded} discarded) over {stop.placements} placements, "
                    f"IQR {stop.rel_iqr:.2%}{within}, {clock}"
                )


def markdown(runs: list[dict[str, Any]], tasks: Sequence[str]) -> str:
    """The figures as a table for docs/performance.md: a row per task and configuration."""
    rows = [
        "| task | path | GPUs | round (s) | compile + validate (s) | timing (s) | speedup over 1 GPU |",
        "|---|---|---|---|---|---|---|",
    ]
    for task in tasks:
        speed = ratios(runs, task)
        for r in runs:
            res: RoundResult = r["rounds"][task]
            rows.append(
                f"| {task} | {r['path']} | {r['gpus']} | {res.total_s:.3f} | {res.validate_s:.3f} | "
                f"{res.profile_s:.3f} | {speed[_key(r)]:.2f}x |"
            )
    if len(tasks) > 1:
        total = ratios(runs, None)
        rows.append("")
        rows.append("rounds summed: " + ", ".join(f"{k} {v:.2f}x" for k, v in total.items()))
    devices = sorted({r["device"] for r in runs})
    rows.append("")
    rows.append("devices: " + "; ".join(devices))
    return "\n".join(rows) + "\n"


def _key(run: dict[str, Any]) -> str:
    return f"{run['path']}:{run['gpus']}"


def as_json(runs: list[dict[str, Any]], tasks: Sequence[str]) -> dict[str, Any]:
    return {
        "tasks": list(tasks),
        "candidates": 8,
        "runs": [{**r, "rounds": {t: dataclasses.asdict(x) for t, x in r["rounds"].items()}} for r in runs],
        "speedups": {t: ratios(runs, t) for t in tasks},
        "speedups_all_tasks": ratios(runs, None),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpus", default="1,2,4", help="GPU counts to compare, e.g. 1,2 (default 1,2,4)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cluster", action="store_true", help="also through the Ray path: a local head, one actor per GPU")
    p.add_argument("--json")
    p.add_argument("--md", help="also write the figures as a markdown table")
    p.add_argument("--programs", action="store_true", help="also how each candidate's sampling stopped")
    args = p.parse_args(argv)
    counts = gpu_counts(args.gpus)
    runs = run_all({"vector_add": candidates()}, counts, args.repeats, args.cluster)
    report(runs, "vector_add", args.programs)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(as_json(runs, ["vector_add"]), fh, indent=2)
    if args.md:
        with open(args.md, "w") as fh:
            fh.write(markdown(runs, ["vector_add"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
