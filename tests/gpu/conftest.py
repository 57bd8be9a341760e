import pytest
from gpu_session import gpu  # noqa: F401  (the session-wide GPU fixture)

from cuda_llm.engine.gpu.driver import Context, driver_available


@pytest.fixture(scope="session")
def cuda_context() -> Context:
    """The test process's own context on GPU 0, for tests of the driver layer below the worker."""
    reason = driver_available()
    if reason:
        pytest.skip(f"{reason}: GPU tests need a CUDA driver and device")
    return Context(0)
