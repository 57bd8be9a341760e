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
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuda_llm.engine.cli.output import error, print_json

if TYPE_CHECKING:
    from cuda_llm.engine.fsr.control import Controller


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


async def _bench(args: argparse.Namespace) -> tuple[list[dict[str, Any]], str]:
    from cuda_llm.engine.cli.interrupt import ctrl_c_stops
    from cuda_llm.engine.fsr.control import Controller
    from cuda_llm.engine.task import TaskLibrary

    names = args.tasks or TaskLibrary().names()
    rows: list[dict[str, Any]] = []
    created: set[int] = set()
    device = "?"
    control: Controller | None = None
    stopped = False

    def stop() -> None:  # Ctrl-C: the session running now stops cleanly, no further task starts
        nonlocal stopped
        stopped = True
        if control is not None:
            control.stop()

    with ctrl_c_stops(stop):
        for name in names:
            if stopped:
                print(f"cuda-llm: stopped: {name} and the tasks after it were not run", file=sys.stderr)
                break
            control = Controller(auto_accept=True, stop_when_paused=True)
            row, device = await _bench_task(args, name, control, created, device)
            if row is not None:
                rows.append(row)
    return rows, device


async def _bench_task(
    args: argparse.Namespace, name: str, control: Controller, created: set[int], device: str
) -> tuple[dict[str, Any] | None, str]:
    """One task's session and its row of the table (None when there is nothing to replay)."""
    from cuda_llm.engine.cli.report import session_report
    from cuda_llm.engine.cli.run_cmd import session_options
    from cuda_llm.engine.fsr.session import open_session
    from cuda_llm.engine.store.sessions import SessionStore

    model = _resolve_model(args.model, name, args.db, created)
    if model is None:
        print(f"cuda-llm: no recorded session of {name} to replay; skipped", file=sys.stderr)
        return None, device
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
    started = time.monotonic()
    session = await open_session(options, control)
    created.add(session.id)
    if session.env.notice:
        print(f"cuda-llm: {session.env.notice}", file=sys.stderr)
    device = session.env.device.name if session.env.device else f"compile-only ({session.env.arch})"
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
    return (
        {
            "task": name,
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
        },
        device,
    )


def markdown(rows: list[dict[str, Any]], device: str, model: str) -> str:
    def us(v: float | None) -> str:
        return f"{v:.1f}" if v else "-"

    lines = [
        f"# cuda-llm bench: {model} on {device}",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M')}; latencies are medians timed interleaved with the baseline on this GPU.",
        "",
        "| task | baseline (us) | best (us) | speedup | roofline | correct | rounds | tokens | session |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        sp = f"{r['speedup']:.2f}x" if r["speedup"] else "-"
        rf = f"{r['roofline_share']:.0%}" if r["roofline_share"] else "-"
        lines.append(
            f"| {r['task']} | {us(r['baseline_us'])} | {us(r['best_us'])} | {sp} | {rf} | "
            f"{'yes' if r['correct'] else 'no'} | {r['rounds']} | {r['tokens']} | {r['session']} |"
        )
    speedups = [r["speedup"] for r in rows if r["speedup"]]
    if speedups:
        import math

        geo = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
        lines += [
            "",
            f"Geometric mean speedup over {len(speedups)} task(s): {geo:.2f}x; "
            f"correct on {sum(r['correct'] for r in rows)} of {len(rows)}.",
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
