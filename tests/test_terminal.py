"""engine.terminal: what a model or a server writes cannot act on the terminal it is shown in."""

from __future__ import annotations

import pytest

from cuda_llm.app.terminal import has_controls, terminal_safe, without_controls


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # window title
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # clear screen, cursor home
        ("wrong\rcorrect", "wrong\\x0dcorrect"),  # a carriage return that overwrites a verdict
        ("\x9b31m", "\\x9b31m"),  # 8-bit CSI
        ("\x00\x7f", "\\x00\\x7f"),
        ("a\u202eb", "a\\u202eb"),  # right-to-left override
    ],
)
def test_controls_become_visible_escapes(raw, shown):
    assert terminal_safe(raw) == shown


def test_ordinary_text_is_unchanged():
    text = 'kernel.cu(3): error: expected a ";"\n\tx[i] = a[i] + b[i];  // µs, ≤, 日本'
    assert terminal_safe(text) == text


def test_controls_can_be_removed_where_the_layout_is_done():
    """The TUI removes them from lines already laid out: each is zero-width there."""
    from rich.cells import cell_len

    raw = "a\x1b]0;pwned\x07b\x9b2Jc\u202ed\x00e"
    assert has_controls(raw) and not has_controls(without_controls(raw))
    assert without_controls(raw) == "a]0;pwnedb2Jcde"
    assert cell_len(raw) == cell_len(without_controls(raw))
