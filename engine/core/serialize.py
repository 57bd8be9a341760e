"""Dataclasses to JSON and back, driven by their type hints: how reports are stored and exported.

`dump` turns frozen dataclasses (and tuples, dicts, floats that are inf/NaN) into JSON values;
`load(cls, data)` rebuilds them. Bytes (compiled cubins) are not stored: they are rebuilt by
compiling the stored source again.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin


def dump(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: dump(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): dump(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(dump(v) for v in value)
    if isinstance(value, bytes):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def load(tp: Any, data: Any) -> Any:
    """Rebuild a value of type `tp` from what `dump` produced."""
    if data is None:
        return None
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(tp) if a is not type(None)]
        for option in options:
            try:
                return load(option, data)
            except (TypeError, ValueError, KeyError):
                continue
        raise ValueError(f"{data!r} fits none of {options}")
    if origin is Literal:
        return data
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise TypeError(f"{tp.__name__} needs an object, got {type(data).__name__}")
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = load(hints[f.name], data[f.name])
        return tp(**kwargs)
    if origin is tuple:
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(load(args[0], v) for v in data)
        return tuple(load(a, v) for a, v in zip(args, data, strict=False))
    if origin in (frozenset, set):
        (arg,) = get_args(tp) or (Any,)
        return origin(load(arg, v) for v in data)
    if origin is list:
        (arg,) = get_args(tp) or (Any,)
        return [load(arg, v) for v in data]
    if origin is dict:
        _k, v_tp = get_args(tp) or (str, Any)
        return {k: load(v_tp, v) for k, v in data.items()}
    if tp is float:
        if isinstance(data, str):
            return float(data)
        if not isinstance(data, int | float):
            raise TypeError(f"expected a number, got {data!r}")
        return float(data)
    if tp is int:
        if not isinstance(data, int):
            raise TypeError(f"expected an integer, got {data!r}")
        return data
    if tp is str:
        if not isinstance(data, str):
            raise TypeError(f"expected a string, got {data!r}")
        return data
    if tp is bool:
        return bool(data)
    if tp is bytes:
        return None
    return data
