"""The Compilation Verifier: NVRTC compiles a candidate's device code to a cubin for the GPU's own
architecture, and what the compiler says goes back to the model (docs/architecture.md, "The reply
contract" and "Judging").

Importing this package loads no NVRTC: the compiler processes do, and the engine's first include-policy
check does, to find the headers whose macros it checks (header_macros.py); it compiles nothing.

Nor does it import the compiler's modules: each name below is imported the first time it is asked
for, so that a module needing one small thing (a CompileResult, to read a stored verdict) does not
bring the include policy, the compiler pool and NVRTC's wrapper with it (the TUI's first frame waits
for every import; docs/performance.md, "Start-up").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cuda_llm.engine.compile.compiler_pool import CompilerPool, PoolClosedError, compile_once
    from cuda_llm.engine.compile.includes import (
        ALLOWED_HEADER_FAMILIES,
        ALLOWED_HEADERS,
        ALLOWED_PRAGMAS,
        PolicyViolation,
        allowed_headers_text,
        check_source_policy,
        is_allowed_header,
    )
    from cuda_llm.engine.compile.log import parse_diagnostics, parse_ptxas
    from cuda_llm.engine.compile.nvrtc import compile_in_process
    from cuda_llm.engine.compile.ptx import device_globals, precision_hints, ptx_entries
    from cuda_llm.engine.compile.result import (
        CANDIDATE_FILE,
        CompileResult,
        CompilerUnavailableError,
        DeviceGlobal,
        Diagnostic,
        KernelResources,
    )
    from cuda_llm.engine.compile.source import CheckedSource, check_source

# Each exported name and the module of this package that defines it.
_HOMES = {
    "CompilerPool": "compiler_pool",
    "PoolClosedError": "compiler_pool",
    "compile_once": "compiler_pool",
    "ALLOWED_HEADER_FAMILIES": "includes",
    "ALLOWED_HEADERS": "includes",
    "ALLOWED_PRAGMAS": "includes",
    "PolicyViolation": "includes",
    "allowed_headers_text": "includes",
    "check_source_policy": "includes",
    "is_allowed_header": "includes",
    "parse_diagnostics": "log",
    "parse_ptxas": "log",
    "compile_in_process": "nvrtc",
    "device_globals": "ptx",
    "precision_hints": "ptx",
    "ptx_entries": "ptx",
    "CANDIDATE_FILE": "result",
    "CompileResult": "result",
    "CompilerUnavailableError": "result",
    "DeviceGlobal": "result",
    "Diagnostic": "result",
    "KernelResources": "result",
    "CheckedSource": "source",
    "check_source": "source",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ALLOWED_HEADERS",
    "ALLOWED_HEADER_FAMILIES",
    "ALLOWED_PRAGMAS",
    "CANDIDATE_FILE",
    "CheckedSource",
    "CompileResult",
    "CompilerPool",
    "CompilerUnavailableError",
    "DeviceGlobal",
    "Diagnostic",
    "KernelResources",
    "PolicyViolation",
    "PoolClosedError",
    "allowed_headers_text",
    "check_source",
    "check_source_policy",
    "compile_in_process",
    "compile_once",
    "device_globals",
    "is_allowed_header",
    "parse_diagnostics",
    "parse_ptxas",
    "precision_hints",
    "ptx_entries",
]
