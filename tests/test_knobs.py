"""The loop's knobs are declared once (engine/core/settings.py LOOP_KNOBS): the CLI's flags, the TUI's
config defaults and LoopSettings' checks all come from that declaration."""

from __future__ import annotations

import dataclasses

import pytest

from cuda_llm.app.cli.main import build_parser
from cuda_llm.app.cli.run_cmd import loop_overrides
from cuda_llm.app.config import AppConfig
from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.settings import LOOP_KNOBS, LoopSettings


def test_the_tui_config_starts_at_the_engine_defaults():
    config, engine = AppConfig(), LoopSettings()
    for knob in LOOP_KNOBS:
        assert getattr(config, knob.field) == (getattr(engine, knob.field) or 0), knob.field


def test_every_knob_is_a_flag_with_its_default_in_the_help():
    run = next(a.choices["run"] for a in build_parser()._actions if getattr(a, "choices", None) and "run" in a.choices)
    actions = {a.dest: a for a in run._actions}
    for knob in LOOP_KNOBS:
        action = actions[knob.field]
        assert knob.flag in action.option_strings and (knob.short is None or knob.short in action.option_strings)
        assert f"default {knob.default:g}" in action.help


def test_zero_means_never_where_the_knob_says_so():
    args = build_parser().parse_args(["run", "vector_add", "-N", "2", "-K", "0", "--target-roofline", "0"])
    assert loop_overrides(args) == {"candidates": 2, "patience": None, "target_roofline": None}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("candidates", 33, "--candidates must be between 1 and 32, got 33"),
        ("rounds", 0, "--rounds must be at least 1, got 0"),
        ("repairs", -1, "--repairs must not be negative, got -1"),
    ],
)
def test_the_ranges_are_the_declared_ones(field, value, message):
    with pytest.raises(UserError, match=message):
        dataclasses.replace(LoopSettings(), **{field: value}).validate()
