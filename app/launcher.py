"""The `cuda-llm` console script: the TUI when no command is given, else the headless commands.

Kept tiny so `cuda-llm --help` imports neither Textual nor CUDA.
"""

from __future__ import annotations

import sys

_HELP = ("-h", "--help")


def main(argv: list[str] | None = None) -> int:
    from cuda_llm.app.cli.main import build_parser, dispatch, parse, quiet_broken_pipe

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in _HELP:
        from cuda_llm.app.tui_args import tui_options_help

        with quiet_broken_pipe():  # `cuda-llm --help | head -1`
            build_parser().print_help()
            print("\n" + tui_options_help(), flush=True)
        return 0
    if not argv or (argv[0].startswith("-") and argv[0] != "--version"):
        from cuda_llm.app.main import run_tui
        from cuda_llm.app.tui_args import parse_tui

        return run_tui(parse_tui(argv))
    args = parse(argv)
    if args.command == "run" and not args.headless:
        from cuda_llm.app.main import run_tui

        return run_tui(args)
    from cuda_llm.engine.llm.spec import person_writes

    if args.command == "run" and person_writes(args.model):
        from cuda_llm.app.cli.output import error

        error("--model manual needs the terminal UI (drop --headless): a person writes each kernel there")
        return 2
    return dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
