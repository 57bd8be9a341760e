"""Compile one source with NVRTC, in the current process, through `cuda.bindings.nvrtc` directly.

The raw binding works on every image we run on (cuda-bindings 13.3 with NVRTC 13.0 on the GPU
machine, 13.5 here) and with no driver: one compile with `-arch=sm_XX` gives both the cubin (what
the GPU worker loads) and the PTX (shown to the model, scanned for precision and globals).

The engine calls this through `CompilerPool` (a child process with a time limit); the GPU worker
calls it directly for its own trusted harness kernels.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from cuda_llm.engine.compile import headers as header_search
from cuda_llm.engine.compile import nvrtc_library
from cuda_llm.engine.compile.cubin import STATE_ANCHORS
from cuda_llm.engine.compile.log import keep_own_diagnostics, parse_diagnostics, parse_ptxas, with_global_writes
from cuda_llm.engine.compile.nvrtc_library import supported_archs
from cuda_llm.engine.compile.prelude import with_prelude
from cuda_llm.engine.compile.ptx import device_globals, precision_hints, ptx_entries
from cuda_llm.engine.compile.result import CANDIDATE_FILE, CompileResult, failed_result
from cuda_llm.engine.compile.source import CheckedSource, check_source
from cuda_llm.engine.core.settings import CompileSettings

# The program's own name: NVRTC searches "the source's folder" for quoted includes, and a file
# under /dev/null can never exist, so nothing is found there whatever the working directory
# holds. (`--no-source-include` would do the same but also stops the CUDA headers' own quoted
# includes of their neighbours, so <cooperative_groups.h> and <mma.h> would not compile.) The
# prelude's `#line 1 "candidate.cu"` gives diagnostics the short name.
PROGRAM_NAME = "/dev/null/" + CANDIDATE_FILE

_ARCH = re.compile(r"(?:sm_|compute_)?(\d{2,3})([af]?)")


def normalize_arch(arch: str | int) -> str:
    """ "sm_90", "90", 90, "compute_90" -> "sm_90"; "sm_90a" keeps its suffix."""
    m = _ARCH.fullmatch(str(arch).strip())
    if m is None:
        raise ValueError(f"not a GPU architecture: {arch!r} (expected e.g. sm_90)")
    return f"sm_{m.group(1)}{m.group(2)}"


# NVRTC 12.9 and newer cache compiled programs in the CUDA driver's compute cache when a driver is
# present (so on the GPU machine, never here). A cache hit returns an empty log: no ptxas report, no
# warnings, for any source that compiles to the same code as an earlier one (a changed comment
# hits). Loading the driver for the cache also cost 190 ms in each new compiler process.
NO_CACHE_SINCE = (12, 9)


def build_options(
    arch: str, settings: CompileSettings, include_dirs: tuple[str, ...], version: tuple[int, int]
) -> tuple[str, ...]:
    # No --use_fast_math: it changes accuracy (approximate division, flushed denormals), and
    # precision is the task's decision, stated in its dtype contract.
    options = [f"-arch={arch}", f"--std={settings.std}"]
    if settings.lineinfo:
        options.append("-lineinfo")
    options.append("--ptxas-options=-v")  # registers, shared memory, stack and spills in the log
    if version >= NO_CACHE_SINCE:
        options.append("--no-cache")
    options.extend(f"-I{d}" for d in include_dirs)
    return tuple(options)


def _program_string(getter_size: Any, getter: Any, prog: Any) -> bytes:
    _, size = getter_size(prog)
    buffer = b" " * size
    getter(prog, buffer)
    return buffer.rstrip(b"\0")


def _scrub(text: str, include_dirs: tuple[str, ...]) -> str:
    """Host paths out of a log or PTX that may go to a remote model: include folders become
    header names (cuda/std/climits), and the program name and `.file` paths become candidate.cu."""
    for d in sorted(include_dirs, key=len, reverse=True):
        text = text.replace(d.rstrip("/") + "/", "")
    text = text.replace(PROGRAM_NAME, CANDIDATE_FILE)
    return re.sub(r'(\.file\s+\d+\s+")[^"\n]*/([^"/\n]+")', r"\1\2", text)


def _is_header(include_dirs: tuple[str, ...], name: str) -> bool:
    """Whether a file a diagnostic names is a CUDA header: a relative name (the include folders'
    prefix is scrubbed off) that exists under one of the include folders."""
    if name.startswith("/") or ".." in name.split("/"):
        return False
    return any(os.path.isfile(os.path.join(d, name)) for d in include_dirs)


def _cap(log: str, limit: int) -> str:
    data = log.encode()
    if len(data) <= limit:
        return log
    head = data[:limit].decode(errors="ignore")
    return head + f"\n[log truncated: {len(data):,} bytes, the first {limit:,} shown]\n"


def _error_line(result_name: str, diagnostics: tuple[Any, ...]) -> str:
    errors = [d for d in diagnostics if d.severity == "error"]
    if not errors:
        return f"NVRTC failed ({result_name})"
    more = f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
    return errors[0].one_line() + (more if len(errors) > 1 else "")


def compile_checked(
    checked: CheckedSource, arch: str | int, settings: CompileSettings, include_dirs: tuple[str, ...] | None = None
) -> CompileResult:
    """Compile a source that already passed `check_source`. `include_dirs`: the CUDA header folders
    as this process must name them (a jailed compiler child sees them elsewhere, engine/compile/
    sandbox.py); None finds them."""
    nvrtc = nvrtc_library.load()
    version = nvrtc_library.version()
    try:
        arch = normalize_arch(arch)
    except ValueError as exc:
        return failed_result(str(arch), str(exc), version=version, headers=checked.headers)
    number = int(re.sub(r"\D", "", arch))
    if number not in supported_archs():
        known = ", ".join(f"sm_{a}" for a in supported_archs())
        return failed_result(
            arch,
            f"NVRTC {version[0]}.{version[1]} cannot compile for {arch} (it knows {known})",
            version=version,
            headers=checked.headers,
        )
    if not checked.headers:
        include_dirs = ()
    elif include_dirs is None:
        found = nvrtc_library.header_folders()
        include_dirs = tuple(str(d) for d in found.dirs) if found else ()
    if checked.headers and not include_dirs:
        return failed_result(arch, header_search.NO_HEADERS_MESSAGE, version=version, headers=checked.headers)
    options = build_options(arch, settings, include_dirs, version)
    text = (
        with_prelude(checked.text, checked.headers)
        if settings.prelude
        else f'#line 1 "{CANDIDATE_FILE}"\n' + checked.text
    )
    text = STATE_ANCHORS + text

    ok_code = nvrtc.nvrtcResult.NVRTC_SUCCESS
    started = time.perf_counter()
    err, prog = nvrtc.nvrtcCreateProgram(text.encode(), PROGRAM_NAME.encode(), 0, [], [])
    if err != ok_code:
        return failed_result(arch, f"nvrtcCreateProgram failed ({err.name})", version=version)
    try:
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
        raw_log = _program_string(nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog, prog)
        cubin = ptx = None
        if result == ok_code:
            cubin = _program_string(nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN, prog)
            ptx_bytes = _program_string(nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX, prog)
            ptx = _scrub(ptx_bytes.decode(errors="replace"), include_dirs)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    elapsed = time.perf_counter() - started

    # NVRTC ends the log with a NUL, and puts another between the compiler's part and ptxas's
    # error lines when ptxas fails.
    raw_log = raw_log.replace(b"\0", b"")
    log = _scrub(raw_log.decode(errors="replace"), include_dirs)
    log = _cap(keep_own_diagnostics(log, partial(_is_header, include_dirs)), settings.max_log_bytes)
    diagnostics = parse_diagnostics(log, checked.text, limit=settings.max_diagnostics)
    kernels = parse_ptxas(log)
    globals_, writes = device_globals(ptx) if ptx else ((), {})
    ok = result == ok_code and cubin is not None
    return CompileResult(
        ok=ok,
        arch=arch,
        cubin=cubin if ok else None,
        ptx=ptx,
        log=log,
        diagnostics=diagnostics,
        kernels=with_global_writes(kernels, writes),
        ptx_entries=ptx_entries(ptx) if ptx else {},
        nvrtc_version=version,
        options=options,
        elapsed_s=elapsed,
        error=None if ok else _error_line(result.name, diagnostics),
        device_globals=globals_,
        precision_hints=precision_hints(ptx) if ptx else (),
        headers=checked.headers,
    )


def compile_in_process(
    source: str | bytes,
    arch: str | int,
    settings: CompileSettings | None = None,
    include_dirs: tuple[str, ...] | None = None,
) -> CompileResult:
    """Check and compile `source` here, with no time limit: for trusted sources (the GPU worker's
    harness) and for code already running in a compiler child process. Raises FormatError when
    the source breaks the policy, CompilerUnavailableError when NVRTC cannot be loaded."""
    settings = settings or CompileSettings()
    return compile_checked(check_source(source, settings), arch, settings, include_dirs)


# One header from each corner of the include folders (the fp16 intrinsics, crt/, cooperative groups,
# libcu++ under cccl/): a jail that hides any of them fails its proof. Together 0.9 s to compile.
_SELF_TEST_HEADERS = ("cuda_fp16.h", "mma.h", "cooperative_groups.h", "cuda/std/cstdint")


def self_test_for(header_dirs: Sequence[str | os.PathLike[str]]) -> Callable[[tuple[str, ...]], str | None]:
    """The proof a jail gives that it left the compiler working (engine/compile/sandbox.py): a kernel
    that includes those of _SELF_TEST_HEADERS that `header_dirs` hold (seen now, before any jail)
    must compile with the include folders as the jailed process names them. The proof returns None,
    or the first error."""
    present = tuple(h for h in _SELF_TEST_HEADERS if any(os.path.isfile(os.path.join(d, h)) for d in header_dirs))

    def prove(include_dirs: tuple[str, ...]) -> str | None:
        headers = present if include_dirs else ()
        include = "".join(f"#include <{h}>\n" for h in headers)
        probe = include + 'extern "C" __global__ void cuda_llm_probe(float* x) { x[threadIdx.x] = 0.0f; }\n'
        archs = supported_archs()
        arch = "sm_90" if 90 in archs else f"sm_{archs[-1]}"
        result = compile_checked(CheckedSource(probe, headers), arch, CompileSettings(), include_dirs)
        return None if result.ok else f"the probe kernel no longer compiles ({result.error})"

    return prove


def warm_up() -> dict[str, Any]:
    """Load NVRTC, find (or extract) the headers and compile a trivial kernel, so a compiler
    process's first real compile is as fast as its later ones. Returns what `doctor` shows."""
    version = nvrtc_library.version()
    found = nvrtc_library.header_folders()
    probe = 'extern "C" __global__ void cuda_llm_probe(float* x) { x[threadIdx.x] = 0.0f; }\n'
    archs = supported_archs()
    arch = "sm_90" if 90 in archs else f"sm_{archs[-1]}"
    compile_checked(CheckedSource(probe, ()), arch, CompileSettings())
    return {
        "nvrtc_version": version,
        "supported_archs": archs,
        "headers": found.origin if found else None,
        "header_dirs": tuple(found.dirs) if found else (),
    }
