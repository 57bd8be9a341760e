"""Why the profiler and triton's do_bench disagree: each method, and what it includes, measured.

For each held-out candidate (bench/heldout/) and its task's baseline, at the timing size:

- ours:        the engine's profiler (read-only L2 flush, launches queued behind a delay kernel,
               events, placements), as a candidate is judged;
- ours+wflush: the same, but the L2 flushed by writing its flush buffer (a memset), as do_bench does;
- do_bench:    triton.testing.do_bench (it zeroes a 256 MiB buffer before every sample), less the
               launch overhead it measures for the same number of empty launches;
- do_bench+rflush: do_bench with its flush replaced by a read of the same buffer.

If the write flush explains the gap, ours+wflush sits near do_bench and do_bench+rflush near ours.
With --samples, every sample of our profiler is printed with the placement it ran on and the SM
clock NVML read right after it, so a bimodal figure can be traced to placements or clocks.

    python -m bench.timing_methods [--kernels matmul_tiled64 ...] [--samples] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HELDOUT = Path(__file__).resolve().parent / "heldout"
TASK_OF = {
    "vector_add_float4": "vector_add",
    "reduction_sum_two_pass": "reduction_sum",
    "matrix_transpose_tiled": "matrix_transpose",
    "softmax_block_row": "softmax",
    "matmul_tiled64": "matmul",
    "matmul_tiled128": "matmul",
}


async def compile_both(task, reply: Path):
    from cuda_llm.engine.core.settings import Settings
    from cuda_llm.engine.fsr.judging import open_environment
    from cuda_llm.engine.judge.judgement import Candidate, Compiled

    settings = Settings()
    env = await open_environment(settings, compile_only=True)
    try:
        judge = env.judge(task, settings)
        baseline = await judge.baseline()
        cand = judge.parse(reply.stem, reply.read_text())
        assert isinstance(cand, Candidate), cand
        compiled = await judge.compile(cand)
        assert isinstance(compiled, Compiled), compiled
        return baseline, compiled
    finally:
        await env.close()


def ours(state, task, programs, write_flush: bool, keep_samples: bool):
    """Profile (label, Compiled) programs interleaved; returns {label: (Timing, samples)}."""
    from cuda_llm.engine.gpu import profile as prof

    settings = state.settings
    profiler = prof.Profiler(
        state.ctx, state.info, state.harness, state.refs, state.nvml, settings.profile, settings.validation
    )
    harness = state.harness
    if write_flush:
        buf = harness.flush_buffer
        harness.flush_l2 = lambda: state.ctx.zero(buf.ptr, buf.nbytes)  # type: ignore[method-assign]
    trace: dict[str, list[tuple[int, float, float | None]]] = {}
    timed, throttled = profiler._timed, profiler._throttled
    last: list = []

    def traced_timed(entry, flush):
        ms = timed(entry, flush)
        last[:] = [entry, ms]
        return ms

    def traced_throttled():
        verdict, clock = throttled()
        if last:
            entry, ms = last
            trace.setdefault(entry.label, []).append(((entry.turn - 1) % max(1, len(entry.placements)), ms, clock))
        return verdict, clock

    profiler._timed, profiler._throttled = traced_timed, traced_throttled  # type: ignore[method-assign]
    modules = [state.ctx.load_module(c.compile.cubin) for _, c in programs]
    try:
        report = profiler.profile(
            task, [(label, m, c.bound, label == "baseline") for (label, c), m in zip(programs, modules, strict=True)]
        )
    finally:
        for m in modules:
            state.ctx.unload_module(m)
        if write_flush:
            del harness.flush_l2
    return {t.label: (t, trace.get(t.label, []) if keep_samples else []) for t in report.timings}


def do_bench_pair(task, compiled, read_flush: bool) -> float:
    import torch
    import triton
    import triton.testing

    from bench.independent import cupy_plan_runner, launch_overhead_us

    driver = triton.runtime.driver.active
    original = driver.clear_cache
    if read_flush:
        driver.clear_cache = lambda cache: torch.sum(cache)
    try:
        run = cupy_plan_runner(task, compiled)
        run()
        torch.cuda.synchronize()
        us = float(triton.testing.do_bench(run, warmup=25, rep=200, return_mode="median")) * 1000.0
        overhead = launch_overhead_us(len(compiled.bound.launches) + len(compiled.bound.scratch))
    finally:
        driver.clear_cache = original
    return us - overhead


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", nargs="+", default=list(TASK_OF))
    parser.add_argument("--samples", action="store_true", help="print every sample of our profiler")
    parser.add_argument("--repeats", type=int, default=2, help="profiles per method (the spread shows)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from cuda_llm.engine.core.settings import Settings
    from cuda_llm.engine.gpu.worker_process import WorkerState
    from cuda_llm.engine.task import TaskLibrary

    library = TaskLibrary()
    state = WorkerState(0, Settings())
    out = {"device": state.info.name, "rows": []}
    print(f"device: {state.info.name} ({state.info.arch}), driver {state.info.driver_version}")
    print(f"{'kernel':26s} {'program':10s} {'ours':>9s} {'ours+wfl':>9s} {'do_bench':>9s} {'db+rflush':>9s}  ours IQR")
    try:
        for name in args.kernels:
            task = library.get(TASK_OF[name])
            baseline, compiled = asyncio.run(compile_both(task, HELDOUT / f"{name}.md"))
            programs = [("baseline", baseline), (name, compiled)]
            runs = {
                flag: [ours(state, task, programs, flag, args.samples) for _ in range(args.repeats)]
                for flag in (False, True)
            }
            for label, comp in programs:
                r = [run[label][0] for run in runs[False]]
                w = [run[label][0] for run in runs[True]]
                db = do_bench_pair(task, comp, read_flush=False)
                dbr = do_bench_pair(task, comp, read_flush=True)
                med = lambda ts: statistics.median(t.median_us for t in ts)  # noqa: E731
                iqr = " ".join(f"{t.q1_us:.1f}-{t.q3_us:.1f}" for t in r)
                print(f"{name:26s} {label[:10]:10s} {med(r):9.1f} {med(w):9.1f} {db:9.1f} {dbr:9.1f}  {iqr}")
                row = {
                    "kernel": name,
                    "program": label,
                    "ours_us": [t.median_us for t in r],
                    "ours_iqr_us": [(t.q1_us, t.q3_us) for t in r],
                    "ours_write_flush_us": [t.median_us for t in w],
                    "do_bench_us": db,
                    "do_bench_read_flush_us": dbr,
                    "samples": [run[label][1] for run in runs[False]],
                }
                out["rows"].append(row)
                if args.samples:
                    for k, samples in enumerate(row["samples"]):
                        by_place: dict[int, list[float]] = {}
                        for place, ms, _clock in samples:
                            by_place.setdefault(place, []).append(ms * 1000)
                        clocks = sorted({c for _, _, c in samples if c})
                        print(
                            f"    profile {k}: per placement median us "
                            + ", ".join(
                                f"p{p}={statistics.median(v):.1f} (n={len(v)})" for p, v in sorted(by_place.items())
                            )
                            + f"; clocks seen {clocks}"
                        )
                        if name.startswith("matmul"):
                            print(
                                "    samples (placement, us, MHz): "
                                + " ".join(f"{p}:{ms * 1000:.0f}@{c:.0f}" for p, ms, c in samples[:80])
                            )
    finally:
        state.refs.unpin_all()
    if args.json:
        args.json.write_text(
            json.dumps(
                out, indent=1, default=lambda o: dataclasses.asdict(o) if dataclasses.is_dataclass(o) else str(o)
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
