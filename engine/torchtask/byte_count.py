"""The bytes an imported task's buffers move, as one short expression of its sizes.

Written term by term (itemsize times each buffer's shape), a whole model's count is hundreds of
terms (VGG16 has 32 parameters) and passes the expression length limit. Multiplied out and
collected it is a polynomial with a few terms: every fixed-shape parameter folds into one
number, every buffer of shape batch x 1000 into one coefficient of batch. Pure Python.
"""

from __future__ import annotations

import ast
import math
from collections import Counter
from collections.abc import Iterable, Sequence

Monomial = tuple[str, ...]  # the names multiplied, sorted (a name repeated for a power)
Polynomial = dict[Monomial, int]


def _add(a: Polynomial, b: Polynomial, sign: int = 1) -> Polynomial:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + sign * c
    return {m: c for m, c in out.items() if c}


def _mul(a: Polynomial, b: Polynomial) -> Polynomial:
    out: Polynomial = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0) + ca * cb
    return {m: c for m, c in out.items() if c}


def _poly(node: ast.AST) -> Polynomial:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {(): node.value} if node.value else {}
    if isinstance(node, ast.Name):
        return {(node.id,): 1}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _add({}, _poly(node.operand), -1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        left, right = _poly(node.left), _poly(node.right)
        if isinstance(node.op, ast.Mult):
            return _mul(left, right)
        return _add(left, right, 1 if isinstance(node.op, ast.Add) else -1)
    # Anything else (min, cdiv, //) is kept whole, as one factor.
    return {(f"({ast.unparse(node)})",): 1}


def polynomial(text: str) -> Polynomial:
    return _poly(ast.parse(text, mode="eval").body)


def render(p: Polynomial) -> str:
    """Highest degree first (positive terms first within one), the constant last: `4000 * batch + 5532`."""
    if not p:
        return "0"
    text = ""
    for m in sorted(p, key=lambda m: (-len(m), p[m] < 0, m)):
        c = p[m]
        body = " * ".join(m)
        term = body if abs(c) == 1 and body else f"{abs(c)} * {body}" if body else str(abs(c))
        if not text:
            text = term if c > 0 else f"0 - {term}"
        else:
            text += f" {'+' if c > 0 else '-'} {term}"
    return text


def factored(p: Polynomial) -> str:
    """`p` with common factors taken out, greedily: the integer GCD, then the name most terms share
    (`4 * (batch * h * w * (c_in + c_out) + 9 * c_in * c_out)`). Shorter where many terms share."""
    if len(p) <= 1:
        return render(p)
    g = 0
    for c in p.values():
        g = math.gcd(g, c)
    if g > 1:
        return f"{g} * ({factored({m: c // g for m, c in p.items()})})"
    counts = Counter(n for m in p for n in set(m))
    if not counts or counts.most_common(1)[0][1] < 2:
        return render(p)
    name = min(counts, key=lambda n: (-counts[n], n))
    inner: Polynomial = {}
    rest: Polynomial = {}
    for m, c in p.items():
        if name in m:
            i = m.index(name)
            inner[m[:i] + m[i + 1 :]] = c
        else:
            rest[m] = c
    body = factored(inner)
    text = f"{name} * ({body})" if len(inner) > 1 else f"{name} * {body}" if body != "1" else name
    return f"{text} + {factored(rest)}" if rest else text


def byte_count(tensors: Iterable[tuple[int, Sequence[str]]], limit: int | None = None) -> str:
    """The sum over (itemsize, shape) of itemsize times the shape's elements, collected; factored
    where the collected sum is longer than `limit` characters."""
    total: Polynomial = {}
    for itemsize, shape in tensors:
        term: Polynomial = {(): itemsize}
        for dim in shape:
            term = _mul(term, polynomial(dim))
        total = _add(total, term)
    text = render(total)
    return factored(total) if limit is not None and len(text) > limit else text
