"""The Compilation Verifier: NVRTC compiles a candidate's device code to a cubin for the GPU's own
architecture, and what the compiler says goes back to the model (docs/architecture.md, "The reply
contract" and "Judging").

Importing this package loads no NVRTC: the compiler processes do, and the engine's first include-policy
check does, to find the headers whose macros it checks (header_macros.py); it compiles nothing.
"""

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
