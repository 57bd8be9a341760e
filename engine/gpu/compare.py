"""Compare a kernel's output with the reference: every element, a tolerance scaled to the data, and
a report a model (and a person) can act on.

Pure NumPy; runs in the GPU worker and in CPU tests alike.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from cuda_llm.engine.gpu.protocol import Mismatch as Mismatch  # its home: the reports it is part of
from cuda_llm.engine.task import bfloat16
from cuda_llm.engine.task.dtypes import DTYPES, dtype_of_numpy
from cuda_llm.engine.task.dtypes import HALF_POISON as HALF_POISON
from cuda_llm.engine.task.dtypes import WORD_POISON as INT_POISON  # noqa: F401  (re-exported)
from cuda_llm.engine.task.model import RMS_SCALES, Tolerance

# Outputs are poisoned before a run with the dtype table's bit patterns (HALF_POISON, INT_POISON);
# an element still holding its poison after the run was never written.
# Below this many wrong elements a pattern is not worth describing beyond the listed mismatches.
MIN_PATTERN_ELEMENTS = 2


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


def poison_of(got: np.ndarray, dtype: str | None = None) -> int | None:
    """The bit pattern an output element holds until the kernel writes it (None: not poisoned). `dtype`
    is the task's; without it, the dtype the array's own NumPy dtype natively carries."""
    d = DTYPES[dtype] if dtype is not None else dtype_of_numpy(got.dtype.name)
    return d.poison if d is not None and d.itemsize == got.dtype.itemsize else None


def host_values(got: np.ndarray, dtype: str | None = None) -> np.ndarray:
    """A host array's values as NumPy can compute with them: a dtype carried in another's bits
    (bfloat16 in uint16) decoded exactly, any other array as it is."""
    if dtype == "bfloat16" and got.dtype == np.uint16:
        return bfloat16.to_float32(got)
    if got.dtype == np.bool_:  # the bytes the kernel wrote: NumPy reads any non-zero byte as True
        return got.view(np.uint8)
    return got


_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _poisoned(got: np.ndarray, dtype: str | None = None) -> np.ndarray:
    """Elements still holding the exact poison bit pattern: never written by the kernel. A NaN the
    kernel computed (say from garbage it read) has another payload and counts as wrong, not unwritten."""
    bits = poison_of(got, dtype)
    if bits is None:
        return np.zeros(got.shape, dtype=bool)
    return got.view(_UINT_OF_SIZE[got.dtype.itemsize]) == bits


def output_rms(expected64: np.ndarray) -> float:
    """The RMS of a whole (flat, float64) output: the base of the "rms" and "rms_or_abs" rules."""
    return float(np.sqrt(np.dot(expected64, expected64) / expected64.size)) if expected64.size else 0.0


def allowed_error(
    expected: np.ndarray, tol: Tolerance, scale: np.ndarray | None, rms: float | None = None
) -> np.ndarray:
    """The per-element error bound: atol + rtol * scale, with scale chosen by the task's rule.
    `rms` is the RMS of the whole output, for callers that pass one slice of it at a time."""
    exp = np.asarray(expected, dtype=np.float64)
    if tol.scale == "exact":
        return np.zeros(exp.shape)
    if tol.scale == "abs":
        base = np.abs(exp)
    elif tol.scale in RMS_SCALES:
        if rms is None:
            rms = float(np.sqrt(np.mean(exp * exp))) if exp.size else 0.0
        base = np.full(exp.shape, rms) if tol.scale == "rms" else np.maximum(np.abs(exp), rms)
    else:
        if scale is None:
            raise ValueError("tolerance scale 'custom' needs the reference's error_scale()")
        base = np.array(scale, dtype=np.float64)
    base *= tol.rtol
    base += tol.atol
    return base


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _describe(name: str, indices: np.ndarray, length: int) -> str:
    """Describe a set of indices along an axis of `length` named `name` (plural):
    'the last 3 elements', 'rows 1-4094', 'every 32nd of the elements from 0'."""
    idx = np.asarray(indices)
    # np.flatnonzero's indices (every caller's) are sorted and distinct already: np.unique of them
    # took 16 s for a 16.8-million-element output wrong in most of its elements, in the GPU worker.
    if idx.size > 1 and not bool(np.all(idx[1:] > idx[:-1])):
        idx = np.unique(idx)
    count = int(idx.size)
    if count == length:
        return f"all {name}"
    if idx[-1] == length - 1 and idx[0] == length - count:
        return f"the last {count} {name}"
    if idx[0] == 0 and idx[-1] == count - 1:
        return f"the first {count} {name}"
    if idx[-1] - idx[0] + 1 == count:  # a run in the middle (one that reaches the end is "the last")
        return f"{name} {idx[0]}-{idx[-1]}"
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


@dataclass(frozen=True)
class _ChunkResult:
    wrong: int
    unwritten: int
    worst: float  # largest finite error / bound among written elements
    inf_written: bool  # a written element is infinitely far off (inf, NaN, or any error on a zero bound)
    first_wrong: np.ndarray  # flat indices of the chunk's first wrong elements


def _scan(
    exp: np.ndarray,
    got: np.ndarray,
    tol: Tolerance,
    scale: np.ndarray | None,
    rms: float,
    start: int,
    stop: int,
    keep: int,
    dtype: str | None = None,
) -> _ChunkResult:
    """One contiguous slice of the flat arrays: counts, worst ratio and the first wrong indices."""
    e = exp[start:stop]
    g = got[start:stop]
    unwritten = _poisoned(g, dtype)
    with np.errstate(invalid="ignore", over="ignore"):  # sNaN poison raises "invalid" when widened
        err = host_values(g, dtype).astype(np.float64)
        err -= e
        np.abs(err, out=err)
        if tol.scale == "exact":
            ok = err == 0.0
            ratio = np.where(ok, 0.0, np.inf)
        else:
            bound = allowed_error(e, tol, None if scale is None else scale[start:stop], rms)
            ok = err <= bound  # NaN and inf compare False: they never pass
            ratio = np.divide(err, bound, out=np.where(err > 0, np.inf, 0.0), where=bound > 0)
    ok &= ~unwritten
    wrong = int(ok.size - np.count_nonzero(ok))
    written_ratio = ratio[~unwritten] if wrong else ratio
    finite = np.isfinite(written_ratio)
    worst = float(written_ratio[finite].max()) if finite.any() else 0.0
    return _ChunkResult(
        wrong=wrong,
        unwritten=int(np.count_nonzero(unwritten)),
        worst=worst,
        inf_written=bool(not finite.all()),
        first_wrong=(np.flatnonzero(~ok)[:keep] + start) if wrong else np.empty(0, dtype=np.int64),
    )


# Elements per slice when comparing in parallel: large enough to amortise the thread hand-off,
# small enough that the temporaries stay in a core's cache-friendly range and every core gets work.
CHUNK_ELEMENTS = 1 << 21


def compare_output(
    name: str,
    expected: np.ndarray,
    got: np.ndarray,
    tol: Tolerance,
    scale: np.ndarray | None = None,
    max_mismatches: int = 8,
    dtype: str | None = None,
    rms: float | None = None,
) -> OutputComparison:
    """Check every element of `got` against `expected` under `tol`. `dtype` is the output's task dtype
    (needed where the host array carries another's bits: bfloat16 as uint16). `rms`: the whole
    output's RMS where `expected` is a slice of it (engine/gpu/failure_window.py); else computed here.

    Large outputs are compared in slices on a thread pool (NumPy releases the GIL), so a
    33-million-element output takes a fraction of a second on a workstation."""
    got = np.asarray(got).reshape(expected.shape)
    exp64 = np.ascontiguousarray(expected, dtype=np.float64).reshape(-1)
    flat_got = np.ascontiguousarray(got).reshape(-1)
    flat_scale = None if scale is None else np.asarray(scale).reshape(-1)
    if rms is None:
        rms = output_rms(exp64) if tol.scale in RMS_SCALES else 0.0
    bounds = [(i, min(i + CHUNK_ELEMENTS, exp64.size)) for i in range(0, exp64.size, CHUNK_ELEMENTS)] or [(0, 0)]
    if len(bounds) > 1:
        with ThreadPoolExecutor(max_workers=min(len(bounds), os.cpu_count() or 1)) as pool:
            parts = list(
                pool.map(
                    lambda b: _scan(exp64, flat_got, tol, flat_scale, rms, b[0], b[1], max_mismatches, dtype),
                    bounds,
                )
            )
    else:
        parts = [_scan(exp64, flat_got, tol, flat_scale, rms, 0, exp64.size, max_mismatches, dtype)]
    nwrong = sum(p.wrong for p in parts)
    worst = max((p.worst for p in parts), default=0.0)
    if nwrong and any(p.inf_written for p in parts):
        worst = float("inf")
    mismatches: list[Mismatch] = []
    pattern = None
    if nwrong:
        firsts = np.concatenate([p.first_wrong for p in parts])[:max_mismatches]
        for flat in firsts:
            idx = tuple(int(i) for i in np.unravel_index(int(flat), expected.shape))
            e = float(exp64[flat])
            with np.errstate(invalid="ignore"):
                g = float(host_values(flat_got[flat : flat + 1], dtype)[0])
            ae = abs(g - e) if np.isfinite(g) else float("inf")
            mismatches.append(Mismatch(name, idx, e, g, ae, ae / abs(e) if e else float("inf")))
        # The full masks are only needed to describe a failure's shape (a rare, slower path).
        unwritten = _poisoned(got, dtype)
        wrong_mask = np.zeros(exp64.size, dtype=bool)
        for start, stop in bounds:
            part = _scan(exp64, flat_got, tol, flat_scale, rms, start, stop, stop - start, dtype)
            wrong_mask[part.first_wrong] = True
        pattern = describe_pattern(wrong_mask.reshape(expected.shape), unwritten, axis_names_for(expected.ndim))
    return OutputComparison(
        output=name,
        checked=int(expected.size),
        wrong=nwrong,
        unwritten=sum(p.unwritten for p in parts),
        worst_ratio=worst,
        mismatches=tuple(mismatches),
        pattern=pattern,
    )
