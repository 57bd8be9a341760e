"""Safe integer expressions: the language of shapes, grids, scratch sizes and plan arguments.

Grammar: integers, names (task sizes and integer scalars), + - * // %, unary minus, parentheses,
and the functions min, max and cdiv (ceiling division). Parsed with `ast` into a tree that is
walked, never `eval`ed: a model's launch plan cannot run Python.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import lru_cache
from typing import cast

from cuda_llm.engine.core.errors import ExpressionError

# Long enough for any real launch plan; short enough that a pathological reply cannot make the
# parser do unbounded work.
MAX_EXPRESSION_CHARS = 400
# Values beyond int64 cannot be passed to a kernel and mean the expression is nonsense.
MAX_MAGNITUDE = 2**63 - 1

_FUNCTIONS = {"min", "max", "cdiv"}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}


def _check_tree(node: ast.AST, text: str) -> None:
    if isinstance(node, ast.Expression):
        _check_tree(node.body, text)
    elif isinstance(node, ast.Constant):
        if type(node.value) is not int:
            raise ExpressionError(f"{text!r}: only integer literals are allowed, not {node.value!r}")
    elif isinstance(node, ast.Name):
        pass
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            hint = " (use // for integer division, or cdiv(a, b))" if isinstance(node.op, ast.Div) else ""
            raise ExpressionError(f"{text!r}: operator not allowed{hint}; allowed: + - * // %")
        _check_tree(node.left, text)
        _check_tree(node.right, text)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.USub | ast.UAdd):
            raise ExpressionError(f"{text!r}: only unary minus is allowed")
        _check_tree(node.operand, text)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            raise ExpressionError(f"{text!r}: only min(), max() and cdiv() may be called")
        if node.keywords or not node.args:
            raise ExpressionError(f"{text!r}: {node.func.id}() takes positional arguments only")
        if node.func.id == "cdiv" and len(node.args) != 2:
            raise ExpressionError(f"{text!r}: cdiv(a, b) takes exactly two arguments")
        for arg in node.args:
            _check_tree(arg, text)
    else:
        raise ExpressionError(f"{text!r}: {type(node).__name__} is not allowed in an expression")


@lru_cache(maxsize=4096)
def parse(text: str) -> ast.Expression:
    """Parse and vet an expression; raise ExpressionError with a message fit for a model."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("empty expression")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"{text!r}: not a valid expression ({exc.msg})") from None
    except ValueError:  # a lone surrogate: the parser cannot even encode the text
        raise ExpressionError(f"{text!r}: not a valid expression (it contains a non-character)") from None
    _check_tree(tree, text)
    return tree


def names(text: str) -> set[str]:
    """The names an expression refers to (to check them against a task before any run)."""
    tree = parse(text)
    # The callee of min(...) is an ast.Name too, but a function, not a name the task must define.
    callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in callees}


def _eval(node: ast.AST, env: Mapping[str, int], text: str) -> int:
    if isinstance(node, ast.Constant):
        value = cast(int, node.value)  # parse() admits int constants only
    elif isinstance(node, ast.Name):
        if node.id not in env:
            known = ", ".join(sorted(env)) or "none"
            raise ExpressionError(f"{text!r}: unknown name {node.id!r} (known: {known})")
        value = env[node.id]
        if type(value) is not int:
            raise ExpressionError(f"{text!r}: {node.id!r} is not an integer")
    elif isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, env, text)
        value = -operand if isinstance(node.op, ast.USub) else operand
    elif isinstance(node, ast.BinOp):
        a = _eval(node.left, env, text)
        b = _eval(node.right, env, text)
        op = type(node.op)
        if op in (ast.FloorDiv, ast.Mod) and b == 0:
            raise ExpressionError(f"{text!r}: division by zero")
        if op is ast.Add:
            value = a + b
        elif op is ast.Sub:
            value = a - b
        elif op is ast.Mult:
            value = a * b
        elif op is ast.FloorDiv:
            value = a // b
        else:
            value = a % b
    elif isinstance(node, ast.Call):
        args = [_eval(arg, env, text) for arg in node.args]
        fname = node.func.id  # type: ignore[attr-defined]  # parse() admits calls of plain names only
        if fname == "min":
            value = min(args)
        elif fname == "max":
            value = max(args)
        else:
            if args[1] == 0:
                raise ExpressionError(f"{text!r}: cdiv by zero")
            value = -(-args[0] // args[1])
    else:  # pragma: no cover - parse() has vetted the tree
        raise ExpressionError(f"{text!r}: unsupported node")
    if abs(value) > MAX_MAGNITUDE:
        raise ExpressionError(f"{text!r}: value out of the int64 range")
    return value


def evaluate(text: str | int, env: Mapping[str, int]) -> int:
    """Evaluate an expression (or pass an int through) with the given integer names."""
    if type(text) is int:
        return text
    if not isinstance(text, str):
        raise ExpressionError(f"expected an integer or an expression string, got {text!r}")
    return _eval(parse(text).body, env, text)
