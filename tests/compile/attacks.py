"""Sources that try to make the compiler read a host file, and tricky ones that must not be refused.

Each attack names the file it tries to read as FILE, so one source serves /etc/passwd and
/etc/hostname alike.
"""

from __future__ import annotations

from pathlib import Path

K = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n'

ATTACKS: dict[str, str] = {
    "quoted_absolute": '#include "FILE"\n',
    "quoted_relative": '#include "secret.h"\n',
    "angle_absolute": "#include <FILE>\n",
    "angle_dotdot": "#include <" + "../" * 20 + "..FILE>\n",
    "allowed_prefix_dotdot": "#include <cuda/std/" + "../" * 20 + "..FILE>\n",
    "macro_include": "#define H <FILE>\n#include H\n",
    "macro_quoted_include": '#define H "FILE"\n#include H\n',
    "function_macro_include": "#define F(x) <x>\n#include F(FILE)\n",
    "include_next": "#include_next <FILE>\n",
    "import": '#import "FILE"\n',
    "embed": '#embed "FILE"\nint x;\n',
    "has_include_in_if": '#if __has_include("FILE")\nint leak;\n#endif\n',
    "has_include_in_code": "constexpr bool b = __has_include(<FILE>);\n",
    "has_include_next": '#if __has_include_next("FILE")\n#endif\n',
    "has_embed": '#if __has_embed("FILE")\n#endif\n',
    "digraph": '%:include "FILE"\n',
    "digraph_spaced": "  %:  include <FILE>\n",
    "trigraph": '??=include "FILE"\n',
    "splice_after_hash": '#\\\ninclude "FILE"\n',
    "splice_in_name": "#inc\\\nlude <FILE>\n",
    "splice_in_header_name": '#include "FI\\\nLE"\n',
    "splice_before_header": "#include\\\n <FILE>\n",
    "comment_after_hash": '#/**/include "FILE"\n',
    "comment_inside_directive": "# /* x */ include <FILE>\n",
    "multiline_comment_in_directive": '#include /*\n*/ "FILE"\n',
    "block_comment_before_hash": '/* a\n */ #include "FILE"\n',
    "comment_in_brackets": "#include </**/FILE>\n",
    "digit_separator_hiding": "int x = 1'0;\n#include \"FILE\"\nint y = 2'0;\n",
    "char_quote_hiding": 'char c = \'"\';\n#include "FILE"\nconst char* s = "";\n',
    "unterminated_string": 'const char* s = "abc;\n#include "FILE"\n',
    "raw_string": 'const char* s = R"x(\n)x";\n#include "FILE"\n',
    "pragma_message": '#pragma message("FILE")\n',
    "pragma_gcc_dependency": '#pragma GCC dependency "FILE"\n',
    "pragma_include_alias": "#pragma include_alias(<cuda_fp16.h>, <FILE>)\n#include <cuda_fp16.h>\n",
    "pragma_push_macro": '#pragma push_macro("X")\n',
    "pragma_operator_message": '_Pragma("message(\\"FILE\\")")\n',
    "pragma_operator_macro": "#define P(x) _Pragma(#x)\nP(message(FILE))\n",
    "ms_pragma": "__pragma(message(FILE))\n",
    "line_directive": '#line 1 "FILE"\n',
    "linemarker": '# 1 "FILE"\n',
    "carriage_return_break": 'int a;\r#include "FILE"\n',
    "unicode_line_separator": 'int a; // x\u2028#include "FILE"\n',
    "backslash_space_newline": '// x \\ \n#include "FILE"\n',
    "unknown_directive": '#ident "FILE"\n',
    "include_in_disabled_block": '#if 0\n#include "FILE"\n#endif\n',
    "trailing_tokens": '#include <cuda_fp16.h> "FILE"\n',
    # A backslash before a line end that phase 2 left in a literal escapes nothing: the compiler
    # ends the literal at the line end and reads the next line as a directive.
    "string_backslash_before_empty_line": '#define X "a\\\\\n\n#include <FILE> //"\n',
    "char_backslash_before_empty_line": "#warning don't\\\\\n\n#include <FILE> //'\n",
    "string_backslash_after_endif": '#if 0\n#endif "a\\\\\n\n#include <FILE> //"\n',
    # Pasting and universal character names assemble what no check sees spelled out.
    "pasted_pragma": '#define CAT(a, b) a##b\nCAT(_Pra, gma)("message(\\"FILE\\")")\n',
    "pasted_has_include": "#define CAT(a, b) a##b\n#if CAT(__has_, include)(<FILE>)\n#warning found\n#endif\n",
    "digraph_pasting": '#define CAT(a, b) a%:%:b\nCAT(_Pra, gma)("message(\\"FILE\\")")\n',
    "ucn_pragma": '_Pr\\u0061gma("message(\\"FILE\\")")\n',
    "ucn_has_include": "#if __has_incl\\u0075de(<FILE>)\n#endif\n",
    # In an #if 0 group NVRTC reads the digit separator of 1'0 as a char literal running to the line
    # end, so the /* there opens nothing: #endif closes the group and the #include is read.
    "digit_separator_in_skipped_group": '#if 0\nint a = 1\'0 /*\n#endif\n#include "FILE"\n*/\n#endif\n',
    # NVRTC reads the quote after 0x as a (misplaced) digit separator and the next one as a char
    # literal to the line end, so the /* opens nothing and the #include is read.
    "quote_after_a_number": "int a = 1'0x''/*\n#include <FILE>\n*/;\n",
    "hex_separator_in_skipped_group": "#if 0\nint a = 0x1'f; /*\n#endif\n#include <FILE>\n#if 0\n*/\n#endif\n",
    # An allowed header's own macros paste and emit pragmas for the candidate: libcu++'s _CCCL_PP_CAT
    # pastes __has_include (a file probe) or _Pragma together, and _CCCL_PRAGMA(x) is _Pragma(#x), past
    # the pragma allow list; a #define that renames one still spells its name.
    "header_macro_pasted_has_include": "#include <cuda/std/cstdint>\n#if _CCCL_PP_CAT(__has_, include)(<FILE>)\n"
    "#warning found\n#endif\n",
    "header_macro_pasted_pragma": '#include <cuda/std/cstdint>\n_CCCL_PP_CAT(_Pra, gma)("message(\\"FILE\\")")\n',
    "header_macro_pragma": '#include <cuda/std/cstdint>\n_CCCL_PRAGMA(message("FILE"))\n',
    "header_macro_renamed": "#include <cuda/std/cstdint>\n#define CAT _CCCL_PP_CAT\n#if CAT(__has_, include)(<FILE>)\n"
    "#warning found\n#endif\n",
}

# What NVRTC 13.5 does with each attack when nothing stops it (no policy, no jail): these open the
# file named FILE (a planted one in tests/compile/test_nvrtc.py), and these tell whether it exists.
# The rest do nothing on this NVRTC (no #embed, no __has_embed, trigraphs off in C++17, #import
# unknown, _Pragma("message") only prints) but are refused all the same: another compiler version may
# do more, and nothing honest needs them.
READ_BY_NVRTC: frozenset[str] = frozenset(
    {
        "quoted_absolute",
        "angle_absolute",
        "angle_dotdot",
        "allowed_prefix_dotdot",
        "macro_include",
        "macro_quoted_include",
        "function_macro_include",
        "include_next",
        "digraph",
        "digraph_spaced",
        "splice_after_hash",
        "splice_in_name",
        "splice_before_header",
        "comment_after_hash",
        "comment_inside_directive",
        "multiline_comment_in_directive",
        "block_comment_before_hash",
        "digit_separator_hiding",
        "char_quote_hiding",
        "unterminated_string",
        "raw_string",
        "backslash_space_newline",
        "string_backslash_before_empty_line",
        "char_backslash_before_empty_line",
        "string_backslash_after_endif",
        "digit_separator_in_skipped_group",
        "hex_separator_in_skipped_group",
        "quote_after_a_number",
    }
)
PROBED_BY_NVRTC: frozenset[str] = frozenset(
    {"has_include_in_if", "pasted_has_include", "header_macro_pasted_has_include", "header_macro_renamed"}
)

# The CUDA headers as kernels use them: half math, cooperative groups, wmma, libcu++ types and math,
# the math constants, and the keywords whose toolkit definitions paste in an MSVC branch (__device__,
# __shared__) or whose libcu++ ones paste an ABI version (INFINITY through <cuda/std/cmath> in 13.0).
HEADERS_IN_USE = """#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <mma.h>
#include <math_constants.h>
#include <cuda/std/cstdint>
#include <cuda/std/cmath>
namespace cg = cooperative_groups;
__device__ __forceinline__ float half_math(__half a, __half b) {
    return __half2float(__hfma(a, b, __float2half(1.0f))) + (INFINITY > CUDART_INF_F ? 1.0f : 0.0f);
}
__device__ void group_sync() { cg::this_thread_block().sync(); }
__device__ cuda::std::uint32_t wmma_zero(float* out) {
    __shared__ float tile[256];
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
    nvcuda::wmma::fill_fragment(acc, 0.0f);
    nvcuda::wmma::store_matrix_sync(tile, acc, 16, nvcuda::wmma::mem_row_major);
    return static_cast<cuda::std::uint32_t>(cuda::std::fabs(tile[0]));
}
"""

# Sources a naive filter would refuse, all harmless: includes in comments and strings, a line
# comment continued onto the next line (the compiler reads that line as comment too), pragmas
# from the allow list, digit separators, multi-line macros.
HARMLESS: dict[str, str] = {
    "include_in_line_comment": '// #include "FILE"\n' + K,
    "include_in_block_comment": '/* #include <FILE>\n   #include "FILE" */\n' + K,
    "include_in_string": '__device__ const char s[] = "#include <FILE>";\n' + K,
    "include_in_char_and_string": "__device__ const char c = '#';\n"
    '__device__ const char s[] = "%:include \\"FILE\\"";\n' + K,
    "continued_line_comment": '// a note \\\n#include "FILE"\n' + K,
    "pragmas": "#pragma once\n#pragma unroll 4\n#pragma nv_diag_suppress 177\n"
    "#pragma nv_diagnostic push\n#pragma nv_diagnostic pop\n" + K,
    "pragma_operator": '#define UNROLL _Pragma("unroll")\n' + K,
    "digit_separators": "__device__ const int big = 1'000'000;\n" + K,
    "multiline_macro": "#define IDX(r, c, w) \\\n    ((r) * (w) + (c))\n" + K,
    "inline_ptx": 'extern "C" __global__ void lane(int* o) { int l;\n'
    '  asm volatile("mov.u32 %0, %%laneid;" : "=r"(l)); o[threadIdx.x] = l; }\n',
    "comment_after_include": "#include <cuda_fp16.h>  // half types\n" + K,
    "crlf_line_ends": "#include <cuda_fp16.h>\r\n" + K.replace("\n", "\r\n"),
    "unicode_in_comment": "// sum \u2264 n \u2014 fine\n" + K,
    "cuda_headers_in_use": HEADERS_IN_USE + K,
}

SECRET_FILES = (Path("/etc/passwd"), Path("/etc/hostname"))


def attack(name: str, file: Path | str = "/etc/passwd") -> str:
    return ATTACKS[name].replace("FILE", str(file)) + K


def secret_snippets(path: Path) -> list[str]:
    """Lines of a host file long enough that finding one in compiler output means it leaked."""
    if not path.is_file():
        return []
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if len(line.strip()) >= 8]


def unguarded_compile(source: str) -> tuple[bool, str]:
    """NVRTC itself on `source`, in this process: no policy, no jail, the raw log, the CUDA headers'
    folders searched (so the attacks that climb out of them can). What an attack does when nothing
    stops it; never for anything but proving that."""
    from cuda_llm.engine.compile import nvrtc, nvrtc_library

    raw = nvrtc_library.load()
    found = nvrtc_library.header_folders()
    options = [b"-arch=sm_90", b"--std=c++17", *(f"-I{d}".encode() for d in (found.dirs if found else ()))]
    _, prog = raw.nvrtcCreateProgram(source.encode(), nvrtc.PROGRAM_NAME.encode(), 0, [], [])
    try:
        (result,) = raw.nvrtcCompileProgram(prog, len(options), options)
        _, size = raw.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        raw.nvrtcGetProgramLog(prog, log)
    finally:
        raw.nvrtcDestroyProgram(prog)
    return result == raw.nvrtcResult.NVRTC_SUCCESS, log.decode(errors="replace")
