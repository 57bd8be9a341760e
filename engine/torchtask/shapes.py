"""Shapes as expressions of a module's size constants, found from a few probes.

The child process runs the module on the meta device at the file's constants and at each
constant + 1; a dimension is then a literal, a product of constants times an integer, or an
integer-linear function of them (`h - k + 1`). Every fit is checked against further probes
(the smaller sizes): a size case whose shapes disagree with the fits is dropped, never guessed.
Pure Python: CI tests it without PyTorch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Point = Mapping[str, int]


def _term(coef: int, names: Sequence[str]) -> str:
    body = " * ".join(names)
    if not names:
        return str(coef)
    return body if coef == 1 else f"{coef} * {body}"


def fit_dim(base: Point, at_base: int, plus_one: Mapping[str, int]) -> str:
    """The expression of one dimension: `at_base` is its value at `base`, `plus_one[c]` its value
    with constant c raised by one (constants missing from `plus_one` could not be probed and are
    taken not to affect it)."""
    deltas = {c: plus_one[c] - at_base for c in plus_one if plus_one[c] != at_base}
    if not deltas:
        return str(at_base)
    names = sorted(deltas)
    prod = 1
    for c in names:
        prod *= base[c]
    # A product k * a * b: raising a by one adds k * b.
    if prod and at_base % prod == 0:
        k = at_base // prod
        if all(deltas[c] == k * prod // base[c] for c in names):
            return _term(k, names)
    # Linear: a0 + sum(d_c * c).
    a0 = at_base - sum(deltas[c] * base[c] for c in names)
    text = ""
    for c in names:
        d = deltas[c]
        sign = "-" if d < 0 else "+"
        term = _term(abs(d), [c])
        text = f"{text} {sign} {term}" if text else (term if d > 0 else f"0 - {term}")
    if a0:
        text += f" {'+' if a0 > 0 else '-'} {abs(a0)}"
    return text


def fit_shape(base: Point, at_base: Sequence[int], plus_one: Mapping[str, Sequence[int]]) -> tuple[str, ...]:
    """Each dimension's expression; `plus_one[c]` is the whole shape with constant c raised by one
    (a probe that changed the rank is left out by the caller)."""
    return tuple(fit_dim(base, d, {c: shape[i] for c, shape in plus_one.items()}) for i, d in enumerate(at_base))


def used_names(shapes: Sequence[Sequence[str]]) -> set[str]:
    from cuda_llm.engine.task import expr

    out: set[str] = set()
    for shape in shapes:
        for dim in shape:
            out |= expr.names(dim)
    return out


def agrees(shape: Sequence[str], point: Point, actual: Sequence[int]) -> bool:
    """Whether the fitted shape gives `actual` at `point`."""
    from cuda_llm.engine.task import expr

    if len(shape) != len(actual):
        return False
    try:
        return all(expr.evaluate(dim, dict(point)) == a for dim, a in zip(shape, actual, strict=True))
    except Exception:
        return False
