"""`cuda-llm bench --model SPEC [--tasks ...]`: the paper's table. One headless session per task; for
each, the baseline latency, the best latency, the speedup, the share of the roofline, whether the
loop found a correct kernel, and the rounds and tokens it used. Markdown and JSON.

`--model replay:latest` replays, for each task, the newest recorded session of that task.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cuda_llm.engine.cli.output import error, print_json


def _resolve_model(spec: str, task: str, db: str | None, exclude: set[int]) -> str | None:
    if spec != "replay:latest":
        return spec
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(db)
    try:
        for s in store.sessions(10_000):
            if s.task == task and s.id not in exclude and not s.model.startswith("replay:"):
                return f"replay:{s.id}"
    finally:
        store.close()
    return None


async def bench_task(
    name: str,
    args: argparse.Namespace,
    created: set[int],
    environment: Any = None,
    opened: Callable[[], None] | None = None,
) -> dict[str, Any] | None:
    """One task's headless session and its row of the table (None: nothing to replay for it).
    `environment`: the judge environment to run it in (default: opened from the options);
    `opened` is called once its session exists."""
    from cuda_llm.engine.cli.report import session_report
    from cuda_llm.engine.cli.run_cmd import session_options
    from cuda_llm.engine.fsr.control import Controller
    from cuda_llm.engine.fsr.session import open_session
    from cuda_llm.engine.store.sessions import SessionStore

    model = _resolve_model(args.model, name, args.db, created)
    if model is None:
        print(f"cuda-llm: no recorded session of {name} to replay; skipped", file=sys.stderr)
        return None
    options = session_options(args, name)
    options = dataclasses.replace(options, model=model)
    if model.startswith("replay:"):
        # The replayed session's own N, D and rules, so the same requests are made.
        store = SessionStore(args.db)
        try:
            recorded = store.session(int(model.split(":", 1)[1])).settings
        finally:
            store.close()
        options = dataclasses.replace(options, loop=dataclasses.replace(recorded, **options.overrides))
    control = Controller(auto_accept=True, stop_when_paused=True)
    started = time.monotonic()
    session = await open_session(options, control, environment=environment)
    created.add(session.id)
    if opened is not None:
        opened()
    if session.env.notice and environment is None:
        print(f"cuda-llm: {session.env.notice}", file=sys.stderr)
    gpu = session.env.device.name if session.env.device else f"compile-only ({session.env.arch})"
    print(f"{name}: session {session.id} with {model}", file=sys.stderr, flush=True)
    try:
        result = await session.run()
    finally:
        await session.close()
    store = SessionStore(args.db)
    try:
        report = session_report(store, result.session_id)
    finally:
        store.close()
    best = report["best"]
    fig = best["figures"] if best else None
    correct = any(
        h["status"] in ("correct", "suspect", "compiled") for h in report["history"] if h["label"] != "baseline"
    )
    return {
        "task": name,
        "gpu": gpu,
        "session": result.session_id,
        "model": model,
        "status": result.status,
        "baseline_us": report["baseline_us"],
        "best_label": best["label"] if best else "baseline",
        "best_us": fig["median_us"] if fig else report["baseline_us"],
        "speedup": fig["speedup"] if fig else (1.0 if report["baseline_us"] else None),
        "roofline_share": fig["roofline_share"] if fig else None,
        "correct": correct,
        "rounds": len(report["rounds"]),
        "tokens": report["tokens_used"],
        "seconds": time.monotonic() - started,
    }


async def _bench(
    args: argparse.Namespace, environment: Callable[[], Any] | None = None
) -> tuple[list[dict[str, Any]], str]:
    """The rows, and what they ran on. `environment` makes each task's judge environment (tests)."""
    from cuda_llm.engine.task import TaskLibrary

    names = args.tasks or TaskLibrary().names()
    if getattr(args, "cluster", None) and not args.compile_only:
        # The tasks side by side, each on GPUs of its own (engine/cluster/bench.py).
        from cuda_llm.engine.cluster.bench import bench_on_cluster

        return await bench_on_cluster(args, names, bench_task)
    rows: list[dict[str, Any]] = []
    created: set[int] = set()
    for name in names:
        row = await bench_task(name, args, created, environment() if environment else None)
        if row is not None:
            rows.append(row)
    return rows, rows[-1]["gpu"] if rows else "?"


def markdown(rows: list[dict[str, Any]], device: str, model: str) -> str:
    def us(v: float | None) -> str:
        return f"{v:.1f}" if v else "-"

    lines = [
        f"# cuda-llm bench: {model} on {device}",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M')}; latencies are medians timed interleaved with the baseline on the "
        "row's GPU.",
        "",
        "| task | GPU | baseline (us) | best (us) | speedup | roofline | correct | rounds | tokens | session |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        sp = f"{r['speedup']:.2f}x" if r["speedup"] else "-"
        rf = f"{r['roofline_share']:.0%}" if r["roofline_share"] else "-"
        lines.append(
            f"| {r['task']} | {r.get('gpu', '?')} | {us(r['baseline_us'])} | {us(r['best_us'])} | {sp} | {rf} | "
            f"{'yes' if r['correct'] else 'no'} | {r['rounds']} | {r['tokens']} | {r['session']} |"
        )
    # Speedups are compared only among rows of one GPU model: a mean over several would mix them.
    models = sorted({r.get("gpu", "?") for r in rows})
    for gpu in models:
        group = [r for r in rows if r.get("gpu", "?") == gpu]
        speedups = [r["speedup"] for r in group if r["speedup"]]
        if not speedups:
            continue
        geo = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
        on = f" on {gpu}" if len(models) > 1 else ""
        lines += [
            "",
            f"Geometric mean speedup{on} over {len(speedups)} task(s): {geo:.2f}x; "
            f"correct on {sum(r['correct'] for r in group)} of {len(group)}.",
        ]
    return "\n".join(lines) + "\n"


def bench(args: argparse.Namespace) -> int:
    if not args.model:
        error("bench needs --model SPEC (ollama:MODEL, openai:MODEL, or replay:latest)")
        return 2
    rows, device = asyncio.run(_bench(args))
    text = markdown(rows, device, args.model)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench.md").write_text(text)
        (out / "bench.json").write_text(json.dumps({"device": device, "model": args.model, "rows": rows}, indent=2))
    if args.json:
        print_json({"device": device, "model": args.model, "rows": rows})
    else:
        print(text)
    return 0 if rows else 1


def register(sub: argparse._SubParsersAction) -> None:
    from cuda_llm.engine.cli.run_cmd import add_session_arguments

    p = sub.add_parser("bench", help="the paper's table: baseline vs best per task")
    p.add_argument("--tasks", nargs="*", help="tasks to run (default: all)")
    add_session_arguments(p)
    p.add_argument("--out", help="also write bench.md and bench.json into this folder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=bench)
