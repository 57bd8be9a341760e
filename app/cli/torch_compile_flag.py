"""`--torch-compile` on eval, run and bench: torch.compile as a second figure beside PyTorch eager for
a task imported from a PyTorch module (ProfileSettings.torch_compile; off by default, because the
compile takes seconds to minutes before the first figure)."""

from __future__ import annotations

import argparse
import dataclasses

from cuda_llm.engine.core.settings import Settings

HELP = (
    "for a task imported from a PyTorch module, also compile it with torch.compile and time it beside "
    "eager: speedups then read 'x eager, x torch.compile' (compiling takes seconds to minutes, once per "
    "task; a compile that fails or runs out of time is one line, and the run goes on without it)"
)


def add_torch_compile_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--torch-compile", action="store_true", help=HELP)


def with_torch_compile(settings: Settings, on: bool) -> Settings:
    """`settings` with torch.compile's figure turned on when the flag asked for it."""
    if not on:
        return settings
    return dataclasses.replace(settings, profile=dataclasses.replace(settings.profile, torch_compile=True))
