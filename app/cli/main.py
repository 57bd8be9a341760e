"""The `cuda-llm` command line: argument parsing and dispatch to the headless commands.

With no command, `app.launcher` opens the TUI; this module never imports it.

Whatever a user types, the answer is one line: a mistyped command or option gets a suggestion, an
error a user can fix (a UserError, a file that cannot be read or written) is one line and exit code 2
(1 for a file the system refused), and output cut short by the reader (`cuda-llm tasks | head -1`)
ends quietly.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from cuda_llm.app.cli import bench_cmd, doctor_cmd, eval_cmd, run_cmd, sessions_cmd, tasks_cmd
from cuda_llm.engine import __version__

DESCRIPTION = """\
A language model writes CUDA kernels; the GPU proves them right and fast.
With no command, cuda-llm opens the terminal UI."""

# The exit status of a command whose reader went away: what a shell reports for a process SIGPIPE
# ended (128 + 13), as `git log | head -1` gives.
EXIT_BROKEN_PIPE = 141
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)'")


def _suggestion(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


class CliParser(argparse.ArgumentParser):
    """argparse with one-line errors that suggest the closest command or option."""

    def error(self, message: str) -> NoReturn:
        found = _INVALID_CHOICE.search(message)
        if found:
            choices = [str(c) for a in self._actions if a.choices for c in a.choices]
            word = found.group(1)
            message = f"{word!r} is not one of: {', '.join(choices)}{_suggestion(word, choices)}"
        with quiet_broken_pipe():
            sys.stderr.write(f"{self.prog}: {message}; `{self.prog} --help` shows the usage\n")
        raise SystemExit(2)

    def _get_value(self, action: argparse.Action, arg_string: str) -> object:
        # An empty word (`""`, `--dir ""`) is never meant: read as a path it is the current folder
        # ("." is a folder...), as a name it silently means the default. (A command's parser checks
        # its own words: the command list's action is handed them all.)
        if not arg_string.strip() and not isinstance(action, argparse._SubParsersAction):
            raise argparse.ArgumentError(action, f"{arg_string!r} is empty: give a value")
        return super()._get_value(action, arg_string)

    def option_strings(self) -> list[str]:
        return [s for a in self._actions for s in a.option_strings]


def build_parser() -> CliParser:
    parser = CliParser(prog="cuda-llm", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"cuda-llm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    tasks_cmd.register(sub)
    eval_cmd.register(sub)
    run_cmd.register(sub)
    sessions_cmd.register(sub)
    bench_cmd.register(sub)
    doctor_cmd.register(sub)
    return parser


def _command_parser(parser: CliParser, args: argparse.Namespace) -> CliParser:
    """The parser of the command that was given (and of its subcommand, as for `tasks new`)."""
    current = parser
    for dest in ("command", "tasks_command", "sessions_command"):
        name = getattr(args, dest, None)
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        if not name or not subs or name not in subs[0].choices:
            break
        current = subs[0].choices[name]
    return current


def parse(argv: list[str]) -> argparse.Namespace:
    parser = build_parser()
    with quiet_broken_pipe():  # --help into a closed pipe
        args, extra = parser.parse_known_args(argv)
    if extra:
        owner = _command_parser(parser, args)
        hints = "".join(_suggestion(word.split("=", 1)[0], owner.option_strings()) for word in extra[:1])
        owner.error(f"unrecognized arguments: {' '.join(extra)}{hints}")
    from cuda_llm.app.cli.run_cmd import argument_problem

    problem = argument_problem(args)
    if problem is not None:
        _command_parser(parser, args).error(problem)
    args.argv = list(argv)  # the command line as given, for the records that say how to reproduce a run
    return args


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush finds no closed pipe either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())  # type: ignore[union-attr]  # no stdout: AttributeError, caught
    except (OSError, AttributeError, ValueError):
        pass


@contextmanager
def quiet_broken_pipe() -> Iterator[None]:
    """The reader of our output went away (`| head -1`): stop quietly, as other command-line tools do."""
    try:
        yield
    except BrokenPipeError:
        _silence_stdout()
        raise SystemExit(EXIT_BROKEN_PIPE) from None


def dispatch(args: argparse.Namespace) -> int:
    from cuda_llm.app.cli.output import error, terminal_safe_output
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.llm.addresses import check_environment

    with quiet_broken_pipe(), terminal_safe_output():
        try:
            if args.command != "doctor":  # doctor reports a bad variable among its checks
                check_environment()
            code = int(args.func(args) or 0)
            sys.stdout.flush()
            return code
        except UserError as exc:
            error(str(exc))
            return 2
        except KeyboardInterrupt:
            error("interrupted")
            return 130
        except BrokenPipeError:
            raise
        except OSError as exc:
            # A file or folder the system refused where no command expected it (a full disk, a
            # read-only folder): the reason and the path, not a traceback.
            where = f": {exc.filename}" if exc.filename else ""
            error(f"{exc.strerror or exc}{where}")
            return 1


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        build_parser().print_help()
        return 0
    return dispatch(args)
