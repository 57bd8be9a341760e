"""bench/named_mutants.py breaks each check by replacing one piece of text: that text must be in its
file exactly once, or the mutant is "not applied" only when someone runs the script (the device ones
on a GPU, rarely). Checked here on every run instead, so an edit that moves a check says so at once."""

from __future__ import annotations

import pytest

from bench.named_mutants import MUTANTS, ROOT


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_every_named_mutant_applies_once(mutant):
    text = (ROOT / mutant.path).read_text()
    assert text.count(mutant.old) == 1, f"{mutant.path}: {mutant.old!r} occurs {text.count(mutant.old)} times"
    for test in mutant.tests:  # the tests named to kill it are there
        path, _, name = test.partition("::")
        assert (ROOT / path).is_file(), test
        assert not name or f"def {name.split('[')[0]}(" in (ROOT / path).read_text(), test
