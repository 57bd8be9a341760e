"""Compiling in process with the real NVRTC: diagnostics, resources, PTX facts, the prelude, and
that no host file reaches a result."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from cuda_llm.engine.compile import nvrtc, nvrtc_library
from cuda_llm.engine.compile.includes import PolicyViolation
from cuda_llm.engine.compile.nvrtc import compile_checked, compile_in_process
from cuda_llm.engine.compile.prelude import PRELUDE_MACROS
from cuda_llm.engine.compile.result import CompileResult
from cuda_llm.engine.compile.source import CheckedSource
from cuda_llm.engine.core.paths import user_cache_dir
from cuda_llm.engine.core.settings import CompileSettings
from tests.compile import kernels
from tests.compile.attacks import (
    ATTACKS,
    HARMLESS,
    PROBED_BY_NVRTC,
    READ_BY_NVRTC,
    SECRET_FILES,
    K,
    attack,
    secret_snippets,
    unguarded_compile,
)
from tests.compile.conftest import needs_nvrtc

pytestmark = needs_nvrtc
SETTINGS = CompileSettings()


def _everything(result: CompileResult) -> str:
    parts = [result.log, result.ptx or "", result.error or ""]
    parts += [f"{d.message} {d.source_line} {d.detail}" for d in result.diagnostics]
    return "\n".join(parts)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_a_kernel_compiles_to_cubin_and_ptx(arch: str) -> None:
    started = time.perf_counter()  # the clock the compile's own figure is read on
    result = compile_in_process(kernels.TRIVIAL, arch)
    took = time.perf_counter() - started
    assert result.ok and result.error is None and not result.timed_out
    assert result.cubin is not None and result.cubin[:4] == b"\x7fELF"
    assert result.ptx is not None and f".target {arch}" in result.ptx
    assert result.arch == arch
    assert result.nvrtc_version >= (13, 0)
    assert f"-arch={arch}" in result.options and "--std=c++17" in result.options
    assert "-lineinfo" in result.options and "--ptxas-options=-v" in result.options
    assert not any("fast" in o for o in result.options)  # precision is the task's to decide
    assert ("--no-cache" in result.options) == (result.nvrtc_version >= (12, 9))
    assert "\0" not in result.log
    assert 0 < result.elapsed_s <= took  # the compile's own time, within the call's (no fixed bound)


def test_a_syntax_error_has_line_column_and_source_line() -> None:
    result = compile_in_process(kernels.BROKEN, "sm_90")
    assert not result.ok and result.cubin is None
    undefined, syntax = result.errors
    assert (undefined.line, undefined.column) == (4, 20)
    assert undefined.message == 'identifier "y" is undefined'
    assert undefined.source_line == "\tif (i < n) a[i] = y + 1.0f;"
    assert (syntax.line, syntax.column, syntax.message) == (5, 15, "expected an expression")
    assert syntax.source_line == "    float z = ;"
    assert result.error == 'candidate.cu(4): error: identifier "y" is undefined (and 1 more error)'


def test_an_undefined_identifier_on_line_one() -> None:
    source = 'extern "C" __global__ void k(float* a) { a[0] = missing_name; }\n'
    result = compile_in_process(source, "sm_90")
    (error,) = result.errors
    assert (error.line, error.message) == (1, 'identifier "missing_name" is undefined')
    assert error.source_line is not None
    assert error.source_line[error.column - 1 :].startswith("missing_name")


def _ptxas_numbers(log: str, kernel: str) -> dict[str, int]:
    """The same figures, read off the log independently of engine.compile.log."""
    block = log.split(f"Compiling entry function '{kernel}'", 1)[1]
    numbers = {}
    for key, pattern in {
        "registers": r"Used (\d+) registers",
        "stack": r"(\d+) bytes stack frame",
        "spill_store": r"(\d+) bytes spill stores",
        "spill_load": r"(\d+) bytes spill loads",
        "shared": r"(\d+) bytes smem",
    }.items():
        m = re.search(pattern, block)
        numbers[key] = int(m.group(1)) if m else 0
    return numbers


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_spills_are_reported_as_ptxas_says(arch: str) -> None:
    result = compile_in_process(kernels.SPILLS, arch)
    assert result.ok
    k = result.kernel("spills")
    assert k is not None
    said = _ptxas_numbers(result.log, "spills")
    assert k.spill_store_bytes == said["spill_store"] > 0
    assert k.spill_load_bytes == said["spill_load"] > 0
    assert k.stack_frame_bytes == said["stack"] > 0
    assert k.registers == said["registers"] <= 32  # __launch_bounds__(1024, 2)


def test_the_same_source_twice_reports_its_resources_twice() -> None:
    """Against NVRTC's driver-backed cache (GPU machines only), whose hits come with an empty log."""
    first, second = (compile_in_process(kernels.SPILLS + f"// {i}\n", "sm_90") for i in range(2))
    assert first.kernels == second.kernels != ()
    assert "Compiling entry function 'spills'" in second.log


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_static_shared_memory_is_reported(arch: str) -> None:
    result = compile_in_process(kernels.SHARED_TILE, arch)
    k = result.kernel("transpose_tile")
    assert k is not None
    assert k.shared_bytes == _ptxas_numbers(result.log, "transpose_tile")["shared"] == 32 * 33 * 4
    assert k.barriers == 1
    assert k.spill_store_bytes == k.spill_load_bytes == 0


def test_ptx_entry_parameter_sizes() -> None:
    result = compile_in_process(kernels.PARAMS, "sm_90")
    assert result.ptx_entries == {"params": (8, 4, 8, 1, 2), "by_value": (20, 8), "none": ()}


def test_precision_hints_find_float2half() -> None:
    result = compile_in_process(kernels.HALF_SHORTCUT, "sm_90")
    assert result.ok
    assert "fp16 conversion: cvt.rn.f16.f32" in result.precision_hints
    assert any(h.startswith("fp16 arithmetic") for h in result.precision_hints)
    assert compile_in_process(kernels.TRIVIAL, "sm_90").precision_hints == ()


def test_device_globals_are_flagged_per_kernel() -> None:
    result = compile_in_process(kernels.DEVICE_GLOBALS, "sm_90")
    assert result.ok and result.writes_device_globals
    assert {g.name: g.written for g in result.device_globals} == {
        "calls": True,
        "lut": False,
        "cache": True,
    }
    writes = {k.name: k.writes_device_globals for k in result.kernels}
    assert writes == {"counted": ("calls",), "remember": ("cache",), "reads": ()}
    clean = compile_in_process(kernels.TRIVIAL, "sm_90")
    assert clean.device_globals == () and not clean.writes_device_globals


@pytest.mark.parametrize("header", ["cuda_fp16.h", "cuda/std/cstdint", "cooperative_groups.h", "mma.h"])
def test_allowed_includes_compile(header: str) -> None:
    result = compile_in_process(f"#include <{header}>\n" + K, "sm_90")
    assert result.ok, result.log
    assert result.headers == (header,)
    assert result.warnings == ()


def test_the_prelude_defines_what_nvrtc_lacks_and_keeps_line_numbers() -> None:
    uses = " + ".join(f"(double)({m})" for m in PRELUDE_MACROS)
    signature = 'extern "C" __global__ void k(double* out, uint32_t a, int64_t b)'
    source = f"{signature} {{ out[0] = {uses}; }}\n__device__ int broken = ;\n"
    result = compile_in_process(source, "sm_90")
    (error,) = result.errors
    assert error.line == 2 and error.message == "expected an expression"


def test_the_prelude_is_quiet_next_to_libcudacxx() -> None:
    # These headers define INT_MAX, FLT_MAX, INFINITY... themselves; redefinitions would warn.
    source = (
        "#include <cooperative_groups.h>\n#include <cuda/std/cstdint>\n#include <cuda/std/limits>\n"
        "#include <cuda/std/cmath>\n#include <cuda/barrier>\n#include <cuda/atomic>\n"
        'extern "C" __global__ void k(float* a, uint32_t n) {\n'
        "    a[0] = INFINITY + FLT_MAX + (float)INT_MAX + (float)(cuda::std::uint32_t)n; }\n"
    )
    result = compile_in_process(source, "sm_90")
    assert result.ok, result.log
    assert result.diagnostics == ()


def test_the_prelude_can_be_switched_off() -> None:
    off = CompileSettings(prelude=False)
    source = 'extern "C" __global__ void k(float* a) { a[0] = INFINITY; }\n'
    assert compile_in_process(source, "sm_90").ok
    (error,) = compile_in_process(source, "sm_90", off).errors
    assert error.message == 'identifier "INFINITY" is undefined'


def test_no_host_path_in_log_or_ptx() -> None:
    # With its warning switched back on, <cuda/std/climits> redefining the prelude's INT_MAX warns
    # from inside the header.
    source = "#pragma nv_diag_default 47\n#include <cuda/std/climits>\n" + K
    result = compile_in_process(source, "sm_90")
    assert result.ok
    warning = next(d for d in result.warnings if "INT_MAX" in d.message)
    assert warning.file == "cuda/std/climits" and warning.line is None
    assert "cuda-llm-prelude.h" in warning.message
    text = _everything(result)
    assert str(user_cache_dir()) not in text
    assert "/dev/null" not in text
    assert str(Path.cwd()) not in text
    assert re.search(r'\.file\s+1\s+"candidate\.cu"', result.ptx or "")


def test_an_unknown_arch_is_a_clear_failure() -> None:
    result = compile_in_process(kernels.TRIVIAL, "sm_42")
    assert not result.ok and result.error is not None
    assert "cannot compile for sm_42" in result.error
    assert compile_in_process(kernels.TRIVIAL, 90).arch == "sm_90"


def test_a_ptxas_failure_is_reported() -> None:
    source = (
        'extern "C" __global__ void k(float* a) { __shared__ float s[20000];\n'
        "  s[threadIdx.x] = a[0]; __syncthreads(); a[1] = s[19999 - threadIdx.x]; }\n"
    )
    result = compile_in_process(source, "sm_90")
    assert not result.ok
    assert result.error is not None and result.error.startswith("ptxas: error: Entry function 'k'")
    assert "too much shared data" in result.error


# -- host files ------------------------------------------------------------------------------------


def _secrets() -> list[tuple[Path, list[str]]]:
    found = [(p, secret_snippets(p)) for p in SECRET_FILES]
    return [(p, s) for p, s in found if s]


def _leaked(text: str) -> list[str]:
    return [line for _, lines in _secrets() for line in lines if line in text]


@pytest.mark.parametrize(
    "name",
    [
        "quoted_absolute",
        "angle_absolute",
        "macro_include",
        "digraph",
        "string_backslash_before_empty_line",
        "char_backslash_before_empty_line",
        "string_backslash_after_endif",
    ],
)
def test_the_attacks_are_real_without_the_policy(name: str) -> None:
    """Control: given to NVRTC itself, past the policy, the host file reaches the raw log. Past the
    policy but through our compile, the log keeps nothing of it (diagnostics about files that are
    neither the candidate nor a CUDA header lose their text); with the policy, nothing is compiled."""
    path = Path("/etc/passwd")
    if not secret_snippets(path):
        pytest.skip("no readable /etc/passwd")
    source = attack(name, path)
    assert _leaked(_raw_nvrtc_log(source))
    result = compile_checked(CheckedSource(source, ()), "sm_90", SETTINGS)
    assert not result.ok and not _leaked(_everything(result))
    assert "an error in an included file" in result.log
    with pytest.raises(PolicyViolation) as info:
        compile_in_process(source, "sm_90")
    assert not _leaked(str(info.value))


def _raw_nvrtc_log(source: str) -> str:
    from cuda.bindings import nvrtc as raw

    _, prog = raw.nvrtcCreateProgram(source.encode(), b"candidate.cu", 0, [], [])
    try:
        raw.nvrtcCompileProgram(prog, 1, [b"-arch=sm_90"])
        _, size = raw.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        raw.nvrtcGetProgramLog(prog, log)
    finally:
        raw.nvrtcDestroyProgram(prog)
    return log.decode(errors="replace")


def _older_than(version: tuple[int, int]) -> bool:
    try:
        return nvrtc_library.version() < version
    except Exception:  # no NVRTC: needs_nvrtc says so
        return True


@pytest.mark.skipif(_older_than((13, 5)), reason="catalogued on NVRTC 13.5")
@pytest.mark.parametrize("name", sorted(READ_BY_NVRTC | PROBED_BY_NVRTC))
def test_the_attacks_are_real_when_nothing_stops_them(name: str, tmp_path: Path) -> None:
    """The corpus is not a list of guesses: unguarded, NVRTC opens the planted file (its #error shows)
    or tells whether it exists (the #warning of the probe shows only when it does)."""
    marker = f"PLANTED_{tmp_path.name}"
    planted = tmp_path / "planted.h"
    planted.write_text(f"#error {marker}\n")
    if name in READ_BY_NVRTC:
        _ok, log = unguarded_compile(attack(name, planted))
        assert marker in log, log
    else:

        def probe(path: Path) -> str:
            return unguarded_compile(attack(name, path).replace("#endif", "#warning found\n#endif"))[1]

        assert "found" in probe(planted) and "found" not in probe(tmp_path / "absent.h")


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_no_attack_gets_a_host_file_into_any_output(name: str) -> None:
    if not _secrets():
        pytest.skip("no readable /etc/passwd or /etc/hostname")
    for path, _ in _secrets():
        with pytest.raises(PolicyViolation) as info:
            compile_in_process(attack(name, path), "sm_90")
        assert not _leaked(str(info.value))


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_harmless_tricks_compile_without_reading_a_host_file(name: str) -> None:
    for path in SECRET_FILES:
        result = compile_in_process(HARMLESS[name].replace("FILE", str(path)), "sm_90")
        assert result.ok, result.log
        assert not _leaked(_everything(result))


def test_the_working_directory_is_never_searched(tmp_path: Path, monkeypatch) -> None:
    """Defence in depth, past the policy: a quoted include does not find a file in the working
    directory, because the program is named under /dev/null. The control shows that with a plain
    name it would."""
    (tmp_path / "secret.h").write_text("SECRET_TOKEN_4711 leaked;\n")
    monkeypatch.chdir(tmp_path)
    source = CheckedSource('#include "secret.h"\n' + K, ())
    result = compile_checked(source, "sm_90", SETTINGS)
    assert not result.ok and "SECRET_TOKEN_4711" not in _everything(result)
    assert 'cannot open source file "secret.h"' in result.log
    monkeypatch.setattr(nvrtc, "PROGRAM_NAME", "candidate.cu")
    control = compile_checked(source, "sm_90", SETTINGS)
    # Found and read this time; the diagnostic about it keeps none of its text.
    assert "cannot open source file" not in control.log and "an error in an included file" in control.log
    assert "SECRET_TOKEN_4711" not in _everything(control)
