"""Exact behaviour of engine/compile/includes.py (the include and preprocessor policy) on small sources:
each refusal with its line and its message, the lexer's blanking of comments and literals, the
directive scanner's handling of splices, comments, spaces and null directives, the pragma allow list
and the header hints. Pinned so that a change of behaviour shows (the mutation run's survivors)."""

from __future__ import annotations

import pytest

from cuda_llm.engine.compile import includes as inc
from cuda_llm.engine.compile.header_macros import NO_HEADERS, HeaderMacros
from cuda_llm.engine.compile.includes import PolicyViolation, check_source_policy, pragma_allowed
from cuda_llm.engine.core.errors import FormatError

PRAGMAS = (
    "allowed pragmas: unroll [N], nounroll, once, "
    "[nv_]diag_{suppress,default,warning,error,once} <numbers or names>, nv_diagnostic push|pop"
)
HEAD = (
    "the source was rejected before compiling (only #include <X> of allowed CUDA headers "
    "and harmless pragmas are accepted):\n  "
)
QUOTED = (
    'quoted includes (#include "...") are not allowed: write #include <X> with an allowed CUDA header, '
    "or put the code in the reply"
)
PASTE = (
    "token pasting (##) is not allowed: a pasted name could form _Pragma or __has_include "
    "where no check sees it; write the names out"
)
BACKSLASH = (
    "a backslash outside strings and comments is not allowed (a universal character name "
    "such as \\u0041 can spell a name the check cannot see)"
)
MACRO_OR_EXPRESSION = (
    "#include of a macro or an expression is not allowed: write #include <X> with an allowed CUDA header"
)
MALFORMED = "malformed #include: write #include <X> alone on its line"
MY_CAT_REFUSAL = (
    "MY_CAT is a macro of the CUDA headers that pastes tokens or emits a pragma: write the code it stands for out"
)
HAS_INCLUDE = "__has_include is not allowed: it probes the host's files"
LITERAL_ONLY = '_Pragma(...) is allowed only with a string literal, e.g. _Pragma("unroll")'
NAME_SPLICE = "a line continuation (backslash-newline) inside a directive name is not allowed"
INCLUDE_SPLICE = "a line continuation inside #include is not allowed"
NAME_COMMENT = "a comment inside a directive name is not allowed"
SPANNING = "a /* */ comment that spans lines is not allowed in a directive"
AFTER_QUOTE = (
    "a /* comment that runs over several lines must not open after a quote or a digit separator on its "
    "line: start it on a line of its own, or use //"
)


def refusals(source: str, macros: HeaderMacros = NO_HEADERS) -> tuple[tuple[int | None, str], ...]:
    with pytest.raises(PolicyViolation) as info:
        check_source_policy(source, macros)
    return info.value.violations


def passes(source: str, macros: HeaderMacros = NO_HEADERS) -> tuple[str, ...]:
    return check_source_policy(source, macros)


# -- PolicyViolation -----------------------------------------------------------------------------


def test_the_message_lists_each_violation_with_its_line() -> None:
    err = PolicyViolation([(3, "first"), (None, "no line")])
    assert isinstance(err, FormatError)
    assert err.violations == ((3, "first"), (None, "no line"))
    assert str(err) == HEAD + "line 3: first\n  no line"


def test_at_most_twelve_are_shown_then_a_count() -> None:
    twelve = [(i, f"m{i}") for i in range(1, 13)]
    assert str(PolicyViolation(twelve)) == HEAD + "\n  ".join(f"line {i}: m{i}" for i in range(1, 13))
    fifteen = [(i, f"m{i}") for i in range(1, 16)]
    err = PolicyViolation(fifteen)
    assert len(err.violations) == 15
    assert str(err) == HEAD + "\n  ".join(f"line {i}: m{i}" for i in range(1, 13)) + "\n  ... and 3 more"


# -- before lexing: trigraphs, spaces after a backslash, odd line ends ----------------------------


def test_raw_problems_by_kind_with_their_lines() -> None:
    source = "int a;\nint b; ??=\nint c = 1 \\  \nint d;\rint e; ??/\n\u2028x\u0085y\n"
    assert refusals(source) == (
        (2, "trigraph '??=' is not allowed"),
        (4, "trigraph '??/' is not allowed"),
        (3, "a backslash followed by spaces at the end of a line (remove the spaces, or the backslash)"),
        (4, "character U+000D is not allowed (use \\n line ends)"),
        (5, "character U+2028 is not allowed (use \\n line ends)"),
        (5, "character U+0085 is not allowed (use \\n line ends)"),
    )


def test_raw_problems_are_refused_before_the_lexer_runs() -> None:
    # The unterminated comment would be the lexer's refusal; the trigraph comes first and alone.
    assert refusals("??( /* never closed\n") == ((1, "trigraph '??(' is not allowed"),)


def test_a_lone_question_mark_pair_or_a_plain_splice_is_not_raw() -> None:
    assert passes("int a = b ?? c;\n#define A 1 \\\n + 2\n") == ()


# -- the lexer -----------------------------------------------------------------------------------


def test_lexer_blanks_comments_and_literal_bodies_keeping_line_breaks() -> None:
    source = 'a/*x*/b // c\n"s\\"t" u8"v" L\'w\' /* 1\n2 */ z 1.5e+3 x\\\ny\n'
    lx = inc._lex(source)
    assert lx.spliced == source.replace("\\\n", "")
    assert lx.clean == 'a     b     \n"    " u8" " L\' \'     \n     z 1.5e+3 xy\n'
    assert len(lx.clean) == len(lx.spliced)
    assert lx.block_comments == ((1, 6), (31, 40))
    assert lx.literals == {13: 's\\"t', 22: "v", 27: "w"}
    assert lx.identifiers == ((0, "a"), (6, "b"), (41, "z"), (50, "xy"))
    assert lx.newlines == (12, 35, 52)
    assert lx.splices == (51,)


def test_lexer_line_numbers_and_line_starts_count_splices() -> None:
    lx = inc._lex("ab\\\ncd\n\\\nef\\\n\\\ng\n")
    assert lx.spliced == "abcd\nefg\n"
    assert lx.splices == (2, 5, 7, 7)
    assert [lx.line_of(p) for p in range(len(lx.spliced))] == [1, 1, 2, 2, 2, 4, 4, 6, 6]
    assert [lx.line_start(p) for p in range(len(lx.spliced))] == [0, 0, 0, 0, 0, 5, 5, 5, 5]


def test_lexer_refusals_name_the_original_line() -> None:
    assert refusals("\nint a = 1 + \\\n 2;\n/* never closed\n") == ((4, "unterminated /* comment"),)
    assert refusals('\nx\\\ny = R"(raw)";\n') == ((3, 'raw string literals (R"(...)") are not allowed in a kernel'),)
    assert refusals("\n\\\nint a = 0x1';\n") == (
        (3, "a quote right after a number is not allowed (a misplaced digit separator?)"),
    )
    assert refusals("float f = .5';\n") == (
        (1, "a quote right after a number is not allowed (a misplaced digit separator?)"),
    )


@pytest.mark.parametrize("prefix", ["R", "u8R", "uR", "UR", "LR"])
def test_every_raw_prefix_is_refused(prefix: str) -> None:
    assert refusals(f'auto s = {prefix}"x(a)x";\n') == (
        (1, 'raw string literals (R"(...)") are not allowed in a kernel'),
    )


def test_prefixes_and_numbers_that_are_not_raw_strings_pass() -> None:
    source = (
        "int R = 1, u = 2, L = 3, U = 4, u8 = 5;\n"
        "const char* s = u8\"a\"; auto w = L'b'; auto c = u'c'; auto d = U\"d\";\n"
        "int big = 1'000'000 + 0x1'0 + .5 + R;\n"
        "char q = '\"'; const char* e = \"\\\\\"; char n = '\\n';\n"
        "int last = 1"
    )
    assert passes(source) == ()


def test_a_string_prefix_is_not_the_name_of_a_macro() -> None:
    macros = HeaderMacros(frozenset({"L", "u8"}), frozenset())
    assert passes("auto w = L\"wide\"; char c = u8'c';\n", macros) == ()
    assert refusals("int x = L + u8;\n", macros) == (
        (1, "L is a macro of the CUDA headers that pastes tokens or emits a pragma: write the code it stands for out"),
        (1, "u8 is a macro of the CUDA headers that pastes tokens or emits a pragma: write the code it stands for out"),
    )


@pytest.mark.parametrize(
    "source",
    [
        '"a" __has_include "b"\n',  # a literal ends at its closing quote, not later
        '"a"__has_include(x)\n',  # the name right after the closing quote is read whole
        "'\"' __has_include\n",  # a double quote inside a char literal opens nothing
        '"\\"" __has_include\n',  # an escaped quote does not close the literal
        '"unterminated\n__has_include\n',  # an unterminated literal ends at its line
        "// c\n__has_include\n",  # a // comment ends at its own line
        "int a; // c\n__has_include // d\n",
        "/* ' */ __has_include\n",  # a quote inside a comment opens nothing
        "/**/__has_include\n",
        "__has_include\n",
        'f(u8"x") __has_include\n',  # lexing goes on after a prefixed literal
        '__has_include"x"\n',  # a name before a quote is not a string prefix
        "__has_\\\ninclude\n",  # a splice is joined before the names are read
    ],
)
def test_a_forbidden_name_is_seen_after_every_kind_of_token(source: str) -> None:
    line = 2 if source.startswith(("//", '"unterminated', "int a;")) else 1
    assert refusals(source) == ((line, HAS_INCLUDE),)


@pytest.mark.parametrize(
    "source",
    [
        'const char* s[] = {"\\"", "__has_include"};\n',
        "// __has_include\n",
        "/* __has_include */\n",
        "/*/ __has_include */\n",  # /*/ does not close itself
        "/**/\n",
        "char c = '\\''; // __has_include\n",
        'const char* s = "unterminated',  # left for the compiler to refuse
        "// a comment without a line end",
    ],
)
def test_a_forbidden_name_in_a_comment_or_a_literal_is_harmless(source: str) -> None:
    assert passes(source) == ()


# -- directives ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("#line 7", "#line is not allowed: it would re-attribute compiler errors to other lines or files"),
        ('# 7 "f.cu"', "#line is not allowed: it would re-attribute compiler errors to other lines or files"),
        ("#include_next <a.h>", "#include_next is not allowed: it searches the compiler's include folders"),
        ('#import "a.h"', "#import is not allowed: write #include <X> with an allowed CUDA header"),
        ('#embed "a.bin"', "#embed is not allowed: it reads a file into the program"),
        ("#ident x", "#ident is not allowed"),
        ("#  assert x", "#assert is not allowed"),
        ("#!x", "unknown directive '#!x'"),
        ("#\x1c", "unknown directive '#'"),
        ("# " + "!" * 50, "unknown directive " + repr("# " + "!" * 38)),
        ('#include "a.h"', QUOTED),
        ("#include", "#include with no header name"),
        ("#include   ", "#include with no header name"),
        ("#include <mma.h> x", MALFORMED),
        ("#include <mma.h", MALFORMED),
        ("#include <a<b>", MALFORMED),
        ("#include \x1c", MACRO_OR_EXPRESSION),
        ("#include HEADER", MACRO_OR_EXPRESSION),
        ("#include <mma.h/**/>", "#include <...> with a comment or quote inside the brackets is not allowed"),
        ('#pragma message("hi")', '#pragma message("hi") is not allowed; ' + PRAGMAS),
        ("#pragma   GCC    poison  x", "#pragma GCC poison x is not allowed; " + PRAGMAS),
        ("#pragma " + "a" * 70, "#pragma " + "a" * 60 + " is not allowed; " + PRAGMAS),
        ("#pragma", "#pragma  is not allowed; " + PRAGMAS),
    ],
)
def test_each_directive_refusal_exactly(line: str, message: str) -> None:
    assert refusals("int a;\n" + line + "\nint b;\n") == ((2, message),)


def test_a_directive_on_the_first_line() -> None:
    assert refusals("#!x\nint a;\n") == ((1, "unknown directive '#!x'"),)
    assert refusals("#pragma foo\nint a;\n") == ((1, "#pragma foo is not allowed; " + PRAGMAS),)


def test_a_refused_directive_on_the_last_line_without_a_line_end() -> None:
    assert refusals("int a;\n#pragma foo") == ((2, "#pragma foo is not allowed; " + PRAGMAS),)
    assert refusals("#include <stdio.h>") == (
        (1, "#include <stdio.h> is not allowed: printf is built into device code: no include is needed"),
    )


def test_allowed_directives_and_null_directives_pass() -> None:
    source = (
        "#\n#   \n#/**/\n# /* c */\n#\\\n\n#pragma unroll\n#pragma unroll 4\n#pragma once\n"
        "#pragma nv_diag_suppress 177\n#pragma/**/unroll\n#define A(x) (x)\n#undef A\n#if 1\n#elif 2\n#else\n#endif\n"
        "#ifdef A\n#endif\n#ifndef A\n#endif\n#error e\n#warning w\n int x;\n"
    )
    assert passes(source) == ()


def test_the_headers_are_returned_exactly_once_each_in_order() -> None:
    source = (
        "#pragma unroll\n#  include   <mma.h>  \n#include<cuda_fp16.h>\n\t#\tinclude <cuda/std/cstdint>\n"
        "#include <mma.h>\nint x;\n"
    )
    assert passes(source) == ("mma.h", "cuda_fp16.h", "cuda/std/cstdint")
    assert passes("#include <cooperative_groups/reduce.h>") == ("cooperative_groups/reduce.h",)


def test_a_directive_must_start_its_line() -> None:
    # A '#' after code on its line starts no directive: the compiler reads no file there (it is a
    # stray '#', refused by the compiler itself).
    assert passes('int a; # include "x"\n') == ()


def test_a_directive_after_a_multi_line_comment_is_checked() -> None:
    assert refusals("/* a\n b */ #pragma foo\nint x;\n") == ((2, "#pragma foo is not allowed; " + PRAGMAS),)


# -- the directives' shape: comments and splices --------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("int a;\n#/**/include <mma.h>\n", ((2, NAME_COMMENT),)),
        ("int a;\n#inc/**/lude <mma.h>\n", ((2, "#inc is not allowed"),)),
        ("#define X 1 /*\n*/\n", ((1, SPANNING),)),
        ("#/*\n*/include <mma.h>\n", ((1, SPANNING),)),
        ("# /* x */ include <mma.h>\n", ((1, NAME_COMMENT),)),
        ("/* a */ int x;\n#/**/include <mma.h>\n", ((2, NAME_COMMENT),)),
        ("int a;\n#inc\\\nlude <mma.h>\n", ((2, NAME_SPLICE),)),
        ("int a = 1 + \\\n 2;\n#inc\\\nlude <mma.h>\n", ((3, NAME_SPLICE),)),
        ("#\\\ninclude <mma.h>\n", ((1, NAME_SPLICE),)),
        ("#include\\\n <mma.h>\n", ((1, INCLUDE_SPLICE),)),
        ("int a;\n#include \\\n<mma.h>", ((2, INCLUDE_SPLICE),)),
        ("#include <mma.h> \\\n\n#include <cuda_fp16.h> \\\nx\n", ((3, MALFORMED), (3, INCLUDE_SPLICE))),
        ("int a = 'x'; /* a\n b */\n", ((1, AFTER_QUOTE),)),
        ('const char* s = "x"; /* a\n b */\n', ((1, AFTER_QUOTE),)),
    ],
)
def test_structure_refusals_exactly(source: str, expected: tuple[tuple[int, str], ...]) -> None:
    assert refusals(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "  \\\n#include <mma.h>\n",  # a splice before the '#'
        "/**/#include <mma.h>\n",  # a comment before the '#'
        "#include <mma.h>\\\n\nint x;\n",  # a splice at the very end of the line
        "#include <mma.h> /* fine */\n",
        "#define\\\n X 1\n#include <mma.h>\n",  # a splice right after a name ends it
        "#define A(x) \\\n (x)\n#include <mma.h>\n",
        "int a = 'x'; /* one line */\n#include <mma.h>\n",
        "/* one\n two */ int a = 'x';\n#include <mma.h>\n",
    ],
)
def test_harmless_shapes_pass(source: str) -> None:
    assert passes(source) == ("mma.h",)


# -- pasting, digraphs, backslashes, non-ASCII ---------------------------------------------------


def test_pasting_and_digraphs_each_reported() -> None:
    assert refusals("#define P(a, b) a %:%: b\n%:define Q 1\n") == (
        (1, PASTE),
        (1, "the digraph %: is not allowed (write #)"),
        (1, "the digraph %: is not allowed (write #)"),
        (2, "the digraph %: is not allowed (write #)"),
    )


def test_only_the_first_backslash_and_non_ascii_character_are_reported() -> None:
    assert refusals("int a;\nint \\u0041 = 1;\nint b \\ ;\nint \u00e9 = 1;\nint \u00e8;\n") == (
        (2, BACKSLASH),
        (4, "non-ASCII character '\u00e9' outside comments and strings is not allowed"),
    )


def test_violations_are_sorted_by_line_and_stable_within_a_line() -> None:
    assert refusals("a ## b\n__has_include\n") == ((1, PASTE), (2, HAS_INCLUDE))
    assert refusals("__has_include\na ## b\n") == ((1, HAS_INCLUDE), (2, PASTE))
    assert refusals("int __has_include = a ## b;\n") == ((1, PASTE), (1, HAS_INCLUDE))
    assert refusals('#include "x"\n#/**/include <mma.h>\n#pragma foo\n') == (
        (1, QUOTED),
        (2, NAME_COMMENT),
        (3, "#pragma foo is not allowed; " + PRAGMAS),
    )


# -- identifiers ---------------------------------------------------------------------------------


def test_each_forbidden_identifier_exactly() -> None:
    assert refusals('#if __has_include_next(<a>)\n#endif\nint x = __has_embed("f");\n__pragma(once)\n') == (
        (1, "__has_include_next is not allowed: it probes the host's files"),
        (3, "__has_embed is not allowed: it probes the host's files"),
        (4, "__pragma(...) is not allowed: write #pragma unroll or #pragma once directly"),
    )
    assert refusals("#define H __has_include\n") == ((1, HAS_INCLUDE),)


@pytest.mark.parametrize(
    "source",
    [
        '_Pragma("unroll")\n',
        '_Pragma ( "unroll 4" )\n',
        '_Pragma(\n"nv_diagnostic push"\n)\n',
        'for (;;) _Pragma("unroll") {}\n',
    ],
)
def test_pragma_operators_with_allowed_pragmas_pass(source: str) -> None:
    assert passes(source) == ()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("_Pragma(X)\n", LITERAL_ONLY),
        ("_Pragma\n", LITERAL_ONLY),
        ("_Pragma", LITERAL_ONLY),
        ('_Pragma("unroll" x)\n', LITERAL_ONLY),
        ('_Pragma("unroll"\n', LITERAL_ONLY),
        ('_Pragma("message(\\"x\\")")\n', '#pragma message("x") is not allowed; ' + PRAGMAS),
        ('_Pragma("message(\\"a\\\\\\\\b\\")")\n', '#pragma message("a\\\\b") is not allowed; ' + PRAGMAS),
        ('_Pragma("")\n', "#pragma  is not allowed; " + PRAGMAS),
    ],
)
def test_pragma_operator_refusals_exactly(source: str, message: str) -> None:
    assert refusals("int a;\n" + source) == ((2, message),)


def test_macros_of_the_headers_are_refused_with_their_hint() -> None:
    macros = HeaderMacros(frozenset({"NV_IF_TARGET", "MY_CAT"}), frozenset())
    assert refusals("NV_IF_TARGET(x)\nint y = MY_CAT(a, b);\n#define Z MY_CAT\n", macros) == (
        (
            1,
            "NV_IF_TARGET is a macro of the CUDA headers that pastes tokens or emits a pragma: write #if "
            "__CUDA_ARCH__ >= 800 ... #else ... #endif instead (__CUDA_ARCH__ is 800 for sm_80)",
        ),
        (2, MY_CAT_REFUSAL),
        (3, MY_CAT_REFUSAL),
    )
    assert passes('// MY_CAT\nconst char* s = "MY_CAT";\n', macros) == ()
    assert passes("NV_IF_TARGET(x)\n") == ()  # with no headers' macros given, nothing is refused


def test_names_the_headers_use_may_not_be_defined_or_undefined() -> None:
    macros = HeaderMacros(frozenset({"R"}), frozenset({"F", "R", "G"}))
    assert refusals("#define F 1\nint a;\n#  undef   G\n#define \\\nF(x) x\n#define R 2\n", macros) == (
        (
            1,
            "#define F is not allowed: a macro of the CUDA headers that pastes tokens or emits a pragma uses F; "
            "choose another name",
        ),
        (
            3,
            "#undef G is not allowed: a macro of the CUDA headers that pastes tokens or emits a pragma uses G; "
            "choose another name",
        ),
        (
            5,
            "#define F is not allowed: a macro of the CUDA headers that pastes tokens or emits a pragma uses F; "
            "choose another name",
        ),
        (6, "R is a macro of the CUDA headers that pastes tokens or emits a pragma: write the code it stands for out"),
    )
    assert passes("#define H 1\nint F = 2;\n#ifdef G\n#endif\n", macros) == ()


def test_the_default_macros_are_the_compilers_headers() -> None:
    from cuda_llm.engine.compile import header_macros

    refused = header_macros.current().refused
    assert "NV_IF_TARGET" in refused
    with pytest.raises(PolicyViolation) as info:
        check_source_policy("NV_IF_TARGET(x)\n")
    assert info.value.violations[0][0] == 1
    assert info.value.violations[0][1].startswith("NV_IF_TARGET is a macro of the CUDA headers")


# -- headers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "hint"),
    [
        ("/etc/passwd", None),
        ("a/../b.h", None),
        ("../b.h", None),
        ("stdio.h", "printf is built into device code: no include is needed"),
        ("sys/stdio.h", "printf is built into device code: no include is needed"),
        ("a/b/cstdint", "int32_t, uint64_t and the other fixed-width types are predefined (or <cuda/std/cstdint>)"),
        ("limits", "use <cuda/std/limits> (cuda::std::numeric_limits)"),
        ("thrust/sort.h", "host libraries are not available: the harness owns the host side"),
        ("cublas_v2.h", "host libraries are not available: the harness owns the host side"),
        ("cufft.h", "host libraries are not available: the harness owns the host side"),
        ("cusparse.h", "host libraries are not available: the harness owns the host side"),
        ("thrust/limits", "use <cuda/std/limits> (cuda::std::numeric_limits)"),
        ("cub/cub.cuh", "CUB is not available: write the block or warp reduction (__shfl_down_sync...)"),
        ("cub/stdio.h", "printf is built into device code: no include is needed"),
        ("x/..y.h", "allowed: " + inc.allowed_headers_text()),
        ("foo.h", "allowed: " + inc.allowed_headers_text()),
        ("cuda/std/execution", "allowed: " + inc.allowed_headers_text()),
    ],
)
def test_each_header_refusal_exactly(header: str, hint: str | None) -> None:
    expected = (
        f"#include <{header}>: paths are not allowed, only CUDA header names"
        if hint is None
        else f"#include <{header}> is not allowed: {hint}"
    )
    assert refusals(f"int a;\n#include <{header}>\n") == ((2, expected),)


def test_the_allow_list_text() -> None:
    text = inc.allowed_headers_text()
    assert text.startswith("cooperative_groups.h, cuComplex.h, cuda_awbarrier.h,")
    assert ", vector_types.h, cuda/std/*, cooperative_groups/*.h, cuda/access_property, " in text
    assert text.endswith(", cuda/utility, cuda/warp, nv/target")


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("cuda/std/execution", False),
        ("cuda/std/cstdint", True),
        ("cuda/std/Cstdint", False),
        ("cuda/std/_x", False),
        ("cooperative_groups/reduce.h", True),
        ("cooperative_groups/reduce.hpp", False),
        ("nv/target", True),
        ("cuda/barrier", True),
        ("cuda/std/../../x", False),
        ("-x.h", False),
        ("mma.h\n", False),
    ],
)
def test_is_allowed_header(header: str, allowed: bool) -> None:
    assert inc.is_allowed_header(header) is allowed


# -- the pragma allow list -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "allowed"),
    [
        ("unroll", True),
        ("\t unroll (N + 1) * 2", True),
        ("unroll\n4", True),
        ("unroll '4'", False),
        ("unroll {4}", False),
        ("unrollA 4", False),
        ("Unroll 4", False),
        ("nounroll", True),
        ("nounroll  ", True),
        ("nounroll 2", False),
        ("once", True),
        ("once x", False),
        ("diag_suppress 177, 550", True),
        ("nv_diag_error set_but_not_used", True),
        ("nv_diag_warning -1", True),
        ("diag_once", False),
        ("nv_diag_default 1;", False),
        ("nv_diagnostic push", True),
        ("nv_diagnostic  pop ", True),
        ("nv_diagnostic", False),
        ("nv_diagnostic push pop", False),
        ("NV_DIAGNOSTIC push", False),
        ("message", False),
        ("", False),
        ("  ", False),
        ("1 unroll", False),
    ],
)
def test_pragma_allowed(text: str, allowed: bool) -> None:
    assert pragma_allowed(text) is allowed
