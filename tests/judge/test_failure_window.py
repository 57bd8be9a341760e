"""A failing output too large for the host, described from the device's counts and a window from its
first wrong element (engine/gpu/failure_window.py): the first mismatches are those of the whole output
compared on the host, the counts are the device's, and the reference's sealed copy is lent only for
the window's download. The device is stood in for by host memory behind the same download call."""

from __future__ import annotations

import numpy as np
import pytest

from cuda_llm.engine.gpu.compare import compare_output
from cuda_llm.engine.gpu.driver import DeviceBuffer
from cuda_llm.engine.gpu.failure_window import describe_from_window, failure_shape
from cuda_llm.engine.gpu.harness import DeviceComparison
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.model import Tolerance

TOL = Tolerance("rms_or_abs", 1e-4, 1e-30)


class HostMemory:
    """Addresses into one bytearray, read back by download() as the driver's Context does."""

    def __init__(self) -> None:
        self.memory = bytearray(64)  # address 0 is never handed out
        self.downloaded = 0  # bytes brought to the host

    def put(self, values: np.ndarray) -> DeviceBuffer:
        ptr = len(self.memory)
        self.memory += values.tobytes()
        return DeviceBuffer(ptr, values.nbytes)

    def download(self, buf: DeviceBuffer, host: np.ndarray, timeout_s: float) -> None:
        host.view(np.uint8)[:] = np.frombuffer(self.memory, dtype=np.uint8, count=buf.nbytes, offset=buf.ptr)
        self.downloaded += buf.nbytes


class Sealed:
    def __init__(self, buf: DeviceBuffer, count: int) -> None:
        self.buf, self.count, self.nbytes = buf, count, buf.nbytes
        self.lent = self.returned = 0

    def lend(self) -> DeviceBuffer:
        self.lent += 1
        return self.buf

    def give_back(self) -> None:
        self.returned += 1

    def drop(self) -> None:
        pass


def device_counts(expected: np.ndarray, got: np.ndarray) -> DeviceComparison:
    """What the device comparison reports of `got`, taken from the host's own comparison."""
    whole = compare_output("y", expected, got, TOL, max_mismatches=expected.size)
    wrong = np.array([m.index for m in whole.mismatches]).reshape(-1, expected.ndim)
    flat = np.ravel_multi_index(tuple(wrong.T), expected.shape)
    return DeviceComparison(whole.wrong, whole.unwritten, whole.worst_ratio, 0, int(flat.min()), int(flat.max()))


@pytest.mark.parametrize("sealed", [False, True], ids=["host reference", "sealed reference"])
def test_the_window_lists_the_first_mismatches_of_the_whole_output(sealed):
    rng = np.random.default_rng(5)
    shape = (64, 1000)
    expected = rng.standard_normal(shape)
    got = expected.astype(np.float32)
    flat = got.reshape(-1)
    wrong_at = np.sort(rng.choice(range(20_000, 40_000), size=30, replace=False))
    flat[wrong_at] += 1.0
    counts = device_counts(expected, got)
    mem = HostMemory()
    out = mem.put(got)
    exp64 = expected.reshape(-1)
    reference = Sealed(mem.put(exp64), exp64.size) if sealed else expected
    window = 5000
    result = describe_from_window(
        mem, "y", "float32", shape, out, reference, None, TOL, float(np.sqrt(np.mean(exp64**2))), counts, window, 8, 1.0
    )
    whole = compare_output("y", expected, got, TOL)
    assert result.mismatches == whole.mismatches
    assert (result.checked, result.wrong, result.unwritten) == (whole.checked, 30, 0)
    rows = f"rows {wrong_at[0] // 1000}-{wrong_at[-1] // 1000} of 64"
    assert (
        result.pattern
        == f"30 elements are wrong, between flat elements {wrong_at[0]} and {wrong_at[-1]} of 64000 ({rows})"
    )
    # Only the window came down: the output's elements from the first wrong one, and the reference's
    # where it is on the device (a host reference is sliced).
    assert mem.downloaded == window * (4 + (8 if sealed else 0))
    if sealed:
        assert reference.lent == reference.returned == 1


def test_the_window_is_compared_under_the_whole_output_s_rms():
    """A window of small elements in an output with large ones elsewhere: the bound is the whole
    output's RMS, not the window's (which would refuse what the whole-output comparison accepts)."""
    expected = np.concatenate([np.full(1000, 100.0), np.full(1000, 1e-3)])
    got = expected.astype(np.float32)
    got[1500] += 5e-3  # 5x the small elements, under 1e-4 of the RMS (~70): right
    got[1000] = np.float32(7.0)  # far off: the first wrong element
    counts = device_counts(expected, got)
    assert counts.wrong == 1 and counts.first_wrong == 1000
    mem = HostMemory()
    rms = float(np.sqrt(np.mean(expected**2)))
    result = describe_from_window(
        mem, "y", "float32", (2000,), mem.put(got), expected, None, TOL, rms, counts, 1000, 8, 1.0
    )
    assert [m.index for m in result.mismatches] == [(1000,)]
    assert result.pattern is None  # a lone wrong element has no shape


def test_a_window_reaching_past_the_end_stops_at_it():
    expected = np.arange(100, dtype=np.float64) + 1.0
    got = expected.astype(np.float32)
    got[95:] = np.float32(np.nan)
    mem = HostMemory()
    counts = device_counts(expected, got)
    result = describe_from_window(
        mem, "y", "float32", (100,), mem.put(got), expected, None, TOL, 1.0, counts, 1 << 20, 8, 1.0
    )
    assert [m.index for m in result.mismatches] == [(i,) for i in range(95, 100)]
    assert mem.downloaded == 5 * 4  # five float32 elements; the host reference is sliced, not downloaded
    assert result.pattern == "the last 5 elements (flat) are wrong"


@pytest.mark.parametrize(
    ("wrong", "unwritten", "first", "last", "shape", "line"),
    [
        (100, 0, 0, 99, (100,), "every element is wrong"),
        (100, 100, 0, 99, (10, 10), "every element is unwritten (still NaN)"),
        (10, 10, 90, 99, (100,), "the last 10 elements (flat) are unwritten (still NaN)"),
        (10, 0, 0, 9, (100,), "the first 10 elements (flat) are wrong"),
        (10, 0, 40, 49, (100,), "elements (flat) 40-49 are wrong"),
        (3, 0, 5, 95, (100,), "3 elements are wrong, between flat elements 5 and 95 of 100"),
        (3, 0, 5, 95, (10, 10), "3 elements are wrong, between flat elements 5 and 95 of 100 (rows 0-9 of 10)"),
        (1, 0, 7, 7, (100,), None),
    ],
)
def test_the_failure_s_shape_from_the_device_s_counts(wrong, unwritten, first, last, shape, line):
    assert failure_shape(DeviceComparison(wrong, unwritten, 2.0, 0, first, last), shape) == line


def test_a_bfloat16_window_comes_down_as_its_bits():
    from cuda_llm.engine.task import bfloat16

    expected = np.linspace(1.0, 2.0, 64)
    got = bfloat16.to_bits(expected)
    got[10] = bfloat16.to_bits(np.array([9.0]))[0]
    tol = Tolerance("rms_or_abs", 5e-2, 1e-30)
    whole = compare_output("y", expected, got, tol, dtype="bfloat16")
    counts = DeviceComparison(whole.wrong, 0, whole.worst_ratio, 0, 10, 10)
    mem = HostMemory()
    assert DTYPES["bfloat16"].numpy == "uint16"
    result = describe_from_window(
        mem,
        "y",
        "bfloat16",
        (64,),
        mem.put(got),
        expected,
        None,
        tol,
        float(np.sqrt(np.mean(expected**2))),
        counts,
        8,
        8,
        1.0,
    )
    assert result.mismatches == whole.mismatches and result.mismatches[0].got == 9.0
