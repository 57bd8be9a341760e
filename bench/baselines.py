"""The baselines' latencies: three profiles each, the spread between them, and the difference from an
independent timer (triton.testing.do_bench on CuPy launches of the same cubin). Writes
docs/baselines.md and prints the table and the device it ran on.

    python -m bench.baselines [--tasks vector_add matmul ...] [--out docs/baselines.md]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import sys
import time
from pathlib import Path

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.fsr.judging import open_environment
from cuda_llm.engine.judge.metrics import figures
from cuda_llm.engine.task import TaskLibrary


def _fmt_rate(fig) -> str:
    if fig.bound == "compute" and fig.gflops:
        return f"{fig.gflops:,.0f} GFLOP/s"
    return f"{fig.gbps:,.0f} GB/s"


async def measure(task_names: list[str], repeats: int) -> tuple[list[dict], dict]:
    settings = Settings()
    env = await open_environment(settings, gpus="0")
    if env.gpu is None:
        raise SystemExit(f"bench/baselines needs a GPU: {env.notice}")
    have_independent = bool(importlib.util.find_spec("cupy") and importlib.util.find_spec("triton"))
    rows = []
    library = TaskLibrary()
    try:
        for name in task_names:
            task = library.get(name)
            judge = env.judge(task, settings)
            compiled = await judge.baseline()
            verdict = await judge.validate(compiled)
            medians, timings = [], []
            for _ in range(repeats):
                rt = await judge.profile([])
                timings.append(rt.baseline)
                medians.append(rt.baseline.median_us)
            t = sorted(timings, key=lambda x: x.median_us)[repeats // 2]
            fig = figures(task, t, env.peaks, None)
            independent = None
            if have_independent:
                from bench.independent import do_bench_us

                independent = do_bench_us(task, compiled)
            row = {
                "task": name,
                "size": " ".join(f"{k}={v}" for k, v in task.timing.values),
                "valid": verdict.status,
                "median_us": t.median_us,
                "iqr_us": t.iqr_us,
                "medians_us": medians,
                "spread": (max(medians) - min(medians)) / min(medians),
                "rate": _fmt_rate(fig),
                "roofline_share": fig.roofline_share,
                "bound": fig.bound,
                "mode": t.mode,
                "samples": t.samples,
                "placements": t.placements,
                "do_bench_us": independent,
                "vs_do_bench": (t.median_us - independent) / independent if independent else None,
            }
            rows.append(row)
            print(
                f"{name:24s} {t.median_us:10.1f} us  spread {row['spread']:.2%}  "
                + (f"do_bench {independent:10.1f} us ({row['vs_do_bench']:+.1%})" if independent else ""),
                flush=True,
            )
        device = {
            "name": env.device.name,
            "arch": env.arch,
            "driver": env.device.driver_version,
            "nvrtc": env.device.nvrtc_version,
            "bandwidth_tbps": env.peaks.bandwidth / 1e12,
            "fp32_tflops": env.peaks.fp32_flops / 1e12,
            "peaks_method": env.peaks.method,
        }
    finally:
        await env.close()
    return rows, device


def markdown(rows: list[dict], device: dict, repeats: int) -> str:
    date = time.strftime("%Y-%m-%d")
    out = [
        "# Baseline latencies",
        "",
        f"Measured {date} on {device['name']} ({device['arch']}, driver {device['driver']}, NVRTC {device['nvrtc']}) "
        f"by `python -m bench.baselines`. Roofline ceilings: {device['bandwidth_tbps']:.2f} TB/s, "
        f"{device['fp32_tflops']:.1f} TFLOP/s fp32 ({device['peaks_method']}).",
        "",
        f"Latency is the median of the profile whose median is the middle of {repeats} separate profiling sessions, "
        f"each on {max(r['placements'] for r in rows)} copies of the buffers in turn (so where they lie in memory is "
        "averaged over, see docs/performance.md); "
        f"'spread' is (max - min) / min of the {repeats} medians (target: within 2%); 'vs do_bench' compares it with "
        "triton.testing.do_bench timing CuPy launches of the same cubin (target: within 5%).",
        "",
        "| task | timing size | latency (us) | IQR (us) | achieved | roofline share | spread | do_bench (us) "
        "| vs do_bench |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        db = f"{r['do_bench_us']:.1f}" if r["do_bench_us"] else "n/a"
        vs = f"{r['vs_do_bench']:+.1%}" if r["vs_do_bench"] is not None else "n/a"
        out.append(
            f"| {r['task']} | {r['size']} | {r['median_us']:.1f} | {r['iqr_us']:.2f} | {r['rate']} | "
            f"{r['roofline_share']:.0%} ({r['bound']}) | {r['spread']:.2%} | {db} | {vs} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="*", help="default: every task")
    p.add_argument("--out", default="docs/baselines.md")
    p.add_argument("--json", help="also write the raw figures here")
    p.add_argument("--repeats", type=int, default=3, help="profiling sessions per task (default 3)")
    args = p.parse_args(argv)
    names = args.tasks or TaskLibrary().names()
    rows, device = asyncio.run(measure(names, args.repeats))
    text = markdown(rows, device, args.repeats)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "rows": rows}, indent=2))
    print(text)
    print(f"device: {device['name']} ({device['arch']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
