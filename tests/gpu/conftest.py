import pytest
from gpu_session import gpu  # noqa: F401  (the session-wide GPU fixture)

from cuda_llm.engine.gpu.driver import Context, driver_available
from cuda_llm.engine.gpu.harness import Harness, compile_harness


@pytest.fixture(scope="session")
def cuda_context() -> Context:
    """The test process's own context on GPU 0, for tests of the driver layer below the worker."""
    reason = driver_available()
    if reason:
        pytest.skip(f"{reason}: GPU tests need a CUDA driver and device")
    return Context(0)


@pytest.fixture(scope="module")
def harness(cuda_context) -> Harness:
    """Our own kernels (comparison, byte diff, scrub, flush) loaded in the test process's context."""
    ctx = cuda_context
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
