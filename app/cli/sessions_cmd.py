"""`cuda-llm sessions`, `export ID` and `replay ID`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cuda_llm.app.cli.argtypes import age, positive_int, session_id
from cuda_llm.app.cli.output import error, print_json, table

if TYPE_CHECKING:
    from cuda_llm.engine.store.sessions import SessionRecord, SessionStore


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


def export_files(db: str | None, session_id: int, candidate: str | None, out: Path) -> tuple[dict[str, str], dict]:
    """What `export` writes into `out`, by file name (kernel.cu, plan.json, report.md, report.json),
    and the report's "exported" entry. The TUI's save key writes the same files through this."""
    import shlex

    from cuda_llm.app.cli.report import choose_export, eval_task_argument, markdown, session_report
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(db, read_only=True)
    try:
        report = session_report(store, session_id)
    finally:
        store.close()
    chosen = choose_export(report, candidate)
    report["exported"] = {
        "label": chosen.label,
        "round": chosen.round,
        "status": chosen.status,
        "why": chosen.why,
        "eval": shlex.join(["cuda-llm", "eval", eval_task_argument(report), str(out)]),
    }
    files = {
        "kernel.cu": chosen.source,
        "plan.json": json.dumps(chosen.plan, indent=2) + "\n",
        "report.md": markdown(report),
        "report.json": json.dumps(report, indent=2) + "\n",
    }
    return files, report["exported"]


def write_export(out: Path, files: dict[str, str]) -> list[str]:
    """Write the files into `out`; the names that were there already (they are replaced)."""
    from cuda_llm.app.cli.files import write_text

    replaced = [name for name in files if (out / name).exists()]
    for name, text in files.items():
        write_text(out / name, text)
    return replaced


def remove(args: argparse.Namespace) -> int:
    """`sessions rm ID...`: the sessions and everything recorded for them, gone from the database."""
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(args.db)
    try:
        removed = store.delete_sessions(args.ids)
    finally:
        store.close()
    missing = [i for i in dict.fromkeys(args.ids) if i not in removed]
    if removed:
        print(f"removed session(s) {', '.join(map(str, removed))}")
    if missing:
        raise UserError(f"no session {', '.join(map(str, missing))} in {store.path}; `cuda-llm sessions` lists them")
    return 0


def prune(args: argparse.Namespace) -> int:
    """`sessions prune --older-than AGE`: every session not written to for longer than AGE."""
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(args.db)
    try:
        old = store.sessions_before(time.time() - args.older_than)
        removed = old if args.dry_run else store.delete_sessions(old)
    finally:
        store.close()
    verb = "would remove" if args.dry_run else "removed"
    if removed:
        print(f"{verb} {len(removed)} session(s): {', '.join(map(str, removed))}")
    else:
        print(f"no session in {store.path} is older than that")
    return 0


def export(args: argparse.Namespace) -> int:
    """The session's best candidate (or --candidate LABEL) as kernel.cu + plan.json, and the report
    (Markdown and JSON, with every candidate, the settings and the environment) beside them:
    `cuda-llm eval TASK FOLDER` re-judges it unchanged, on a GPU machine too."""
    from cuda_llm.app.cli.files import output_folder

    out = output_folder(args.out or f"cuda-llm-session-{args.id}")
    files, exported = export_files(args.db, args.id, args.candidate, out)
    # Like `bench --out`, an export writes over what is there, and says so: an earlier export of the
    # session (or anything else under these names) is replaced, never kept beside the new files.
    replaced = write_export(out, files)
    if replaced:
        print(f"cuda-llm: {out}/ existed: replaced its {', '.join(replaced)}", file=sys.stderr)
    if args.json:
        print_json({"folder": str(out), "files": list(files), "replaced": replaced, "exported": exported})
    else:
        print(f"exported session {args.id} to {out}/: {', '.join(files)}")
        print(f"kernel: {exported['label']}: {exported['why']}")
        print(f"re-judge it with: {exported['eval']}")
    return 0


def _recorded_extent(store: SessionStore, session_id: int) -> tuple[int, int, int]:
    """(rounds, candidates a request, repairs) the session's recorded replies cover."""
    keys = list(store.replies(session_id))
    if not keys:
        return 0, 0, 0
    return max(k.round for k in keys), max(k.slot for k in keys) + 1, max(k.attempt for k in keys)


def replay_limits(record: SessionRecord, extent: tuple[int, int, int], overrides: dict[str, object]) -> str | None:
    """Why a replay with these settings cannot be what the user asked for, or None. A replay repeats
    the recorded requests and no others: more candidates, rounds or repairs than were recorded ask
    for replies that do not exist."""
    rounds, candidates, repairs = extent
    asked = []
    for field, have, flag in (
        ("candidates", candidates, "--candidates"),
        ("rounds", rounds, "--rounds"),
        ("repairs", repairs, "--repairs"),
    ):
        want = overrides.get(field)
        if isinstance(want, int) and want > have:
            asked.append((flag, want, have))
    if not asked:
        return None
    wanted = " ".join(f"{flag} {want}" for flag, want, _ in asked)
    limits = " ".join(f"{flag} {have}" for flag, _, have in asked)
    more = " ".join(f"{flag} {want}" for flag, want, _ in asked)
    if record.status == "finished" and not any(flag == "--rounds" for flag, _, _ in asked):
        # New settings take effect in rounds still to come: a resume must have one to run.
        more += f" --rounds {max(rounds, record.settings.rounds) + 1}"
    return (
        f"session {record.id} recorded replies for {rounds} round(s) of {candidates} candidate(s) with up to "
        f"{repairs} repair(s); a replay repeats those requests only, so {wanted} would ask for replies that "
        f"do not exist. Replay with at most {limits}, or continue the session with its model: "
        f"cuda-llm run --resume {record.id} --headless {more}"
    )


def replay(args: argparse.Namespace) -> int:
    """Re-judge a recorded session's replies on this machine (a new session, same decisions)."""
    from cuda_llm.app.cli.run_cmd import run_headless, session_options
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(args.db, read_only=True)
    try:
        record = store.session(args.id)
        extent = _recorded_extent(store, args.id)
    finally:
        store.close()
    args.model = f"replay:{args.id}"
    args.resume = None
    options = session_options(args, record.task_folder if Path(record.task_folder).is_dir() else record.task)
    problem = replay_limits(record, extent, options.overrides)
    if problem:
        raise UserError(problem)
    import dataclasses

    # Same N, D and rules as the recorded session (unless given), so the same requests are made.
    settings = dataclasses.replace(record.settings, **options.overrides)  # type: ignore[arg-type]  # LoopSettings fields by name
    options = dataclasses.replace(options, loop=settings)
    try:
        return asyncio.run(run_headless(options, args.json))
    except KeyboardInterrupt:
        error("interrupted")
        return 130


def register(sub: argparse._SubParsersAction) -> None:
    from cuda_llm.app.cli.run_cmd import add_session_arguments

    p = sub.add_parser("sessions", help="list recorded sessions")
    p.add_argument("--db", help="sessions database (default: the user data folder)")
    p.add_argument("--limit", type=positive_int, default=50, help="show the newest N sessions (default 50)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=list_sessions)
    ssub = p.add_subparsers(dest="sessions_command", metavar="[rm | prune]")
    rm = ssub.add_parser("rm", help="remove sessions and everything recorded for them")
    rm.add_argument(
        "ids", nargs="+", type=session_id, metavar="ID", help="the sessions (`cuda-llm sessions` lists them)"
    )
    rm.add_argument("--db", help="sessions database (default: the user data folder)")
    rm.set_defaults(func=remove)
    pr = ssub.add_parser("prune", help="remove the sessions not written to for longer than an age")
    pr.add_argument("--older-than", required=True, type=age, metavar="AGE", help="e.g. 30d, 12h, 90m (days if no unit)")
    pr.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    pr.add_argument("--db", help="sessions database (default: the user data folder)")
    pr.set_defaults(func=prune)

    e = sub.add_parser("export", help="write a session's best kernel (.cu + plan.json) and its report")
    e.add_argument("id", type=session_id, help="the session (`cuda-llm sessions` lists them)")
    e.add_argument("--candidate", metavar="LABEL", help="export this candidate (e.g. r2-1) instead of the best")
    e.add_argument(
        "--out", help="folder to write (default: ./cuda-llm-session-ID); its files of an earlier export are replaced"
    )
    e.add_argument("--db", help="sessions database (default: the user data folder)")
    e.add_argument("--json", action="store_true", help="say what was written, as JSON")
    e.set_defaults(func=export)

    r = sub.add_parser("replay", help="re-judge a recorded session's replies here (no model needed)")
    r.add_argument("id", type=session_id)
    add_session_arguments(r)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=replay)
