"""Describe a failing output too large to bring to the host whole.

The device comparison (engine/gpu/device_compare.py) already counted every element: how many are
wrong, how many never written, the worst error and the first and last wrong index. What a model (and
a person) needs beyond those counts is what the first wrong elements hold and where the failure lies.
So only a window from the first wrong element comes down, the output's and the reference's, and is
compared on the host like any output; the shape of the failure is told from the device's counts and
indices. Host memory stays bounded by the window at any output size: the whole of a 6 GB output
with its float64 reference took 147 s and over 19 GB of the worker's memory per failing case.
"""

from __future__ import annotations

import math

import numpy as np

from cuda_llm.engine.gpu.compare import MIN_PATTERN_ELEMENTS, OutputComparison, compare_output
from cuda_llm.engine.gpu.device_cases import Sealable
from cuda_llm.engine.gpu.driver import Context, DeviceBuffer
from cuda_llm.engine.gpu.harness import DeviceComparison
from cuda_llm.engine.gpu.protocol import Mismatch
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.model import Tolerance


def expected_window(
    ctx: Context, expected: np.ndarray | Sealable, start: int, count: int, timeout_s: float
) -> np.ndarray:
    """Elements [start, start + count) of the float64 reference, on the host. Sealed values (an
    imported task's, made on the device) have an address only while this copy runs."""
    if isinstance(expected, np.ndarray):
        return np.ascontiguousarray(expected.reshape(-1)[start : start + count], dtype=np.float64)
    values = np.empty(count, dtype=np.float64)
    whole = expected.lend()
    try:
        ctx.download(DeviceBuffer(whole.ptr + start * 8, count * 8), values, timeout_s)
    finally:
        expected.give_back()
    return values


def output_window(ctx: Context, got: DeviceBuffer, dtype: str, start: int, count: int, timeout_s: float) -> np.ndarray:
    """Elements [start, start + count) of an output on the device, on the host in its task dtype's
    NumPy carrier (bfloat16 as uint16)."""
    d = DTYPES[dtype]
    values = np.empty(count, dtype=d.numpy)
    ctx.download(DeviceBuffer(got.ptr + start * d.itemsize, count * d.itemsize), values, timeout_s)
    return values


def failure_shape(result: DeviceComparison, shape: tuple[int, ...]) -> str | None:
    """One line on where the wrong elements lie, from the device's counts and first and last index
    (None for a lone wrong element, as compare.describe_pattern)."""
    if result.wrong < MIN_PATTERN_ELEMENTS:
        return None
    count = math.prod(shape)
    what = "unwritten (still NaN)" if result.unwritten == result.wrong else "wrong"
    if result.wrong == count:
        return f"every element is {what}"
    first, last = result.first_wrong, result.last_wrong
    assert first is not None and last is not None, "a failing comparison has a first and a last wrong index"
    if last - first + 1 == result.wrong:
        span = "the last" if last == count - 1 else "the first" if first == 0 else None
        run = f"{span} {result.wrong} elements (flat)" if span else f"elements (flat) {first}-{last}"
        return f"{run} are {what}"
    where = f"between flat elements {first} and {last} of {count}"
    if len(shape) > 1:
        row = math.prod(shape[1:])
        where += f" (rows {first // row}-{last // row} of {shape[0]})"
    return f"{result.wrong} elements are {what}, {where}"


def describe_from_window(
    ctx: Context,
    name: str,
    dtype: str,
    shape: tuple[int, ...],
    got: DeviceBuffer,
    expected: np.ndarray | Sealable,
    scale: np.ndarray | None,
    tol: Tolerance,
    rms: float,
    result: DeviceComparison,
    window: int,
    mismatches: int,
    timeout_s: float,
) -> OutputComparison:
    """The comparison of a failing output from the device's counts (`result`, over every element) and
    the first `mismatches` wrong elements found in a window of `window` elements from the first wrong
    one. The window is compared on the host under the whole output's RMS."""
    assert result.wrong and result.first_wrong is not None, "only a failing output is described"
    count = math.prod(shape)
    start = result.first_wrong
    n = min(window, count - start)
    exp = expected_window(ctx, expected, start, n, timeout_s)
    values = output_window(ctx, got, dtype, start, n, timeout_s)
    part_scale = None if scale is None else np.ascontiguousarray(scale.reshape(-1)[start : start + n])
    part = compare_output(name, exp, values, tol, part_scale, mismatches, dtype, rms=rms)
    found = tuple(
        Mismatch(
            m.output,
            tuple(int(i) for i in np.unravel_index(start + m.index[0], shape)),
            m.expected,
            m.got,
            m.abs_err,
            m.rel_err,
        )
        for m in part.mismatches
    )
    # Unwritten elements have no finite ratio, and a written one may not either (NaN, inf).
    worst = float("inf") if result.nonfinite > result.unwritten else result.worst_ratio
    return OutputComparison(
        output=name,
        checked=count,
        wrong=result.wrong,
        unwritten=result.unwritten,
        worst_ratio=worst,
        mismatches=found,
        pattern=failure_shape(result, shape),
    )
