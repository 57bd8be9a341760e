"""The `cuda-llm` console script: the TUI when no command is given, else the headless commands.

Kept tiny so `cuda-llm --help` imports neither Textual nor CUDA.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from engine.cli.main import dispatch, parse

    args = parse(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        from app.main import run_tui

        return run_tui(args)
    return dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
