"""The harness's on-device byte comparison, which the validator and the profiler trust to say that
inputs were left alone and that two runs agree: it must count every differing byte, tail included."""

import numpy as np
import pytest

from engine.gpu.driver import Context, driver_available
from engine.gpu.harness import Harness, compile_harness

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def harness():
    reason = driver_available()
    if reason:
        pytest.skip(f"{reason}: GPU tests need a CUDA driver and device")
    ctx = Context(0)
    major = ctx.attribute("COMPUTE_CAPABILITY_MAJOR")
    minor = ctx.attribute("COMPUTE_CAPABILITY_MINOR")
    return Harness.load(
        ctx,
        compile_harness(f"sm_{major}{minor}"),
        l2_bytes=ctx.attribute("L2_CACHE_SIZE"),
        flush_factor=1,
        sm_count=ctx.attribute("MULTIPROCESSOR_COUNT"),
        shared_optin=ctx.attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
    )


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
