"""Parsing NVRTC logs, on logs recorded from NVRTC 13.5 (the compile tests check live ones)."""

from __future__ import annotations

from cuda_llm.engine.compile.log import parse_diagnostics, parse_ptxas
from tests.compile.kernels import BROKEN

BROKEN_LOG = (
    'candidate.cu(4): error: identifier "y" is undefined\n'
    "  \tif (i < n) a[i] = y + 1.0f;\n"
    "  \t                  ^\n"
    "\n"
    "candidate.cu(5): error: expected an expression\n"
    "      float z = ;\n"
    "                ^\n"
    "\n"
    '2 errors detected in the compilation of "candidate.cu".\n'
)

HEADER_WARNING_LOG = (
    'cuda/std/climits(46): warning #47-D: incompatible redefinition of macro "INT_MAX" (declared '
    "at line 1 of candidate.cu)\n"
    "  #  define INT_MAX   0x7fffffff\n"
    "            ^\n"
    "\n"
    'Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"\n'
    "\n"
    "ptxas info    : 0 bytes gmem\n"
)

RECURSION_LOG = (
    'candidate.cu(1): error: excessive recursion at instantiation of class "R<200>"\n'
    "  template <int N> struct R { static constexpr int v = R<N + 1>::v; };\n"
    "                                                                 ^\n"
    "          detected during:\n"
    '            instantiation of class "R<N> [with N=199]" at line 1\n'
    "            [ 190 instantiation contexts not shown ]\n"
    '            instantiation of class "R<N> [with N=0]" at line 2\n'
    "\n"
    '1 error detected in the compilation of "candidate.cu".\n'
)

TWO_KERNELS_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'second' for 'sm_90'
ptxas info    : Function properties for second
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem
ptxas info    : Compile time = 2.243 ms
ptxas info    : Compiling entry function 'first' for 'sm_90'
ptxas info    : Function properties for first
ptxas         .     64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 22 registers, used 0 barriers, 64 bytes cumulative stack size
ptxas info    : Compile time = 2.682 ms
ptxas info    : Function properties for _Z6helperf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""

SM80_SPILLS_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'spills' for 'sm_80'
ptxas info    : Function properties for spills
ptxas         .     272 bytes stack frame, 484 bytes spill stores, 484 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 272 bytes cumulative stack size, 372 bytes cmem[0]
ptxas info    : Compile time = 14.919 ms
"""

PTXAS_ERROR_LOG = """\
ptxas info    : Used 10 registers, used 1 barriers, 80000 bytes smem
ptxas error   : Entry function 'k' uses too much shared data (0x13880 bytes, 0xc000 max)
"""


def test_errors_with_line_column_and_the_candidates_own_line() -> None:
    first, second = parse_diagnostics(BROKEN_LOG, BROKEN)
    assert (first.severity, first.line, first.column) == ("error", 4, 20)
    assert first.message == 'identifier "y" is undefined'
    assert first.source_line == "\tif (i < n) a[i] = y + 1.0f;"
    assert first.source_line[first.column - 1] == "y"
    assert (second.line, second.column, second.message) == (5, 15, "expected an expression")
    assert second.source_line == "    float z = ;"
    assert second.source_line[second.column - 1] == ";"
    assert first.one_line() == 'candidate.cu(4): error: identifier "y" is undefined'


def test_a_warning_inside_a_header_keeps_the_header_and_the_code() -> None:
    (diag,) = parse_diagnostics(HEADER_WARNING_LOG, "")
    assert diag.severity == "warning"
    assert diag.file == "cuda/std/climits"
    assert diag.line is None and diag.column is None  # not a line of the candidate
    assert diag.source_line == "#  define INT_MAX   0x7fffffff"
    assert diag.message.endswith("[#47-D]")


def test_instantiation_context_goes_to_detail() -> None:
    source = (
        "template <int N> struct R { static constexpr int v = R<N + 1>::v; };\n"
        'extern "C" __global__ void k(int* a) { a[0] = R<0>::v; }\n'
    )
    (diag,) = parse_diagnostics(RECURSION_LOG, source)
    assert diag.line == 1 and diag.column == 64
    assert diag.detail.splitlines()[0] == "detected during:"
    assert diag.detail.splitlines()[-1] == 'instantiation of class "R<N> [with N=0]" at line 2'


def test_ptxas_errors_are_diagnostics() -> None:
    (diag,) = parse_diagnostics(PTXAS_ERROR_LOG, "")
    assert (diag.severity, diag.file, diag.line) == ("error", "ptxas", None)
    assert diag.one_line() == ("ptxas: error: Entry function 'k' uses too much shared data (0x13880 bytes, 0xc000 max)")


def test_the_diagnostic_limit() -> None:
    assert len(parse_diagnostics(BROKEN_LOG, BROKEN, limit=1)) == 1


def test_resources_of_each_entry_and_not_of_device_functions() -> None:
    second, first = parse_ptxas(TWO_KERNELS_LOG)
    assert second.name == "second"
    assert (second.registers, second.shared_bytes, second.barriers) == (10, 256, 1)
    assert first.name == "first"
    assert (first.registers, first.stack_frame_bytes, first.cumulative_stack_bytes) == (22, 64, 64)
    assert first.shared_bytes == 0 and first.barriers == 0


def test_spills_and_constant_bank() -> None:
    (k,) = parse_ptxas(SM80_SPILLS_LOG)
    assert (k.spill_store_bytes, k.spill_load_bytes, k.stack_frame_bytes) == (484, 484, 272)
    assert (k.registers, k.constant_bytes, k.cumulative_stack_bytes) == (32, 372, 272)


def test_nvcc_style_frame_lines_without_the_ptxas_prefix() -> None:
    log = SM80_SPILLS_LOG.replace("ptxas         .     272", "    272")
    (k,) = parse_ptxas(log)
    assert k.spill_store_bytes == 484


def test_diagnostics_about_other_files_lose_their_text():
    from cuda_llm.engine.compile.log import FOREIGN_MESSAGE, keep_own_diagnostics

    log = (
        "/etc/passwd(1): error: this declaration has no storage class or type specifier\n"
        "  root:x:0:0:root:/root:/bin/bash\n"
        "  ^\n"
        "\n"
        'cuda_fp16.h(200): error: identifier "__half" is undefined\n'
        "  __half __double2half(const double a);\n"
        "  ^\n"
        "\n"
        'candidate.cu(4): error: identifier "y" is undefined\n'
        "      if (i < n) a[i] = y + 1.0f;\n"
        "                        ^\n"
        "\n"
        "secret.h(3): warning: something\n"
        "  TOKEN=abc\n"
        "      detected during instantiation\n"
    )
    kept = keep_own_diagnostics(log, lambda name: name == "cuda_fp16.h")
    assert "root:x" not in kept and "TOKEN=abc" not in kept and "/etc/passwd" not in kept
    assert kept.count(FOREIGN_MESSAGE) == 2
    assert "(an included file)(0): warning: " + FOREIGN_MESSAGE in kept
    assert "__half __double2half" in kept and "a[i] = y + 1.0f" in kept
