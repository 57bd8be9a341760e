"""A loop knob typed into a field of the TUI (the start screen, the settings dialog), read and checked
against the range engine/core/settings.py LOOP_KNOBS declares, so the TUI refuses what the CLI's
flags and LoopSettings.validate refuse, in the same words."""

from __future__ import annotations

from cuda_llm.engine.core.settings import KNOBS


def knob_value(text: str, field: str) -> int:
    """The whole number in `text` for the knob `field`; ValueError with one line, led by the knob's
    letter (N, D, R, K) as the screens name it, when it is not a whole number or out of range."""
    knob = KNOBS[field]
    name = knob.letter or knob.flag
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be a whole number") from None
    if knob.zero_is_never and value < 0:
        raise ValueError(f"{name} must not be negative (0: never)")
    problem = knob.problem(value)
    if problem:
        raise ValueError(f"{name} {problem}")
    return value
