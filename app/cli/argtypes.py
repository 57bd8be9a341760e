"""Number options checked as argparse reads them: a value out of range is a usage error (one line,
exit 2) before any work starts, never a setting sent to a server or a listing that shows nothing."""

from __future__ import annotations

import argparse
import math


def _number(kind: type, text: str) -> float | int:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def positive_int(text: str) -> int:
    value = int(_number(int, text))
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer (1 or more)")
    return value


def non_negative_int(text: str) -> int:
    value = int(_number(int, text))
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def positive_float(text: str) -> float:
    value = float(_number(float, text))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value:g} is not above 0")
    return value


def non_negative_float(text: str) -> float:
    value = float(_number(float, text))
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value:g} is negative")
    return value
