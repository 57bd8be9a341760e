"""The TUI's own command line (`cuda-llm [options]` with no command). No Textual import here:
`cuda-llm --help` must stay fast and work without a terminal."""

from __future__ import annotations

import argparse

from cuda_llm.app.cli.run_cmd import add_session_arguments

TUI_DESCRIPTION = """\
The terminal UI. Options set the defaults of the start screen and where sessions run; the
start screen's choices (task, model, N, D, theme) are remembered in the config file."""


# The title of the TUI's own options in `cuda-llm --help`, which already has an "options:" section
# (the commands' -h and --version).
TUI_OPTIONS_TITLE = "terminal UI options"


def tui_parser(add_help: bool = True) -> argparse.ArgumentParser:
    from cuda_llm.app.cli.main import CliParser

    p = CliParser(prog="cuda-llm", description=TUI_DESCRIPTION, add_help=add_help)
    p._optionals.title = TUI_OPTIONS_TITLE
    add_session_arguments(p)
    p.add_argument("--config", help="the TUI config file (default: tui.toml in the user config folder)")
    p.set_defaults(command=None, task=None, resume=None)
    return p


def parse_tui(argv: list[str]) -> argparse.Namespace:
    """The TUI's options, checked as the commands' are: a usage error is one line before the UI starts."""
    from pathlib import Path

    from cuda_llm.app.cli.run_cmd import argument_problem

    parser = tui_parser()
    args = parser.parse_args(argv)
    problem = argument_problem(args)
    if problem is None and args.config and not Path(args.config).is_file():
        what = "a folder, not a file" if Path(args.config).is_dir() else "no such file"
        problem = f"--config {args.config}: {what} (without --config the TUI uses tui.toml in the user config folder)"
    if problem is not None:
        parser.error(problem)
    return args


def tui_options_help() -> str:
    """The TUI's options, to follow the commands in `cuda-llm --help`."""
    text = tui_parser(add_help=False).format_help()
    _, _, options = text.partition("\n\n")
    return "with no command (the terminal UI), these options apply:\n\n" + options.partition("\n\n")[2]
