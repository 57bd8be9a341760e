"""`cuda-llm sessions`, `export ID` and `replay ID`."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from cuda_llm.engine.cli.output import error, print_json, table


def list_sessions(args: argparse.Namespace) -> int:
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(args.db, read_only=True)
    try:
        records = store.sessions(args.limit)
        if args.json:
            print_json(
                [
                    {
                        "id": s.id,
                        "task": s.task,
                        "model": s.model,
                        "device": s.device,
                        "status": s.shown_status,
                        "best": s.best_label,
                        "tokens": s.tokens_used,
                        "created": s.created_at,
                        "message": s.status_message,
                    }
                    for s in records
                ]
            )
            return 0
        rows = [
            (
                s.id,
                time.strftime("%m-%d %H:%M", time.localtime(s.created_at)),
                s.task,
                s.model,
                s.shown_status,
                s.best_label or "-",
                s.tokens_used,
                s.device,
            )
            for s in records
        ]
        if not rows:
            print(f"no sessions yet in {store.path}; start one with `cuda-llm run TASK --model SPEC`")
        else:
            print(table(("id", "started", "task", "model", "status", "best", "tokens", "device"), rows))
        return 0
    finally:
        store.close()


def export(args: argparse.Namespace) -> int:
    from cuda_llm.engine.cli.report import markdown, session_report
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(args.db, read_only=True)
    try:
        report = session_report(store, args.id)
    finally:
        store.close()
    out = Path(args.out or f"cuda-llm-session-{args.id}")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    best = report["best"]
    if best and best["source"]:
        (out / "kernel.cu").write_text(best["source"])
        (out / "plan.json").write_text(json.dumps(best["plan"], indent=2) + "\n")
        written += ["kernel.cu", "plan.json"]
    (out / "report.md").write_text(markdown(report))
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    written += ["report.md", "report.json"]
    if args.json:
        print_json({"folder": str(out), "files": written})
    else:
        print(f"exported session {args.id} to {out}/: {', '.join(written)}")
        if not (best and best["source"]):
            print("no candidate beat the baseline: there is no kernel to export, only the report")
    return 0


def replay(args: argparse.Namespace) -> int:
    """Re-judge a recorded session's replies on this machine (a new session, same decisions)."""
    from cuda_llm.engine.cli.run_cmd import run_headless, session_options
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(args.db, read_only=True)
    try:
        record = store.session(args.id)
    finally:
        store.close()
    args.model = f"replay:{args.id}"
    args.resume = None
    options = session_options(args, record.task_folder if Path(record.task_folder).is_dir() else record.task)
    import dataclasses

    # Same N, D and rules as the recorded session (unless given), so the same requests are made.
    settings = dataclasses.replace(record.settings, **options.overrides)  # type: ignore[arg-type]
    options = dataclasses.replace(options, loop=settings)
    try:
        return asyncio.run(run_headless(options, args.json))
    except KeyboardInterrupt:
        error("interrupted")
        return 130


def register(sub: argparse._SubParsersAction) -> None:
    from cuda_llm.engine.cli.run_cmd import add_session_arguments

    p = sub.add_parser("sessions", help="list recorded sessions")
    p.add_argument("--db", help="sessions database (default: the user data folder)")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=list_sessions)

    e = sub.add_parser("export", help="write a session's best kernel (.cu + plan.json) and its report")
    e.add_argument("id", type=int)
    e.add_argument("--out", help="folder to write (default: ./cuda-llm-session-ID)")
    e.add_argument("--db")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=export)

    r = sub.add_parser("replay", help="re-judge a recorded session's replies here (no model needed)")
    r.add_argument("id", type=int)
    add_session_arguments(r)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=replay)
