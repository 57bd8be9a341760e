"""The one owner of NVRTC: loading the library, its version, the architectures it knows, and the CUDA
header folders that go with it. Nothing else imports `cuda.bindings.nvrtc` (tests/test_layers.py
keeps it so); compiling itself is engine/compile/nvrtc.py's.

Loading costs a dlopen and, the first time on a machine, extracting the bundled headers; the engine
process does it only where it must know the headers (the include policy's macro analysis,
engine/compile/header_macros.py) or the version (a compile-only session's recorded facts).
"""

from __future__ import annotations

import functools
from typing import Any

from cuda_llm.engine.compile import headers as header_search
from cuda_llm.engine.compile.result import CompilerUnavailableError


@functools.cache
def load() -> Any:
    """The `cuda.bindings.nvrtc` module with its library loaded; CompilerUnavailableError says what to
    install when either is missing."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise CompilerUnavailableError(
            f"cuda-bindings is not installed ({exc}): pip install 'cuda-bindings>=13' 'nvidia-cuda-nvrtc>=13'"
        ) from exc
    try:
        nvrtc.nvrtcVersion()
    except RuntimeError as exc:  # DynamicLibNotFoundError: libnvrtc.so.13 is missing
        raise CompilerUnavailableError(
            f"NVRTC could not be loaded ({exc}): pip install 'nvidia-cuda-nvrtc>=13'"
        ) from exc
    return nvrtc


def version() -> tuple[int, int]:
    _, major, minor = load().nvrtcVersion()
    return (major, minor)


def version_text() -> str:
    """The version as "13.0", or "unknown" where NVRTC cannot be loaded (a record still gets written)."""
    try:
        major, minor = version()
    except Exception:
        return "unknown"
    return f"{major}.{minor}"


@functools.cache
def supported_archs() -> tuple[int, ...]:
    result = load().nvrtcGetSupportedArchs()
    return tuple(int(a) for a in result[1])


def header_folders() -> header_search.HeaderDirs | None:
    """The CUDA headers this NVRTC compiles against: its bundled ones (extracted once per version into
    the user's cache) or a toolkit's; None when there are none."""
    return header_search.find_headers(load(), version())
