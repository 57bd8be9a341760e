"""bfloat16 on the host, where NumPy has no such type: values are carried as their 16 bits (uint16)
and converted here, exactly.

bf16 is the top half of an IEEE fp32 (8 exponent bits, 7 fraction bits), so bits -> value is a
shift, and value -> bits is round-to-nearest-even on the 16 dropped bits. From float64 the value is
first narrowed to fp32 with round-to-odd, which keeps the second rounding correct (a plain fp32
rounding first could round twice the same way: 1 + 2^-8 + 2^-30 would land on the tie 1 + 2^-8 and
then go to even, 1, instead of up).

Task references import this (tasks/*_bf16/reference.py) to make and read bf16 buffers.
"""

from __future__ import annotations

import numpy as np

CANONICAL_NAN = 0x7FC0  # a quiet bf16 NaN


def _float32_round_to_odd(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounded to odd: truncated toward zero, the last bit set when inexact."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        away = np.abs(f.astype(np.float64)) > np.abs(x)  # rounded away from zero (inf included)
        f = np.where(away & np.isfinite(x), np.nextafter(f, np.float32(0)), f)
        bits = f.view(np.uint32)
        inexact = (f.astype(np.float64) != x) & np.isfinite(x)
    return np.where(inexact, bits | np.uint32(1), bits).view(np.float32)


def to_bits(values: np.ndarray | float) -> np.ndarray:
    """The bf16 nearest to each value (ties to even; NaN stays NaN, overflow goes to inf), as uint16."""
    x = np.asarray(values)
    if x.dtype == np.float64:
        x = _float32_round_to_odd(x)
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(CANONICAL_NAN), rounded)


def to_float32(bits: np.ndarray) -> np.ndarray:
    """The value of each bf16 bit pattern, as float32 (exact: every bf16 is an fp32)."""
    b = np.ascontiguousarray(bits, dtype=np.uint16)
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_to_bf16(values: np.ndarray) -> np.ndarray:
    """Each value rounded to bf16 and given back as float32: what a bf16 register holds."""
    return to_float32(to_bits(values))
