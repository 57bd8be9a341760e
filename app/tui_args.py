"""The TUI's own command line (`cuda-llm [options]` with no command). No Textual import here:
`cuda-llm --help` must stay fast and work without a terminal."""

from __future__ import annotations

import argparse

from cuda_llm.app.cli.run_cmd import add_session_arguments

TUI_DESCRIPTION = """\
The terminal UI. Options set the defaults of the start screen and where sessions run; the
start screen's choices (task, model, N, D, theme) are remembered in the config file."""


def tui_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cuda-llm", description=TUI_DESCRIPTION)
    add_session_arguments(p)
    p.add_argument("--config", help="the TUI config file (default: tui.toml in the user config folder)")
    p.set_defaults(command=None, task=None, resume=None)
    return p


def parse_tui(argv: list[str]) -> argparse.Namespace:
    return tui_parser().parse_args(argv)


def tui_options_help() -> str:
    """The TUI's options, to follow the commands in `cuda-llm --help`."""
    text = tui_parser().format_help()
    _, _, options = text.partition("\n\n")
    return "with no command (the terminal UI), these options apply:\n\n" + options.partition("\n\n")[2]
