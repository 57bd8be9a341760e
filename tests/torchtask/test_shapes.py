"""Shapes as expressions of a module's constants (engine/torchtask/shapes.py): no PyTorch needed."""

from __future__ import annotations

import pytest

from cuda_llm.engine.task import expr
from cuda_llm.engine.torchtask.shapes import agrees, fit_dim, fit_shape, used_names


@pytest.mark.parametrize(
    ("formula", "base"),
    [
        (lambda v: 7, {"a": 16}),
        (lambda v: v["a"], {"a": 16}),
        (lambda v: 2 * v["a"] * v["b"], {"a": 16, "b": 64}),
        (lambda v: v["h"] - v["k"] + 1, {"h": 32, "k": 9}),
        (lambda v: v["h"] + 2 * v["k"] - 3, {"h": 32, "k": 9}),
    ],
)
def test_a_dimension_is_expressed_in_the_constants_that_move_it(formula, base):
    plus = {c: formula({**base, c: v + 1}) for c, v in base.items()}
    text = fit_dim(base, formula(base), plus)
    for point in ({"a": 5, "b": 3, "h": 17, "k": 2}, {"a": 1, "b": 1, "h": 40, "k": 1}):
        point = {c: point[c] for c in base}
        assert expr.evaluate(text, point) == formula(point), text


def test_a_shape_a_later_probe_contradicts_does_not_agree():
    # (h - k) // 2 + 1 looks linear from one step: the fit is checked at other points, not trusted.
    base = {"h": 32, "k": 3}
    formula = lambda v: (v["h"] - v["k"]) // 2 + 1  # noqa: E731
    plus = {c: [formula({**base, c: v + 1})] for c, v in base.items()}
    shape = fit_shape(base, [formula(base)], plus)
    point = {"h": 13, "k": 3}
    assert not agrees(shape, point, [formula(point)])
    assert agrees(shape, base, [formula(base)])


def test_the_sizes_are_the_names_the_shapes_use():
    assert used_names([("n", "3"), ("2 * a * b",)]) == {"n", "a", "b"}


def test_a_rank_change_never_agrees():
    assert not agrees(("n",), {"n": 4}, [4, 1])
