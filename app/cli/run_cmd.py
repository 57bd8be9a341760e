"""`cuda-llm run TASK --model SPEC --headless`: the FSR loop without the TUI.

Ctrl-C stops cleanly: model requests in flight (and their retries) are cancelled, what is recorded
stays, and a second Ctrl-C exits at once; the session can be continued with `--resume ID`.
Exit codes: 0 finished or stopped, 3 paused (resumable), 130 stopped by Ctrl-C (resumable: the line
to continue is printed), 1 failed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from cuda_llm.app.cli.argtypes import (
    arch,
    base_url,
    gpu_list,
    knob_value,
    model_spec,
    non_negative_float,
    ollama_host,
    positive_float,
    positive_int,
    session_id,
)
from cuda_llm.app.cli.output import error, print_json, say_on_stderr
from cuda_llm.engine.core.settings import LOOP_KNOBS

if TYPE_CHECKING:
    from cuda_llm.engine.core.settings import LoopSettings
    from cuda_llm.engine.fsr.session import SessionOptions, SessionResult
    from cuda_llm.engine.llm.base import ModelProvider

# engine/core/settings.py's COUNTERS_MODES, spelled here so that --help imports no engine module.
COUNTERS_CHOICES = ("off", "best", "all")

EXIT_PAUSED = 3
# Stopped by Ctrl-C: 128 + SIGINT, what a shell reports for a program the signal ended.
EXIT_INTERRUPTED = 130


def add_session_arguments(p: argparse.ArgumentParser) -> None:
    """The options `run`, `bench` and the TUI share."""
    g = p.add_argument_group("model")
    g.add_argument("--model", type=model_spec, help="ollama:MODEL, openai:MODEL or replay:SESSION")
    g.add_argument("--host", type=ollama_host, help="ollama server (default: $OLLAMA_HOST or http://127.0.0.1:11434)")
    g.add_argument(
        "--base-url",
        type=base_url,
        help="OpenAI-compatible server (default: $OPENAI_BASE_URL); the key comes from $OPENAI_API_KEY only",
    )
    g.add_argument("--temperature", type=non_negative_float, help="sampling temperature (0 or more)")
    g.add_argument("--seed", type=int)
    g.add_argument("--num-ctx", type=positive_int, help="ollama context window")
    g.add_argument("--max-tokens", type=positive_int, help="cut a reply after this many tokens")
    loop = p.add_argument_group("loop")
    for spec in LOOP_KNOBS:  # N, D, R, K and the target, declared in engine/core/settings.py: ranges too
        names = [spec.flag, spec.short] if spec.short else [spec.flag]
        loop.add_argument(*names, type=knob_value(spec), help=spec.help_text())
    loop.add_argument("--token-budget", type=positive_int, help="stop after this many tokens")
    loop.add_argument("--time-budget", type=positive_float, help="stop after this many seconds")
    dev = p.add_argument_group("device")
    dev.add_argument("--compile-only", action="store_true", help="compile and bind only; no GPU")
    dev.add_argument("--arch", type=arch, help="compile for this arch when there is no GPU (default sm_90)")
    dev.add_argument(
        "--gpus",
        "--gpu",
        dest="gpu",
        metavar="LIST",
        type=gpu_list,
        help="GPUs to judge on, e.g. 0 or 0,1 (default: every GPU); with --cluster, a GPU model, e.g. H100",
    )
    dev.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="judge on every GPU of a Ray cluster: ray://HOST:10001, or auto on one of its nodes "
        '(needs the cluster extra: pip install ".[cluster]")',
    )
    dev.add_argument(
        "--counters",
        choices=COUNTERS_CHOICES,
        help="read hardware counters (Nsight Compute) of each round's best (default), of every correct "
        "candidate (all), or of none (off): what limits the kernel goes into the next prompt",
    )
    p.add_argument("--db", help="sessions database (default: the user data folder)")
    p.add_argument(
        "--switch-server",
        action="store_true",
        help="resume with a --host/--base-url other than the one the session was recorded with",
    )


def loop_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """LoopSettings fields the user gave explicitly."""
    out: dict[str, object] = {}
    plain = [(k.field, k.field) for k in LOOP_KNOBS if not k.zero_is_never]
    for name, field in (*plain, ("token_budget", "token_budget"), ("time_budget", "time_budget_s")):
        value = getattr(args, name, None)
        if value is not None:
            out[field] = value
    for knob in (k for k in LOOP_KNOBS if k.zero_is_never):  # 0: never
        if getattr(args, knob.field, None) is not None:
            out[knob.field] = getattr(args, knob.field) or None
    return out


def loop_settings(args: argparse.Namespace) -> LoopSettings:
    import dataclasses

    from cuda_llm.engine.core.settings import GenerateOptions, LoopSettings

    gen = GenerateOptions()
    gen_changes = {
        k: getattr(args, a)
        for a, k in (
            ("temperature", "temperature"),
            ("seed", "seed"),
            ("num_ctx", "num_ctx"),
            ("max_tokens", "max_tokens"),
        )
        if getattr(args, a, None) is not None
    }
    gen = dataclasses.replace(gen, **gen_changes)
    return dataclasses.replace(LoopSettings(), generate=gen, **loop_overrides(args))


def session_options(args: argparse.Namespace, task: str | None) -> SessionOptions:
    from cuda_llm.app.options import Defaults
    from cuda_llm.app.options import session_options as build

    where = Defaults(
        db=args.db,
        host=args.host,
        base_url=args.base_url,
        compile_only=args.compile_only,
        arch=args.arch,
        gpu=args.gpu,
        cluster=getattr(args, "cluster", None),
    )
    return build(
        where,
        task,
        args.model,
        loop_settings(args),
        resume=getattr(args, "resume", None),
        overrides=loop_overrides(args),
        switch_server=getattr(args, "switch_server", False),
        counters=getattr(args, "counters", None),
        torch_compile=getattr(args, "torch_compile", False),
    )


async def run_headless(options: SessionOptions, as_json: bool) -> int:
    from cuda_llm.app.cli.interrupt import ctrl_c_stops
    from cuda_llm.app.cli.progress import ProgressPrinter
    from cuda_llm.engine.fsr.control import Controller
    from cuda_llm.engine.fsr.session import open_session

    control = Controller(auto_accept=True, stop_when_paused=True)
    session = await open_session(options, control, progress=say_on_stderr)
    if session.env.notice:
        say_on_stderr(session.env.notice)
    session.bus.subscribe(ProgressPrinter(sys.stderr))
    interrupted = quit_at_once = False
    running = asyncio.ensure_future(session.run())

    def stop_on_ctrl_c() -> None:
        nonlocal interrupted
        interrupted = True
        control.stop()

    def quit_on_ctrl_c() -> None:
        # The second Ctrl-C: what is in flight (a compile, a timing) is abandoned, not waited for;
        # the person is still told where the session stands and how to continue it. Once the
        # session has returned, only its close and its last lines are left: they are not cut short.
        nonlocal quit_at_once
        quit_at_once = True
        running.cancel()

    # The presses are taken until the last line is printed: a second Ctrl-C a moment after the first
    # (the session ending meanwhile) fell to Python's own handler and lost the lines that continue it.
    with ctrl_c_stops(stop_on_ctrl_c, quit_on_ctrl_c):
        try:
            result = await running
        except asyncio.CancelledError:
            if not quit_at_once:
                raise
            print(f"session {session.id}: stopped at once (Ctrl-C twice); what was judged is recorded")
            print(continue_line(session.id, options.db, session.provider, options.cluster))
            return EXIT_INTERRUPTED
        finally:
            await session.close()
        return _session_end(result, options, session.provider, as_json, interrupted)


def _session_end(
    result: SessionResult, options: SessionOptions, provider: ModelProvider, as_json: bool, interrupted: bool
) -> int:
    """Print how a headless session ended; its exit code."""
    if as_json:
        from cuda_llm.app.cli.report import session_report
        from cuda_llm.engine.store.sessions import SessionStore

        store = SessionStore(options.db)
        try:
            print_json(session_report(store, result.session_id))
        finally:
            store.close()
    else:
        print(f"session {result.session_id}: {result.status} ({result.reason})")
        if result.status == "paused" or (interrupted and result.status == "stopped"):
            print(continue_line(result.session_id, options.db, provider, options.cluster))
    if interrupted and result.status != "finished":
        return EXIT_INTERRUPTED  # as a shell reports a program Ctrl-C ended: a script sees it did not finish
    return {"finished": 0, "stopped": 0, "paused": EXIT_PAUSED}.get(result.status, 1)


def continue_line(session_id: int, db: str | None, provider: ModelProvider, cluster: str | None = None) -> str:
    """What to do about a paused session. A replay that ran out of recorded replies cannot go on as
    a replay (resuming would ask the same recording again): it goes on with a model, or not at all.
    Either way on the Ray cluster it judged on, if it judged on one."""
    import shlex

    from cuda_llm.engine.llm.spec import spec_of

    spec = spec_of(provider)
    if not spec.backend.replays:
        return "continue with: " + resume_command(session_id, db, provider, cluster)
    model = _replayed_model(spec.name, db)
    words = ["cuda-llm", "run", "--resume", str(session_id), "--headless", "--model", model or "ollama:MODEL"]
    if db:
        words += ["--db", db]
    if cluster:
        words += ["--cluster", cluster]
    return (
        "a replay repeats the recorded requests only, and this one asked for a reply the recording does not "
        f"have; to go on with a model instead: {shlex.join(words)}"
    )


def _replayed_model(source: str, db: str | None) -> str | None:
    """The model of the session a replay plays back (None if it cannot be read)."""
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.store.sessions import SessionStore

    try:
        store = SessionStore(db, read_only=True)
        try:
            model = store.session(int(source)).model
        finally:
            store.close()
    except (UserError, ValueError):
        return None
    from cuda_llm.engine.llm.spec import parse_spec

    return None if parse_spec(model).backend.replays else model


def resume_command(session_id: int, db: str | None, provider: ModelProvider, cluster: str | None = None) -> str:
    """The command that continues a session where it stopped: its database, its model server, the
    Ray cluster it judged on."""
    import shlex

    from cuda_llm.engine.llm.spec import server_of, spec_of

    words = ["cuda-llm", "run", "--resume", str(session_id), "--headless"]
    if db:
        words += ["--db", db]
    if cluster:
        words += ["--cluster", cluster]
    server = server_of(provider)
    if server:
        words += [spec_of(provider).backend.server_flag() or "--host", server]
    return shlex.join(words)


def argument_problem(args: argparse.Namespace) -> str | None:
    """What the options of `run`, `bench`, `replay` or the TUI contradict, found with the parser's
    checks (before any work): GPU model names without a cluster, a task beside --resume."""
    gpu = getattr(args, "gpu", None)
    if gpu and gpu != "all" and not getattr(args, "cluster", None) and not all(w.isdigit() for w in gpu.split(",")):
        return (
            f"argument --gpus: {gpu!r} names a GPU model, which only --cluster takes; "
            "on this machine name GPUs by number, e.g. 0 or 0,1"
        )
    task, resume = getattr(args, "task", None), getattr(args, "resume", None)
    if task and resume is not None:
        return (
            f"--resume {resume} goes on with the session's own task: drop {task!r}, "
            "or drop --resume to start a new session"
        )
    return None


def missing_to_run(task: str | None, model: str | None, resume: int | None) -> str | None:
    """What `run` lacks to start a session, as the one line a user reads (the TUI's and the headless
    run's alike); None when it has a task and a model, or a session to resume."""
    if resume is not None or (task and model):
        return None
    if not model and task:
        from cuda_llm.engine.llm.spec import spec_help

        return f"run needs --model SPEC ({spec_help()}), or --resume ID"
    also = "" if model else " and --model SPEC"
    return f"run needs TASK{also} (or --resume ID); `cuda-llm tasks` lists the tasks"


def run(args: argparse.Namespace) -> int:
    missing = missing_to_run(args.task, args.model, args.resume)
    if missing is not None:
        error(missing)
        return 2
    options = session_options(args, args.task)
    return asyncio.run(run_headless(options, args.json))


def register(sub: argparse._SubParsersAction) -> None:
    from cuda_llm.app.cli.torch_compile_flag import add_torch_compile_flag

    p = sub.add_parser("run", help="run the FSR loop on a task (the TUI's run screen, or --headless)")
    p.add_argument("task", nargs="?", help="task name or folder")
    add_session_arguments(p)
    p.add_argument("--resume", type=session_id, metavar="ID", help="continue a recorded session")
    p.add_argument("--headless", action="store_true", help="no TUI: progress lines on stderr")
    add_torch_compile_flag(p)
    p.add_argument("--json", action="store_true", help="print the session report as JSON at the end")
    p.set_defaults(func=run)
