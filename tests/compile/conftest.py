"""Shared fixtures: NVRTC availability, and a private cache folder for extracted headers."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


def _nvrtc_problem() -> str | None:
    try:
        from cuda_llm.engine.compile.nvrtc_library import version as nvrtc_version

        nvrtc_version()
    except Exception as exc:  # no cuda-bindings, no libnvrtc: the pure tests still run
        return str(exc)
    return None


NVRTC_PROBLEM = _nvrtc_problem()
needs_nvrtc = pytest.mark.skipif(NVRTC_PROBLEM is not None, reason=f"NVRTC unavailable: {NVRTC_PROBLEM}")


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """NVRTC's bundled headers are extracted into a temporary CUDA_LLM_HOME, never the user's."""
    if os.environ.get("CUDA_LLM_TEST_KEEP_HOME"):
        yield
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUDA_LLM_HOME", str(tmp_path_factory.mktemp("cuda-llm-home")))
        yield
