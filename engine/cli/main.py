"""The `cuda-llm` command line: argument parsing and dispatch to the headless commands.

With no command, `app.launcher` opens the TUI; this module never imports it.
"""

from __future__ import annotations

import argparse
import sys

from cuda_llm.engine import __version__
from cuda_llm.engine.cli import bench_cmd, doctor_cmd, eval_cmd, run_cmd, sessions_cmd, tasks_cmd

DESCRIPTION = """\
A language model writes CUDA kernels; the GPU proves them right and fast.
With no command, cuda-llm opens the terminal UI."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cuda-llm", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"cuda-llm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    tasks_cmd.register(sub)
    eval_cmd.register(sub)
    run_cmd.register(sub)
    sessions_cmd.register(sub)
    bench_cmd.register(sub)
    doctor_cmd.register(sub)
    return parser


def parse(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def dispatch(args: argparse.Namespace) -> int:
    from cuda_llm.engine.cli.output import error, terminal_safe_output
    from cuda_llm.engine.errors import UserError

    with terminal_safe_output():
        try:
            return int(args.func(args) or 0)
        except UserError as exc:
            error(str(exc))
            return 2
        except KeyboardInterrupt:
            error("interrupted")
            return 130


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        build_parser().print_help()
        return 0
    return dispatch(args)
