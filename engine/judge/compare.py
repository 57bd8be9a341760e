"""Compare a kernel's output with the reference: every element, a tolerance scaled to the data, and
a report a model (and a person) can act on.

Pure NumPy; runs in the GPU worker and in CPU tests alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.task.model import Tolerance

# Integer outputs are poisoned with this value before a run; an element still holding it after the
# run was never written. Float outputs are poisoned with NaN.
INT_POISON = 0x7FBADBAD
# Below this many wrong elements a pattern is not worth describing beyond the listed mismatches.
MIN_PATTERN_ELEMENTS = 2


@dataclass(frozen=True)
class Mismatch:
    output: str
    index: tuple[int, ...]
    expected: float
    got: float
    abs_err: float
    rel_err: float  # abs_err / |expected| (inf where expected is 0)
    case: str = ""  # the validation case ("n=1000 seed 2"), filled in by the validator


@dataclass(frozen=True)
class OutputComparison:
    output: str
    checked: int
    wrong: int  # elements outside the tolerance (unwritten ones included)
    unwritten: int  # elements still holding the poison
    worst_ratio: float  # largest |error| / allowed error over written elements (<= 1 passes)
    mismatches: tuple[Mismatch, ...]
    pattern: str | None

    @property
    def passed(self) -> bool:
        return self.wrong == 0


HALF_POISON = 0x7FBA  # an fp16 NaN with the same recognisable leading bits


def _poisoned(got: np.ndarray) -> np.ndarray:
    """Elements still holding the exact poison bit pattern: never written by the kernel. A NaN the
    kernel computed (say from garbage it read) has another payload and counts as wrong, not unwritten."""
    size = got.dtype.itemsize
    if size == 4:
        return got.view(np.uint32) == INT_POISON
    if size == 8:
        return got.view(np.uint64) == (INT_POISON << 32) | INT_POISON
    if size == 2:
        return got.view(np.uint16) == HALF_POISON
    return np.zeros(got.shape, dtype=bool)


def allowed_error(expected: np.ndarray, tol: Tolerance, scale: np.ndarray | None) -> np.ndarray:
    """The per-element error bound: atol + rtol * scale, with scale chosen by the task's rule."""
    exp = np.asarray(expected, dtype=np.float64)
    if tol.scale == "exact":
        return np.zeros(exp.shape)
    if tol.scale == "abs":
        base = np.abs(exp)
    elif tol.scale == "rms":
        base = np.full(exp.shape, float(np.sqrt(np.mean(exp * exp))) if exp.size else 0.0)
    else:
        if scale is None:
            raise ValueError("tolerance scale 'custom' needs the reference's error_scale()")
        base = np.asarray(scale, dtype=np.float64)
    return tol.atol + tol.rtol * base


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _describe(name: str, indices: np.ndarray, length: int) -> str:
    """Describe a set of indices along an axis of `length` named `name` (plural):
    'the last 3 elements', 'rows 1-4095 (all from 1 on)', 'every 32nd element from 0'."""
    idx = np.unique(indices)
    count = int(idx.size)
    if count == length:
        return f"all {name}"
    if idx[-1] == length - 1 and idx[0] == length - count:
        return f"the last {count} {name}"
    if idx[0] == 0 and idx[-1] == count - 1:
        return f"the first {count} {name}"
    if idx[-1] - idx[0] + 1 == count:
        tail = f" (all from {idx[0]} on)" if idx[-1] == length - 1 else ""
        return f"{name} {idx[0]}-{idx[-1]}{tail}"
    if count >= 3:
        steps = np.diff(idx)
        if np.all(steps == steps[0]):
            return f"every {_ordinal(int(steps[0]))} of the {name} from {idx[0]}"
    shown = ", ".join(str(i) for i in idx[:6])
    return f"{name} {shown}" + (f", ... ({count} in all)" if count > 6 else "")


def describe_pattern(wrong: np.ndarray, unwritten: np.ndarray, axis_names: tuple[str, ...]) -> str | None:
    """One line naming the shape of the failure, when it has a simple shape."""
    total = int(wrong.sum())
    if total < MIN_PATTERN_ELEMENTS:
        return None
    what = "unwritten (still NaN)" if int(unwritten.sum()) == total else "wrong"
    if total == wrong.size:
        return f"every element is {what}"
    flat = wrong.reshape(-1)
    if wrong.ndim == 1:
        return f"{_describe('elements', np.flatnonzero(flat), flat.size)} are {what}"
    # Is the failure a function of one axis alone (whole slices wrong, the rest right)?
    for axis in range(wrong.ndim):
        other = tuple(a for a in range(wrong.ndim) if a != axis)
        slice_any = wrong.any(axis=other)
        if np.array_equal(slice_any, wrong.all(axis=other)):
            name = axis_names[axis] if axis < len(axis_names) else f"axis-{axis} slices"
            return f"{_describe(name, np.flatnonzero(slice_any), wrong.shape[axis])} are {what}, entirely"
    desc = _describe("elements (flat)", np.flatnonzero(flat), flat.size)
    if "," not in desc:
        return f"{desc} are {what}"
    rows_hit = np.flatnonzero(wrong.any(axis=tuple(range(1, wrong.ndim))))
    name = axis_names[0] if axis_names else "rows"
    return f"{total} elements are {what}, in {_describe(name, rows_hit, wrong.shape[0])}"


def axis_names_for(ndim: int) -> tuple[str, ...]:
    return {1: ("elements",), 2: ("rows", "columns"), 3: ("planes", "rows", "columns")}.get(
        ndim, tuple(f"axis-{i}" for i in range(ndim))
    )


def compare_output(
    name: str,
    expected: np.ndarray,
    got: np.ndarray,
    tol: Tolerance,
    scale: np.ndarray | None = None,
    max_mismatches: int = 8,
) -> OutputComparison:
    """Check every element of `got` against `expected` under `tol`."""
    got = np.asarray(got).reshape(expected.shape)
    unwritten = _poisoned(got)
    exp64 = np.asarray(expected, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # signalling-NaN poison raises "invalid" when widened
        got64 = got.astype(np.float64)
    if tol.scale == "exact":
        same = got64 == exp64
        err = np.where(same, 0.0, np.abs(got64 - exp64))
        ok = same & ~unwritten
        ratio = np.where(ok, 0.0, np.inf)
    else:
        bound = allowed_error(exp64, tol, scale)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(got64 - exp64)
            ok = (err <= bound) & ~unwritten  # NaN and inf compare False: never pass
            ratio = np.where(bound > 0, err / np.where(bound > 0, bound, 1.0), np.where(err > 0, np.inf, 0.0))
    wrong = ~ok
    nwrong = int(wrong.sum())
    mismatches: list[Mismatch] = []
    if nwrong:
        for flat in np.flatnonzero(wrong.reshape(-1))[:max_mismatches]:
            idx = tuple(int(i) for i in np.unravel_index(flat, expected.shape))
            e = float(exp64.reshape(-1)[flat])
            g = float(got64.reshape(-1)[flat])
            ae = abs(g - e) if np.isfinite(g) else float("inf")
            mismatches.append(Mismatch(name, idx, e, g, ae, ae / abs(e) if e else float("inf")))
    written = ~unwritten
    finite_ratio = ratio[written & np.isfinite(ratio)] if written.any() else np.array([])
    worst = float(finite_ratio.max()) if finite_ratio.size else 0.0
    if nwrong and not np.isfinite(ratio[written]).all():
        worst = float("inf")
    return OutputComparison(
        output=name,
        checked=int(expected.size),
        wrong=nwrong,
        unwritten=int(unwritten.sum()),
        worst_ratio=worst,
        mismatches=tuple(mismatches),
        pattern=describe_pattern(wrong, unwritten, axis_names_for(expected.ndim)) if nwrong else None,
    )
