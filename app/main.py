"""`cuda-llm` with no command (or `cuda-llm run` without --headless): the terminal UI."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Variables that pin a terminal size: Textual (through shutil.get_terminal_size) believes them over
# the terminal itself, so a program started with them exported would never follow a resize.
SIZE_VARIABLES = ("COLUMNS", "LINES")


def follow_the_terminal() -> None:
    """In a real terminal its own size is the truth: drop exported COLUMNS/LINES (a shell, a
    script or a test runner may have frozen them at some size) so every resize is seen."""
    stream = sys.__stdout__
    if stream is not None and stream.isatty():
        for name in SIZE_VARIABLES:
            os.environ.pop(name, None)


def terminal_missing() -> str | None:
    """Which of standard input and output is not a terminal (the UI needs both: it reads keys and
    draws with escape codes), or None."""
    for name, stream in (("input", sys.__stdin__), ("output", sys.__stdout__)):
        if stream is None or not stream.isatty():
            return name
    return None


def refusal(args: argparse.Namespace) -> str | None:
    """Why the UI cannot start for these arguments, as one line, before anything is built: no
    terminal (started from a script, `cuda-llm </dev/null >file`), a `run` without a task or a model,
    or a task that cannot be loaded."""
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.llm.addresses import check_environment

    try:
        check_environment()
    except UserError as exc:
        return str(exc)
    missing = terminal_missing()
    if missing is not None:
        return (
            f"the terminal UI needs a terminal, and standard {missing} is not one; in a script use "
            "`cuda-llm run TASK --model SPEC --headless` (`cuda-llm --help` lists the commands)"
        )
    task = getattr(args, "task", None)
    if getattr(args, "command", None) == "run":
        from cuda_llm.app.cli.run_cmd import missing_to_run

        missing = missing_to_run(task, args.model, args.resume)
        if missing is not None:
            return missing
    if getattr(args, "command", None) == "run" and task:
        from cuda_llm.engine.core.errors import UserError
        from cuda_llm.engine.task import TaskLibrary

        try:
            TaskLibrary().get(task)
        except UserError as exc:
            return str(exc)
    return None


def run_tui(args: argparse.Namespace) -> int:
    problem = refusal(args)
    if problem is not None:
        print(f"cuda-llm: {problem}", file=sys.stderr)
        return 2
    from cuda_llm.app.app import CudaLlmApp
    from cuda_llm.app.cli.run_cmd import loop_overrides, loop_settings, session_options
    from cuda_llm.app.options import Defaults, SessionRequest

    defaults = Defaults(
        db=args.db,
        host=args.host,
        base_url=args.base_url,
        compile_only=args.compile_only,
        arch=args.arch,
        gpu=args.gpu,
        cluster=args.cluster,
        loop=loop_settings(args),
    )
    overrides = {
        k: v for k, v in loop_overrides(args).items() if k in ("candidates", "rounds", "repairs") and v is not None
    }
    # The start screen's patience and roofline fields say "0: never" where the loop says None.
    for name in ("patience", "target_roofline"):
        if getattr(args, name, None) is not None:
            overrides[name] = getattr(args, name)
    if args.model:
        overrides["model"] = args.model
    start = None
    if getattr(args, "command", None) == "run":
        start = SessionRequest(session_options(args, args.task))
    config = Path(args.config) if getattr(args, "config", None) else None
    follow_the_terminal()
    app = CudaLlmApp(defaults, start, config_path=config, config_overrides=overrides)
    if start is not None:
        # The run screen starts with auto-accept as remembered (the TUI's point is to review).
        start = SessionRequest(start.options, app.config.auto_accept)
        app.start_request = start
    app.run()
    # Every way out (q, Ctrl+C, Ctrl+Q, F10, a crash) leaves the session's id, state and resume command.
    line = app.quit_line()
    if line:
        print(line)
    sessions = app.running_sessions
    for session_id in sessions.crashed_sessions:
        print(
            f"cuda-llm: session {session_id} was recorded as stopped (crashed: {sessions.crash}); "
            f"`cuda-llm run --resume {session_id}` continues it",
            file=sys.stderr,
        )
    return app.return_code or 0
