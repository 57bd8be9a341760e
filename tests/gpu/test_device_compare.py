"""The harness's on-device checks, which the validator and the profiler trust: the byte comparison
(inputs left alone, two runs agree) must count every differing byte, tail included; the comparison
with the reference must reach the host's verdict (engine/gpu/compare.py) for every output dtype
and tolerance rule."""

import numpy as np
import pytest

from cuda_llm.engine.gpu.compare import INT_POISON, compare_output, output_rms, poison_of
from cuda_llm.engine.gpu.driver import BUFFER_ALIGNMENT
from cuda_llm.engine.task import bfloat16
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.model import Tolerance

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("nbytes", [1, 15, 16, 17, 4096 + 3, (64 << 20) + 7])
def test_count_diff_counts_every_changed_byte(harness, nbytes):
    ctx = harness.ctx
    rng = np.random.default_rng(nbytes)
    a_host = rng.integers(0, 256, size=nbytes, dtype=np.uint8)
    b_host = a_host.copy()
    a, b = ctx.alloc(nbytes), ctx.alloc(nbytes)
    try:
        ctx.upload(a, a_host)
        ctx.upload(b, b_host)
        assert harness.count_diff(a, b, 10.0) == 0
        # Change some bytes: the first, the last (in the tail when there is one), and a spread.
        where = np.unique(np.concatenate([[0, nbytes - 1], rng.integers(0, nbytes, size=min(nbytes, 1000))]))
        b_host[where] ^= 0x5A
        ctx.upload(b, b_host)
        assert harness.count_diff(a, b, 10.0) == where.size
    finally:
        ctx.free(a)
        ctx.free(b)


def test_empty_buffers_differ_in_nothing_and_compare_clean(harness):
    """A zero-size input or output (a task's size can make one empty): nothing was changed, nothing is
    wrong, nothing unwritten, and no kernel reads a byte of it."""
    from cuda_llm.engine.gpu.harness import DeviceComparison

    ctx = harness.ctx
    a, b = ctx.alloc(0), ctx.alloc(0)
    try:
        assert harness.count_diff(a, b, 10.0) == 0
        tol = Tolerance("abs", 1e-6, 1e-12)
        assert harness.compare(a, "float32", 0, b, None, tol, 0.0, 10.0) == DeviceComparison(0, 0, 0.0, 0)
    finally:
        ctx.free(a)
        ctx.free(b)


# Output dtype and tolerance rule: every kernel variant and every rule the tasks use.
COMPARE_CASES = [
    ("float32", Tolerance("abs", 1e-6, 1e-12)),
    ("float32", Tolerance("rms", 3e-4, 1e-30)),
    ("float32", Tolerance("rms_or_abs", 1e-4, 1e-30)),
    ("float32", Tolerance("custom", 1e-5, 1e-30)),
    ("float32", Tolerance("exact", 0.0, 0.0)),
    ("float64", Tolerance("abs", 1e-12, 1e-30)),
    ("float16", Tolerance("custom", 1e-3, 1e-30)),
    ("bfloat16", Tolerance("abs", 2.0**-8, 1e-30)),
    ("bfloat16", Tolerance("rms", 5e-2, 1e-30)),
    ("bfloat16", Tolerance("rms_or_abs", 5e-2, 1e-30)),
    ("float16", Tolerance("rms_or_abs", 1e-2, 1e-30)),
    ("bfloat16", Tolerance("exact", 0.0, 0.0)),
    ("int32", Tolerance("exact", 0.0, 0.0)),
    ("uint32", Tolerance("exact", 0.0, 0.0)),
    ("int64", Tolerance("exact", 0.0, 0.0)),
    ("int8", Tolerance("exact", 0.0, 0.0)),
    ("uint8", Tolerance("exact", 0.0, 0.0)),
]


def _data(dtype: str, n: int, rng: np.random.Generator, exact: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(expected as float64, a close `got` in the output dtype, a custom scale)."""
    if dtype == "bfloat16":  # carried as its bits on the host
        expected = rng.standard_normal(n) * 10.0
        got = bfloat16.to_bits(expected)
        if exact:
            expected = bfloat16.to_float32(got).astype(np.float64)
    elif DTYPES[dtype].is_float:
        expected = rng.standard_normal(n) * 10.0
        got = expected.astype(DTYPES[dtype].numpy)
        if exact:  # an exact rule needs a reference the output type can hold
            expected = got.astype(np.float64)
    else:
        info = np.iinfo(DTYPES[dtype].numpy)
        got = rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), size=n, dtype=DTYPES[dtype].numpy)
        expected = got.astype(np.float64)
    scale = np.abs(expected) + np.abs(rng.standard_normal(n))
    return expected, got, scale


def _spoil(got: np.ndarray, rng: np.random.Generator, dtype: str) -> None:
    """Unwritten elements (the poison), and wrong ones: off by a lot, NaN and inf where the type has them."""
    n = got.size
    idx = rng.choice(n, size=40, replace=False)
    size = got.dtype.itemsize
    poison = poison_of(got, dtype)
    view = got.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size])
    if poison is not None:
        view[idx[:10]] = poison
    if dtype == "bfloat16":
        got[idx[10:20]] = bfloat16.to_bits(bfloat16.to_float32(got[idx[10:20]]) * 1.5 + 1.0)
        got[idx[20:25]] = bfloat16.CANONICAL_NAN
        got[idx[25:30]] = 0x7F80  # +inf
    elif np.issubdtype(got.dtype, np.floating):
        got[idx[10:20]] = got[idx[10:20]] * 1.5 + 1.0
        got[idx[20:25]] = np.nan
        got[idx[25:30]] = np.inf
    else:
        got[idx[10:30]] = got[idx[10:30]] ^ 1


def _device_compare(harness, got: np.ndarray, dtype: str, expected, scale, tol):
    """(the device's counts, the comparison when nothing is wrong)."""
    from cuda_llm.engine.gpu.device_compare import device_comparison
    from cuda_llm.engine.task.model import RMS_SCALES, BufferSpec

    ctx = harness.ctx
    buf = ctx.alloc(got.nbytes)
    try:
        ctx.upload(buf, got)
        spec = BufferSpec("out", dtype, (str(got.size),), "output")
        rms = output_rms(np.ascontiguousarray(expected, dtype=np.float64)) if tol.scale in RMS_SCALES else 0.0
        return device_comparison(ctx, harness, buf, spec, expected, scale, tol, rms, 10.0)
    finally:
        ctx.free(buf)


@pytest.mark.parametrize(("dtype", "tol"), COMPARE_CASES, ids=[f"{d}-{t.scale}" for d, t in COMPARE_CASES])
def test_device_comparison_agrees_with_the_host(harness, dtype, tol):
    rng = np.random.default_rng(7)
    n = 300_007
    expected, got, scale = _data(dtype, n, rng, tol.scale == "exact")
    host = compare_output("out", expected, got, tol, scale, dtype=dtype)
    result, passed = _device_compare(harness, got, dtype, expected, scale, tol)
    assert host.passed and result.wrong == 0 and passed is not None
    assert result.first_wrong is None and result.last_wrong is None
    assert passed.output == "out"
    assert passed.checked == host.checked == n
    # The same arithmetic in the same order: the worst ratio is the host's to the last bit.
    assert passed.worst_ratio == host.worst_ratio

    _spoil(got, rng, dtype)
    host = compare_output("out", expected, got, tol, scale, dtype=dtype, max_mismatches=n)
    result, passed = _device_compare(harness, got, dtype, expected, scale, tol)
    assert passed is None
    assert result.wrong == host.wrong > 0
    # The first and last wrong index, which a failure too large for the host is described from.
    wrong_at = [m.index[0] for m in host.mismatches]
    assert (result.first_wrong, result.last_wrong) == (min(wrong_at), max(wrong_at))


def test_device_comparison_counts_every_wrong_element_of_a_large_output(harness):
    """Every element wrong, over several times as many elements as the comparison's grid has threads:
    the count is exact, summed from every lane of every block. (A few wrong elements among many, as
    above, mostly land on lanes any reduction gets right; a lane whose count were lost or doubled,
    e.g. in a block whose last warp is partial, would go unseen there.)"""
    n = 1_000_003
    expected = np.arange(n, dtype=np.float64)
    got = (expected * 2.0 + 1.0).astype(np.float32)  # exact in float32 (below 2^24), and far outside 1e-6
    tol = Tolerance("abs", 1e-6, 1e-12)
    result, passed = _device_compare(harness, got, "float32", expected, None, tol)
    assert passed is None
    assert (result.wrong, result.first_wrong, result.last_wrong) == (n, 0, n - 1)


def test_device_comparison_counts_unwritten_elements(harness):
    expected = np.arange(1000, dtype=np.float64)
    got = expected.astype(np.float32)
    got.view(np.uint32)[-7:] = INT_POISON  # the last 7 never written
    tol = Tolerance("abs", 1e-6, 1e-12)
    ctx = harness.ctx
    buf = ctx.alloc(got.nbytes)
    exp_dev = ctx.alloc(expected.nbytes)
    try:
        ctx.upload(buf, got)
        ctx.upload(exp_dev, expected)
        result = harness.compare(buf, "float32", got.size, exp_dev, None, tol, 0.0, 10.0)
    finally:
        ctx.free(buf)
        ctx.free(exp_dev)
    assert (result.wrong, result.unwritten) == (7, 7)


def test_every_buffer_starts_on_the_same_alignment(harness):
    # Programs timed against each other must find their buffers at the same alignment: the speed
    # of atomics depends on the address (driver.BUFFER_ALIGNMENT says by how much).
    ctx = harness.ctx
    bufs = [ctx.alloc(n) for n in (1, 1024, 4096 + 3, 3 << 20, 0)]
    try:
        assert all(b.ptr % BUFFER_ALIGNMENT == 0 for b in bufs)
        for b in bufs:  # the whole requested size is usable
            ctx.fill32(b, 0x12345678)
        ctx.wait(10.0)
    finally:
        for b in bufs:
            ctx.free(b)
