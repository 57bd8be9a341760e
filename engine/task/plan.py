"""Launch plans: the JSON a reply carries, parsed into typed dataclasses, and their bound form.

Parsing checks structure only (fields, types, expression syntax). Whether names exist in the task
and arguments fit the kernel signatures is `engine.contract.binding`'s job.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from cuda_llm.engine.core.errors import ExpressionError, FormatError
from cuda_llm.engine.task import expr
from cuda_llm.engine.task.dtypes import DTYPES

IntType = Literal["int32", "int64"]
ArgKind = Literal["buffer", "scratch", "scalar", "expr"]
# What a kernel parameter receives: a device pointer or a scalar of one of these types.
ParamType = Literal["ptr", "int32", "uint32", "int64", "uint64", "float32", "float64"]

MAX_LAUNCHES = 16  # more launches than any sensible plan; bounds the work one reply can ask for
MAX_SCRATCH = 16
MAX_ARGS = 64

_INT_LITERAL = re.compile(r"-?[0-9]+")


@dataclass(frozen=True)
class ScratchBuffer:
    name: str
    dtype: str
    count: str  # element count, an integer expression of the task's sizes


@dataclass(frozen=True)
class PlanArg:
    """One argument as the plan spells it; resolved to a buffer, scratch, scalar or expression
    when it is bound to a task."""

    text: str
    int_type: IntType | None = None  # set when written {"expr": ..., "type": ...}


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: tuple[str, ...]
    block: tuple[str, ...]
    shared_bytes: str
    args: tuple[PlanArg, ...]


@dataclass(frozen=True)
class LaunchPlan:
    scratch: tuple[ScratchBuffer, ...]
    launches: tuple[Launch, ...]

    def to_json(self) -> dict[str, Any]:
        def arg(a: PlanArg) -> Any:
            return {"expr": a.text, "type": a.int_type} if a.int_type else a.text

        def num(t: str) -> Any:
            # Only a plain literal becomes a JSON number ("--1" is an expression, not an int).
            return int(t) if _INT_LITERAL.fullmatch(t) else t

        return {
            "scratch": [{"name": s.name, "dtype": s.dtype, "count": num(s.count)} for s in self.scratch],
            "launches": [
                {
                    "kernel": la.kernel,
                    "grid": [num(g) for g in la.grid],
                    "block": [num(b) for b in la.block],
                    "shared_bytes": num(la.shared_bytes),
                    "args": [arg(a) for a in la.args],
                }
                for la in self.launches
            ],
        }


@dataclass(frozen=True)
class BoundArg:
    kind: ArgKind
    ref: str  # buffer/scratch/scalar name, or the expression text
    param_type: ParamType  # how the kernel receives it (from its signature)


@dataclass(frozen=True)
class BoundLaunch:
    kernel: str
    grid: tuple[str, str, str]
    block: tuple[str, str, str]
    shared_bytes: str
    args: tuple[BoundArg, ...]


@dataclass(frozen=True)
class BoundPlan:
    """A plan checked against a task and the kernels' signatures: all the GPU worker needs."""

    scratch: tuple[ScratchBuffer, ...]
    launches: tuple[BoundLaunch, ...]


def _expr_text(value: Any, where: str) -> str:
    if type(value) is int:
        return str(value)
    if isinstance(value, str):
        try:
            expr.parse(value)
        except ExpressionError as exc:
            raise FormatError(f"launch plan: {where}: {exc}") from None
        return value.strip()
    raise FormatError(f"launch plan: {where} must be an integer or an expression string, got {value!r}")


def _dims(value: Any, where: str) -> tuple[str, ...]:
    if type(value) is int or isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not 1 <= len(value) <= 3:
        raise FormatError(f'launch plan: {where} must be a list of 1 to 3 sizes, e.g. ["cdiv(n, 256)"]')
    return tuple(_expr_text(v, f"{where}[{i}]") for i, v in enumerate(value))


def _identifier(value: Any, where: str) -> str:
    # isidentifier() alone admits non-ASCII letters, which C identifiers do not.
    if not isinstance(value, str) or not value.isascii() or not value.isidentifier():
        raise FormatError(f"launch plan: {where} must be a C identifier, got {value!r}")
    return value


def _arg(value: Any, where: str) -> PlanArg:
    if isinstance(value, dict):
        unknown = set(value) - {"expr", "type"}
        if unknown or "expr" not in value:
            raise FormatError(f'launch plan: {where}: an object argument is {{"expr": "...", "type": "int64"}}')
        int_type = value.get("type", "int32")
        if int_type not in ("int32", "int64"):
            raise FormatError(f'launch plan: {where}: type must be "int32" or "int64", got {int_type!r}')
        return PlanArg(_expr_text(value["expr"], where), int_type)
    if type(value) is int or isinstance(value, str):
        return PlanArg(_expr_text(value, where))
    raise FormatError(f"launch plan: {where} must name a buffer, a scalar or an integer expression, got {value!r}")


def parse_plan(data: Any) -> LaunchPlan:
    """Turn the JSON launch plan (a str or already-decoded object) into a LaunchPlan."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise FormatError(
                f"launch plan: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            ) from None
        except RecursionError:
            raise FormatError("launch plan: the JSON is nested too deeply") from None
        except ValueError as exc:  # an integer literal thousands of digits long
            raise FormatError(f"launch plan: not a usable JSON value ({exc})") from None
    if not isinstance(data, dict):
        raise FormatError('launch plan: must be a JSON object with "launches" (and optional "scratch")')
    unknown = set(data) - {"scratch", "launches"}
    if unknown:
        raise FormatError(f'launch plan: unknown key(s) {sorted(unknown)}; allowed: "scratch", "launches"')

    scratch_raw = data.get("scratch", [])
    if not isinstance(scratch_raw, list) or len(scratch_raw) > MAX_SCRATCH:
        raise FormatError(f'launch plan: "scratch" must be a list of at most {MAX_SCRATCH} buffers')
    scratch: list[ScratchBuffer] = []
    for i, s in enumerate(scratch_raw):
        where = f"scratch[{i}]"
        if not isinstance(s, dict) or set(s) - {"name", "dtype", "count"} or not {"name", "dtype", "count"} <= set(s):
            raise FormatError(f'launch plan: {where} must be {{"name": ..., "dtype": ..., "count": ...}}')
        # isinstance first: a list or object is unhashable and cannot be looked up.
        if not isinstance(s["dtype"], str) or s["dtype"] not in DTYPES:
            raise FormatError(f"launch plan: {where}.dtype {s['dtype']!r} unknown; one of {sorted(DTYPES)}")
        name = _identifier(s["name"], f"{where}.name")
        if any(t.name == name for t in scratch):
            raise FormatError(f"launch plan: scratch buffer {name!r} declared twice")
        scratch.append(ScratchBuffer(name, s["dtype"], _expr_text(s["count"], f"{where}.count")))

    launches_raw = data.get("launches")
    if not isinstance(launches_raw, list) or not launches_raw:
        raise FormatError('launch plan: "launches" must be a non-empty list')
    if len(launches_raw) > MAX_LAUNCHES:
        raise FormatError(f"launch plan: at most {MAX_LAUNCHES} launches")
    launches: list[Launch] = []
    for i, la in enumerate(launches_raw):
        where = f"launches[{i}]"
        if not isinstance(la, dict):
            raise FormatError(f"launch plan: {where} must be an object")
        unknown = set(la) - {"kernel", "grid", "block", "shared_bytes", "args"}
        if unknown:
            raise FormatError(f"launch plan: {where}: unknown key(s) {sorted(unknown)}")
        for key in ("kernel", "grid", "block", "args"):
            if key not in la:
                raise FormatError(f'launch plan: {where} has no "{key}"')
        args = la["args"]
        if not isinstance(args, list):
            raise FormatError(f"launch plan: {where}.args must be a list")
        if len(args) > MAX_ARGS:
            raise FormatError(f"launch plan: {where}.args has {len(args)} items; at most {MAX_ARGS}")
        launches.append(
            Launch(
                kernel=_identifier(la["kernel"], f"{where}.kernel"),
                grid=_dims(la["grid"], f"{where}.grid"),
                block=_dims(la["block"], f"{where}.block"),
                shared_bytes=_expr_text(la.get("shared_bytes", 0), f"{where}.shared_bytes"),
                args=tuple(_arg(a, f"{where}.args[{j}]") for j, a in enumerate(args)),
            )
        )
    return LaunchPlan(tuple(scratch), tuple(launches))
