"""describe(exc): the one line a person sees for an exception, everywhere one is shown."""

from __future__ import annotations

import pytest

from cuda_llm.engine.core.errors import FormatError, UserError, describe


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (UserError("no such task 'x'; `cuda-llm tasks` lists them"), "no such task 'x'; `cuda-llm tasks` lists them"),
        (FormatError("the plan is not JSON:\n  line 3: ..."), "the plan is not JSON:"),
        (KeyError("block"), "KeyError: 'block'"),
        (
            RuntimeError("\x1b[31mthe actor died\x1b[0m\nTraceback (most recent call last):"),
            "RuntimeError: the actor died",
        ),
        (RuntimeError(""), "RuntimeError"),
        (UserError("   "), "UserError"),
    ],
)
def test_one_line(exc, line):
    assert describe(exc) == line
    assert "\n" not in describe(exc)
