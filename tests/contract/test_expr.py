"""engine.expr: the integer language of shapes, grids, scratch sizes and plan arguments."""

from __future__ import annotations

import re

import pytest

from cuda_llm.engine.core.errors import ExpressionError
from cuda_llm.engine.task import expr


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("10 - 4 - 3", 3),  # left-associative
        ("2 * 3 // 4", 1),  # (2 * 3) // 4, not 2 * (3 // 4)
        ("7 % 4 * 2", 6),
        ("-2 * 3", -6),
        ("--5", 5),
        ("+5", 5),
        ("1_000 + 0x10", 1016),
    ],
)
def test_precedence_and_literals(text: str, value: int) -> None:
    assert expr.evaluate(text, {}) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("cdiv(10, 3)", 4),
        ("cdiv(9, 3)", 3),
        ("cdiv(0, 5)", 0),
        ("cdiv(-7, 2)", -3),  # the ceiling of -3.5
        ("min(3, 1, 2)", 1),
        ("max(3, 1, 2)", 3),
        ("min(7)", 7),
        ("cdiv(n, 256) * 256", 1024),
        ("max(cdiv(n, 1024), 1)", 1),
    ],
)
def test_functions(text: str, value: int) -> None:
    assert expr.evaluate(text, {"n": 1000}) == value


@pytest.mark.parametrize(("text", "value"), [("-7 // 2", -4), ("7 // -2", -4), ("-7 % 2", 1)])
def test_floor_division_of_negatives_rounds_down(text: str, value: int) -> None:
    # Python's floor semantics, not C's truncation: the value a plan gets is documented as //.
    assert expr.evaluate(text, {}) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [("n // 0", "division by zero"), ("n % (n - n)", "division by zero"), ("cdiv(n, 0)", "cdiv by zero")],
)
def test_division_by_zero(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message):
        expr.evaluate(text, {"n": 4})


def test_names_are_the_variables_only() -> None:
    assert expr.names("cdiv(n, 256) * rows + min(k, max(n, 1))") == {"n", "rows", "k"}
    # A function name that is not called is a variable like any other.
    assert expr.names("min + 1") == {"min"}
    assert expr.names("42") == set()


def test_evaluate_uses_the_environment() -> None:
    assert expr.evaluate("rows * cols + k", {"rows": 3, "cols": 5, "k": -1}) == 14
    assert expr.evaluate(17, {}) == 17


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ExpressionError) as info:
        expr.evaluate("m * 2", {"n": 1, "rows": 2})
    assert "unknown name 'm'" in str(info.value)
    assert "n, rows" in str(info.value)


def test_a_name_bound_to_a_non_integer_is_refused() -> None:
    with pytest.raises(ExpressionError, match="not an integer"):
        expr.evaluate("n + 1", {"n": 1.5})  # type: ignore[dict-item]
    with pytest.raises(ExpressionError, match="not an integer"):
        expr.evaluate("n + 1", {"n": True})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("n.real", "Attribute is not allowed"),
        ("abs(n)", "only min(), max() and cdiv() may be called"),
        ("__import__('os')", "only min(), max() and cdiv() may be called"),
        ("n.bit_length()", "only min(), max() and cdiv() may be called"),
        ("n / 2", "use // for integer division"),
        ("2 ** 8", "operator not allowed"),
        ("n << 2", "operator not allowed"),
        ("1.5 * n", "only integer literals"),
        ("'a'", "only integer literals"),
        ("True", "only integer literals"),
        ("lambda: 1", "Lambda is not allowed"),
        ("n if n else 1", "IfExp is not allowed"),
        ("n < 3", "Compare is not allowed"),
        ("[n][0]", "Subscript is not allowed"),
        ("(n := 3)", "NamedExpr is not allowed"),
        ("min(n, key=1)", "positional arguments only"),
        ("min()", "positional arguments only"),
        ("cdiv(n)", "exactly two arguments"),
        ("cdiv(n, 2, 3)", "exactly two arguments"),
        ("~n", "only unary minus"),
        ("not n", "only unary minus"),
        ("", "empty expression"),
        ("   ", "empty expression"),
        ("n +", "not a valid expression"),
        ("n; n", "not a valid expression"),
        ("1\x00", "not a valid expression"),
        ("n\ud800", "not a valid expression"),
    ],
)
def test_rejected_constructs(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=re.escape(message)):
        expr.evaluate(text, {"n": 4})


def test_very_long_input_is_refused_before_parsing() -> None:
    text = "1+" * (expr.MAX_EXPRESSION_CHARS // 2) + "1"
    with pytest.raises(ExpressionError, match=f"longer than {expr.MAX_EXPRESSION_CHARS}"):
        expr.parse(text)


@pytest.mark.parametrize(("open_", "close"), [("(", ")"), ("min(", ")"), ("cdiv(", ", 1)")])
def test_deep_nesting_within_the_length_limit_evaluates(open_: str, close: str) -> None:
    depth = (expr.MAX_EXPRESSION_CHARS - 1) // (len(open_) + len(close))
    text = open_ * depth + "1" + close * depth
    assert len(text) <= expr.MAX_EXPRESSION_CHARS
    # The walk is recursive: the length limit must keep it far from Python's recursion limit.
    assert expr.evaluate(text, {}) == 1


def test_deep_unary_chain_within_the_length_limit_evaluates() -> None:
    text = "-" * (expr.MAX_EXPRESSION_CHARS - 1) + "1"
    assert expr.evaluate(text, {}) == (-1) ** (expr.MAX_EXPRESSION_CHARS - 1)


@pytest.mark.parametrize("text", ["9223372036854775807 + 1", "4294967296 * 4294967296", "-9223372036854775807 - 2"])
def test_values_beyond_int64_are_refused(text: str) -> None:
    with pytest.raises(ExpressionError, match="int64 range"):
        expr.evaluate(text, {})


def test_int64_extremes_are_fine() -> None:
    assert expr.evaluate("9223372036854775807", {}) == 2**63 - 1


@pytest.mark.parametrize("value", [1.5, None, True, ["n"]])
def test_evaluate_refuses_non_expressions(value: object) -> None:
    with pytest.raises(ExpressionError, match="expected an integer or an expression string"):
        expr.evaluate(value, {})  # type: ignore[arg-type]
