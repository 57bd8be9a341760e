"""The include and preprocessor policy, applied to a candidate before anything is compiled.

A reply must never make the compiler read a file of the host: whatever it reads can come back in
the compile log, and the log goes to a model that may run on someone else's server. So the only
way in is `#include <X>` with X a CUDA header from an allow list, and every preprocessor feature
that can name a file (quoted or computed includes, `#include_next`, `#import`, `#embed`,
`__has_include`, `#line`, unknown pragmas) is refused with a message written for the model.

The check works on the source as the compiler sees it, in the order of the translation phases:
line splices joined first (phase 2), then comments and string literals blanked (phase 3), so a
`#include` inside a comment or a string is harmless while one behind a comment or a splice is
caught. A string or character literal never reaches past its line: a backslash before a line end
that survived phase 2 escapes nothing (the compiler ends the literal there too). Macro expansion
(phase 4) is treated as able to form anything: token pasting (`##`) and universal character names
(`\u0041`) could assemble `_Pragma` or `__has_include` where no check can see them, so both are
refused, and the forbidden identifiers are refused wherever they are spelled, in a #define too. The
same holds for the CUDA headers' own macros that paste or emit a pragma on the candidate's behalf
(`_CCCL_PP_CAT(__has_, include)`, `_CCCL_PRAGMA(message(...))`): header_macros.py finds them in every
header the compiler may read, and their names are refused wherever the candidate spells them.
Whatever this lexer cannot be sure of (trigraphs, raw strings, odd line ends) is refused rather
than guessed: honest kernels never need them, and a guess that differs from the compiler's is a
way around the policy. Every step is linear in the size of the source.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass

from cuda_llm.engine.compile import header_macros
from cuda_llm.engine.compile.header_macros import HeaderMacros
from cuda_llm.engine.core.errors import FormatError

# -- the allow list ------------------------------------------------------------------------------

# Device-side CUDA headers, all shipped with NVRTC (bundled) or in the toolkit's include folder.
# cuda_tf32.h is left out: it declares host functions and does not compile under NVRTC 13.5.
# CUB is left out: in CUDA 13.0 every cub/block and cub/warp header reaches thrust's computed
# `#include MACRO(...)` lines, and a block reduction is the model's to write anyway.
ALLOWED_HEADERS: frozenset[str] = frozenset(
    {
        "cuda_fp16.h",
        "cuda_bf16.h",
        "cuda_fp8.h",
        "cuda_fp6.h",
        "cuda_fp4.h",
        "cuda_pipeline.h",
        "cuda_pipeline_primitives.h",
        "cuda_awbarrier.h",
        "cuda_awbarrier_primitives.h",
        "cooperative_groups.h",
        "mma.h",
        "math_constants.h",
        "cuComplex.h",
        "vector_types.h",
        "nv/target",
        # libcu++'s device-side public headers. Host-side ones (cuda/stream, cuda/buffer,
        # cuda/execution, cuda/memory_resource...) are left out: they are no use in a kernel, and
        # some of them reach thrust's computed includes (see test_allowed_headers_reach_no_
        # computed_include).
        "cuda/annotated_ptr",
        "cuda/access_property",
        "cuda/atomic",
        "cuda/barrier",
        "cuda/bit",
        "cuda/cmath",
        "cuda/discard_memory",
        "cuda/functional",
        "cuda/iterator",
        "cuda/latch",
        "cuda/mdspan",
        "cuda/memory",
        "cuda/numeric",
        "cuda/pipeline",
        "cuda/ptx",
        "cuda/random",
        "cuda/semaphore",
        "cuda/type_traits",
        "cuda/utility",
        "cuda/warp",
    }
)

# Families of headers, by pattern: one path component under a fixed folder, no leading underscore
# (libcu++'s `__detail` folders are internal), so nothing can climb out of the include folders.
ALLOWED_HEADER_FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cuda/std/*", re.compile(r"cuda/std/[a-z][a-z0-9_]*")),
    ("cooperative_groups/*.h", re.compile(r"cooperative_groups/[a-z][a-z0-9_]*\.h")),
)

# Inside an allowed family, but host-side: <cuda/std/execution> pulls in thrust and its computed
# `#include MACRO(...)` lines, whose macros a candidate could predefine.
DENIED_HEADERS: frozenset[str] = frozenset({"cuda/std/execution"})

# What the model most often reaches for, and what to write instead.
_HEADER_HINTS: dict[str, str] = {
    "stdio.h": "printf is built into device code: no include is needed",
    "cstdio": "printf is built into device code: no include is needed",
    "math.h": "the device math functions (expf, sqrtf, fmaf, ...) are built in, and INFINITY, NAN "
    "and M_PI are predefined: no include is needed",
    "cmath": "the device math functions (expf, sqrtf, fmaf, ...) are built in: no include is "
    "needed (or <cuda/std/cmath>)",
    "stdint.h": "int32_t, uint64_t and the other fixed-width types are predefined (or <cuda/std/cstdint>)",
    "cstdint": "int32_t, uint64_t and the other fixed-width types are predefined (or <cuda/std/cstdint>)",
    "float.h": "FLT_MAX, FLT_EPSILON, DBL_MAX ... are predefined (or <cuda/std/cfloat>)",
    "cfloat": "FLT_MAX, FLT_EPSILON, DBL_MAX ... are predefined (or <cuda/std/cfloat>)",
    "limits.h": "INT_MAX, INT_MIN, UINT_MAX ... are predefined (or <cuda/std/climits>)",
    "climits": "INT_MAX, INT_MIN, UINT_MAX ... are predefined (or <cuda/std/climits>)",
    "limits": "use <cuda/std/limits> (cuda::std::numeric_limits)",
    "cuda_runtime.h": "device code needs no runtime header: the harness does every host-side step",
    "cuda_runtime_api.h": "device code needs no runtime header: the harness does every host-side step",
    "cuda.h": "device code needs no driver header: the harness does every host-side step",
    "device_launch_parameters.h": "threadIdx, blockIdx, blockDim and gridDim are built in",
    "curand_kernel.h": "cuRAND is not available: write a small counter-based generator (a hash "
    "of the element index and a seed), or use <cuda/random>",
    "curand.h": "cuRAND is not available: write a small counter-based generator (a hash of the "
    "element index and a seed)",
    "cuda_tf32.h": "it does not compile under NVRTC; use __float_to_tf32 style conversions "
    "through inline PTX (cvt.rna.tf32.f32) if the task allows tf32",
}

# -- the pragma allow list -----------------------------------------------------------------------

# Pragmas that only steer code generation or diagnostics. Anything else (message, push_macro,
# include_alias, GCC dependency, ...) is refused: some of them name files.
_DIAG_PRAGMAS = frozenset(
    {
        "nv_diag_suppress",
        "nv_diag_default",
        "nv_diag_warning",
        "nv_diag_error",
        "nv_diag_once",
        "diag_suppress",
        "diag_default",
        "diag_warning",
        "diag_error",
        "diag_once",
    }
)
ALLOWED_PRAGMAS: tuple[str, ...] = (
    "unroll [N]",
    "nounroll",
    "once",
    "[nv_]diag_{suppress,default,warning,error,once} <numbers or names>",
    "nv_diagnostic push|pop",
)
_UNROLL_ARG = re.compile(r"[\s\w()+\-*/%<>,.?:]*")  # an integral constant expression, no quotes
_DIAG_ARG = re.compile(r"[\s\w,\-]+")

# Directives that never read a file. `#line` is refused because it would re-attribute errors.
_ALLOWED_DIRECTIVES = frozenset(
    {
        "define",
        "undef",
        "if",
        "ifdef",
        "ifndef",
        "elif",
        "elifdef",
        "elifndef",
        "else",
        "endif",
        "error",
        "warning",
        "pragma",
        "include",
    }
)
_DIRECTIVE_REFUSALS: dict[str, str] = {
    "include_next": "#include_next is not allowed: it searches the compiler's include folders",
    "import": "#import is not allowed: write #include <X> with an allowed CUDA header",
    "embed": "#embed is not allowed: it reads a file into the program",
    "line": "#line is not allowed: it would re-attribute compiler errors to other lines or files",
}
# Identifiers that probe or name files, or hide a pragma from the directive check.
_FORBIDDEN_IDENTIFIERS: dict[str, str] = {
    "__has_include": "__has_include is not allowed: it probes the host's files",
    "__has_include_next": "__has_include_next is not allowed: it probes the host's files",
    "__has_embed": "__has_embed is not allowed: it probes the host's files",
    "__pragma": "__pragma(...) is not allowed: write #pragma unroll or #pragma once directly",
}

# The CUDA headers' own macros that paste or emit pragmas (header_macros.py decides which) are refused
# wherever the candidate spells them; the ones a model reaches for get a hint.
_ARCH_HINT = "write #if __CUDA_ARCH__ >= 800 ... #else ... #endif instead (__CUDA_ARCH__ is 800 for sm_80)"
_MACRO_HINTS: dict[str, str] = {
    "NV_IF_TARGET": _ARCH_HINT,
    "NV_IF_ELSE_TARGET": _ARCH_HINT,
    "NV_DISPATCH_TARGET": _ARCH_HINT,
}

# -- lexing --------------------------------------------------------------------------------------

_WS = " \t\f\v"
# Characters the compiler may take for a line break while this lexer would not (Python's
# str.splitlines() treats them as breaks too: nothing here uses it on source text).
_ODD_LINE_BREAKS = re.compile("[\r\u0085\u2028\u2029]")
_TRIGRAPH = re.compile(r"\?\?[=/'()!<>\-]")
_SPLICE_AFTER_SPACE = re.compile(r"\\[ \t\f\v]+\n")
_TOKEN = re.compile(
    r"//|/\*|\"|'"
    r"|[A-Za-z_$\u0080-\U0010ffff][A-Za-z0-9_$\u0080-\U0010ffff]*"
    # pp-number, with C++14 digit separators (1'000'000) so they are not read as char literals
    r"|\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*"
)
_STRING_PREFIXES = frozenset({"u8", "u", "U", "L"})
_RAW_PREFIXES = frozenset({"R", "u8R", "uR", "UR", "LR"})
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_NOT_NEWLINE = re.compile(r"[^\n]")
# A literal's body: anything but its quote and a line end, escapes included, and a backslash left
# alone before a line end (it escapes nothing: the literal ends at the line end, as the compiler's).
_LITERAL_BODY = {q: re.compile(rf"(?:[^{q}\\\n]|\\[^\n])*\\?") for q in ('"', "'")}
_PASTE = re.compile(r"##|%:%:")
_PRAGMA_OPEN = re.compile(r"[ \t\f\v\n]*\([ \t\f\v\n]*\"")
_PRAGMA_CLOSE = re.compile(r"\"[ \t\f\v\n]*\)")
_DIRECTIVE = re.compile(r"#[ \t\f\v]*([A-Za-z_][A-Za-z0-9_]*|[0-9]+)?")
_DIRECTIVE_START = re.compile(r"^[ \t\f\v]*#", re.M)
# Directive lines that are neither null (a lone '#') nor one of the plain directives, whose text
# names no file; the '#' is group 1.
_PLAIN_DIRECTIVES = ("define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif")
_CHECKED_DIRECTIVE = re.compile(
    r"^[ \t\f\v]*(#)(?![ \t\f\v]*(?:(?:" + "|".join(_PLAIN_DIRECTIVES) + r")(?![A-Za-z0-9_])|$))", re.M
)
_HEADER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]*")
_DEFINE_OR_UNDEF = re.compile(r"^[ \t\f\v]*#[ \t\f\v]*(define|undef)[ \t\f\v]+([A-Za-z_][A-Za-z0-9_]*)", re.M)


class PolicyViolation(FormatError):
    """The source uses a preprocessor feature outside the policy; `str()` lists each use."""

    def __init__(self, violations: list[tuple[int | None, str]]) -> None:
        self.violations = tuple(violations)
        shown = violations[:_MAX_REPORTED]
        lines = [f"line {ln}: {msg}" if ln is not None else msg for ln, msg in shown]
        if len(violations) > len(shown):
            lines.append(f"... and {len(violations) - len(shown)} more")
        super().__init__(
            "the source was rejected before compiling (only #include <X> of allowed CUDA headers "
            "and harmless pragmas are accepted):\n  " + "\n  ".join(lines)
        )


# Enough to show the model every kind of mistake at once, few enough for a prompt.
_MAX_REPORTED = 12


@dataclass(frozen=True)
class _Lexed:
    spliced: str  # the source with line splices joined
    clean: str  # same length: comments and literal contents blanked, line breaks kept
    block_comments: tuple[tuple[int, int], ...]  # the /* */ comments, [start, end) in spliced coordinates
    literals: dict[int, str]  # opening-quote position -> literal text between the quotes
    identifiers: tuple[tuple[int, str], ...]
    newlines: tuple[int, ...]  # positions of "\n" in spliced
    splices: tuple[int, ...]  # positions in spliced where a splice was joined

    def line_of(self, pos: int) -> int:
        """The 1-based line of the original source that holds spliced position `pos`."""
        return 1 + bisect.bisect_left(self.newlines, pos) + bisect.bisect_right(self.splices, pos)

    def line_start(self, pos: int) -> int:
        """Where the (spliced) line that holds `pos` starts: a bisect, not a scan back along a line
        that may be the whole source."""
        k = bisect.bisect_left(self.newlines, pos)
        return self.newlines[k - 1] + 1 if k else 0


def _splice(text: str) -> tuple[str, tuple[int, ...]]:
    pieces = text.split("\\\n")
    positions: list[int] = []
    at = 0
    for piece in pieces[:-1]:
        at += len(piece)
        positions.append(at)
    return "".join(pieces), tuple(positions)


def _lex(text: str) -> _Lexed:
    spliced, splices = _splice(text)
    blanks: list[tuple[int, int]] = []  # spans blanked in the clean text (newlines kept)
    block_comments: list[tuple[int, int]] = []
    literals: dict[int, str] = {}
    identifiers: list[tuple[int, str]] = []
    n = len(spliced)

    def line_at(pos: int) -> int:
        return 1 + spliced.count("\n", 0, pos) + bisect.bisect_right(splices, pos)

    def quoted(open_at: int) -> int:
        """Blank a string or char literal; return the position after it. A literal ends at its
        closing quote or, unterminated, at the line end (where the compiler also stops it)."""
        quote = spliced[open_at]
        body = _LITERAL_BODY[quote].match(spliced, open_at + 1)
        assert body is not None  # the body pattern also matches an empty literal
        k = body.end()
        literals[open_at] = spliced[open_at + 1 : k]
        blanks.append((open_at + 1, k))
        return k + 1 if k < n and spliced[k] == quote else k

    pos = 0
    search = _TOKEN.search
    while True:
        m = search(spliced, pos)
        if m is None:
            break
        tok, start = m.group(), m.start()
        if tok == "//":
            end = spliced.find("\n", start)
            end = n if end < 0 else end
            blanks.append((start, end))
            pos = end
        elif tok == "/*":
            end = spliced.find("*/", start + 2)
            if end < 0:
                raise PolicyViolation([(line_at(start), "unterminated /* comment")])
            block_comments.append((start, end + 2))
            blanks.append((start, end + 2))
            pos = end + 2
        elif tok in ('"', "'"):
            pos = quoted(start)
        elif tok[0].isdigit() or tok[0] == ".":
            pos = m.end()
            if pos < n and spliced[pos] == "'":
                # Whether this quote is a digit separator (NVRTC takes it as one after 0x or 1u, and
                # reads on from it) or opens a char literal (as this lexer would) decides where a
                # comment on this line starts: it must not be left to a guess.
                message = "a quote right after a number is not allowed (a misplaced digit separator?)"
                raise PolicyViolation([(line_at(start), message)])
        else:
            nxt = spliced[m.end()] if m.end() < n else ""
            if tok in _RAW_PREFIXES and nxt == '"':
                message = 'raw string literals (R"(...)") are not allowed in a kernel'
                raise PolicyViolation([(line_at(start), message)])
            if tok in _STRING_PREFIXES and nxt in ('"', "'"):
                pos = quoted(m.end())
                continue
            identifiers.append((start, tok))
            pos = m.end()
    pieces: list[str] = []
    at = 0
    for b_start, b_end in blanks:
        pieces.append(spliced[at:b_start])
        span = spliced[b_start:b_end]
        pieces.append(_NOT_NEWLINE.sub(" ", span) if "\n" in span else " " * len(span))
        at = b_end
    pieces.append(spliced[at:])
    return _Lexed(
        spliced=spliced,
        clean="".join(pieces),
        block_comments=tuple(block_comments),
        literals=literals,
        identifiers=tuple(identifiers),
        newlines=tuple(m.start() for m in re.finditer("\n", spliced)),
        splices=splices,
    )


# -- the checks ----------------------------------------------------------------------------------


@functools.cache
def allowed_headers_text() -> str:
    """The allow list in one line, for messages and prompts (built once: a source may be refused
    on every one of its lines)."""
    names = sorted(h for h in ALLOWED_HEADERS if "/" not in h)
    families = [f for f, _ in ALLOWED_HEADER_FAMILIES]
    libcu = sorted(h for h in ALLOWED_HEADERS if "/" in h)
    return ", ".join([*names, *families, *libcu])


def is_allowed_header(name: str) -> bool:
    if name in DENIED_HEADERS or not _HEADER_NAME.fullmatch(name):
        return False
    if ".." in name or "//" in name or name.endswith("/"):
        return False
    if name in ALLOWED_HEADERS:
        return True
    return any(pattern.fullmatch(name) for _, pattern in ALLOWED_HEADER_FAMILIES)


def _header_refusal(name: str) -> str:
    if name.startswith("/") or ".." in name.split("/"):
        return f"#include <{name}>: paths are not allowed, only CUDA header names"
    base = name.rsplit("/", 1)[-1]
    hint = _HEADER_HINTS.get(name) or _HEADER_HINTS.get(base)
    if hint is None and name.startswith(("thrust/", "cublas", "cufft", "cusparse")):
        hint = "host libraries are not available: the harness owns the host side"
    if hint is None and name.startswith("cub/"):
        hint = "CUB is not available: write the block or warp reduction (__shfl_down_sync...)"
    if hint is None:
        hint = "allowed: " + allowed_headers_text()
    return f"#include <{name}> is not allowed: {hint}"


def pragma_allowed(text: str) -> bool:
    """Whether the text after `#pragma` (or inside `_Pragma("...")`) is on the allow list."""
    m = re.fullmatch(r"[ \t\f\v]*([A-Za-z_][A-Za-z0-9_]*)(.*)", text, re.S)
    if m is None:
        return False
    name, rest = m.group(1), m.group(2)
    if name == "unroll":
        return _UNROLL_ARG.fullmatch(rest) is not None
    if name in ("nounroll", "once"):
        return rest.strip() == ""
    if name in _DIAG_PRAGMAS:
        return _DIAG_ARG.fullmatch(rest) is not None
    if name == "nv_diagnostic":
        return rest.strip() in ("push", "pop")
    return False


def _pragma_refusal(text: str) -> str:
    shown = " ".join(text.split())[:60]
    return f"#pragma {shown} is not allowed; allowed pragmas: " + ", ".join(ALLOWED_PRAGMAS)


def _check_raw(text: str) -> list[tuple[int | None, str]]:
    """What must be refused before lexing, because it changes how the lexer would read the rest."""
    found: list[tuple[int | None, str]] = []
    newlines: list[int] | None = None

    def line_at(pos: int) -> int:
        nonlocal newlines
        if newlines is None:  # only a source with something to refuse pays for the index
            newlines = [m.start() for m in re.finditer("\n", text)]
        return 1 + bisect.bisect_left(newlines, pos)

    for m in _TRIGRAPH.finditer(text):
        found.append((line_at(m.start()), f"trigraph {m.group()!r} is not allowed"))
    for m in _SPLICE_AFTER_SPACE.finditer(text):
        found.append(
            (
                line_at(m.start()),
                "a backslash followed by spaces at the end of a line (remove the spaces, or the backslash)",
            )
        )
    for m in _ODD_LINE_BREAKS.finditer(text):
        found.append((line_at(m.start()), f"character U+{ord(m.group()):04X} is not allowed (use \\n line ends)"))
    return found


def _directive_on_line_of(
    lx: _Lexed, pos: int, cache: dict[int, tuple[int, str, int, int] | None]
) -> tuple[int, str, int, int] | None:
    """The directive whose line holds spliced position `pos`, when its '#' comes before `pos`:
    ('#' position, name, name end, line end); None otherwise. Cached by line start."""
    clean = lx.clean
    start = lx.line_start(pos)
    if start not in cache:
        found = None
        m = _DIRECTIVE_START.match(clean, start)
        if m is not None:
            hash_at = m.end() - 1
            end = clean.find("\n", hash_at)
            end = len(clean) if end < 0 else end
            dm = _DIRECTIVE.match(clean, hash_at, end)
            name = (dm.group(1) or "") if dm else ""
            found = (hash_at, name, dm.end() if dm and name else hash_at + 1, end)
        cache[start] = found
    found = cache[start]
    return found if found is not None and found[0] < pos else None


def _structure_problems(lx: _Lexed) -> list[tuple[int, str]]:
    """Comments and line splices where a directive's shape could read differently to the compiler:
    inside its name, a /* */ comment spanning its line, a splice inside #include. Checked from each
    comment and splice (there are few), not from each directive line (there can be 60,000)."""
    found: list[tuple[int, str]] = []
    cache: dict[int, tuple[int, str, int, int] | None] = {}
    for c_start, c_end in lx.block_comments:  # a // comment ends the name and the line alike
        spans_lines = "\n" in lx.spliced[c_start:c_end]
        if spans_lines:
            # Whether a quote on this line opens a literal is the one thing lexers disagree on (in
            # an #if 0 group NVRTC reads the digit separator of 1'0 as a char literal, which hides
            # this /* to the end of the line): a comment that hides whole lines must not open
            # after one. At most one such comment opens on a line, so the slices stay linear.
            before = lx.clean[lx.line_start(c_start) : c_start]
            if "'" in before or '"' in before:
                found.append(
                    (
                        c_start,
                        "a /* comment that runs over several lines must not open after a quote or a "
                        "digit separator on its line: start it on a line of its own, or use //",
                    )
                )
        d = _directive_on_line_of(lx, c_start, cache)
        if d is None:
            continue
        hash_at, _name, name_end, _end = d
        if c_start < name_end:
            found.append((hash_at, "a comment inside a directive name is not allowed"))
        if spans_lines:
            found.append((hash_at, "a /* */ comment that spans lines is not allowed in a directive"))
    for at in lx.splices:
        d = _directive_on_line_of(lx, at, cache)
        if d is None:
            continue
        hash_at, name, name_end, end = d
        if at < name_end:
            found.append((hash_at, "a line continuation (backslash-newline) inside a directive name is not allowed"))
        elif name == "include" and at < end:
            found.append((hash_at, "a line continuation inside #include is not allowed"))
    return found


def _check_directive(lx: _Lexed, hash_at: int, end: int) -> tuple[list[tuple[int, str]], str | None]:
    """One directive, from its '#' to the line's end in the clean text: violations (by position;
    the caller turns them into line numbers), and the header it includes."""
    line = hash_at  # a position: line numbers cost a bisect each, and most directives are fine
    m = _DIRECTIVE.match(lx.clean, hash_at, end)
    assert m is not None  # the caller saw the '#'
    name = m.group(1) or ""
    name_end = m.end() if name else hash_at + 1  # a null directive has no name for a comment to be inside
    rest = lx.clean[name_end:end]
    found: list[tuple[int, str]] = []

    if name.isdigit():
        found.append((line, _DIRECTIVE_REFUSALS["line"]))
        return found, None
    if name in _DIRECTIVE_REFUSALS:
        found.append((line, _DIRECTIVE_REFUSALS[name]))
        return found, None
    if name == "":
        if rest.strip(_WS):
            found.append((line, f"unknown directive {lx.clean[hash_at:end].strip()[:40]!r}"))
        return found, None
    if name not in _ALLOWED_DIRECTIVES:
        found.append((line, f"#{name} is not allowed"))
        return found, None
    if name == "pragma":
        if not pragma_allowed(rest):
            found.append((line, _pragma_refusal(lx.spliced[name_end:end])))
        return found, None
    if name != "include":
        return found, None

    hm = re.fullmatch(r"[ \t\f\v]*<([^<>\n]*)>[ \t\f\v]*", rest)
    if hm is None:
        stripped = rest.strip(_WS)
        if stripped.startswith('"'):
            found.append(
                (
                    line,
                    'quoted includes (#include "...") are not allowed: write '
                    "#include <X> with an allowed CUDA header, or put the code in the reply",
                )
            )
        elif not stripped:
            found.append((line, "#include with no header name"))
        elif stripped.startswith("<"):
            found.append((line, "malformed #include: write #include <X> alone on its line"))
        else:
            found.append(
                (
                    line,
                    "#include of a macro or an expression is not allowed: write "
                    "#include <X> with an allowed CUDA header",
                )
            )
        return found, None
    span = (name_end + hm.start(1), name_end + hm.end(1))
    header = lx.spliced[span[0] : span[1]]
    if lx.clean[span[0] : span[1]] != header:
        found.append((line, "#include <...> with a comment or quote inside the brackets is not allowed"))
        return found, None
    if not is_allowed_header(header):
        found.append((line, _header_refusal(header)))
        return found, None
    return found, header


def _check_pragma_operator(lx: _Lexed, pos: int) -> str | None:
    """`_Pragma("text")`: allowed only as the literal form with an allowed pragma inside."""
    m = _PRAGMA_OPEN.match(lx.clean, pos)
    if m is None:
        return '_Pragma(...) is allowed only with a string literal, e.g. _Pragma("unroll")'
    quote_at = m.end() - 1
    body = lx.literals.get(quote_at)
    close = _PRAGMA_CLOSE.match(lx.clean, quote_at + 1 + len(body or ""))
    if body is None or close is None:
        return '_Pragma(...) is allowed only with a string literal, e.g. _Pragma("unroll")'
    text = body.replace('\\"', '"').replace("\\\\", "\\")
    if not pragma_allowed(text):
        return _pragma_refusal(text)
    return None


def _macro_refusal(name: str) -> str:
    hint = _MACRO_HINTS.get(name, "write the code it stands for out")
    return f"{name} is a macro of the CUDA headers that pastes tokens or emits a pragma: {hint}"


def _fixed_name_refusal(directive: str, name: str) -> str:
    return (
        f"#{directive} {name} is not allowed: a macro of the CUDA headers that pastes tokens or emits a "
        f"pragma uses {name}; choose another name"
    )


def check_source_policy(source: str, macros: HeaderMacros | None = None) -> tuple[str, ...]:
    """Refuse (with a PolicyViolation, a FormatError) a source that could make the compiler read a
    host file; return the allowed headers it includes, in order.

    `source` must have `\\n` line ends (engine.compile.source normalises CRLF before this).
    `macros`: what the CUDA headers' macros allow (engine/compile/header_macros.py); by default
    those of this process's compiler headers, scanned on the first call."""
    violations: list[tuple[int | None, str]] = list(_check_raw(source))
    if violations:
        raise PolicyViolation(violations)
    lx = _lex(source)
    headers: list[str] = []

    clean, n = lx.clean, len(lx.clean)
    # Null directives and the plain ones (#define, #if...) can only go wrong through a comment or a
    # splice in their shape (_structure_problems); every other directive line is checked here.
    for m in _CHECKED_DIRECTIVE.finditer(clean):
        hash_at = m.start(1)
        end = clean.find("\n", hash_at)
        found, header = _check_directive(lx, hash_at, n if end < 0 else end)
        violations.extend((lx.line_of(pos), message) for pos, message in found)
        if header is not None and header not in headers:
            headers.append(header)
    violations.extend((lx.line_of(pos), message) for pos, message in _structure_problems(lx))

    for m in _PASTE.finditer(lx.clean):
        violations.append(
            (
                lx.line_of(m.start()),
                "token pasting (##) is not allowed: a pasted name could form _Pragma or __has_include "
                "where no check sees it; write the names out",
            )
        )
    for m in re.finditer(r"%:", lx.clean):
        violations.append((lx.line_of(m.start()), "the digraph %: is not allowed (write #)"))
    for m in re.finditer(r"\\", lx.clean):
        violations.append(
            (
                lx.line_of(m.start()),
                "a backslash outside strings and comments is not allowed (a universal character name "
                "such as \\u0041 can spell a name the check cannot see)",
            )
        )
        break  # one is enough to say what to fix
    for m in _NON_ASCII.finditer(lx.clean):
        violations.append(
            (
                lx.line_of(m.start()),
                f"non-ASCII character {m.group()!r} outside comments and strings is not allowed",
            )
        )
        break  # one is enough to say what to fix
    if macros is None:
        macros = header_macros.current()
    refused = macros.refused
    for pos, ident in lx.identifiers:
        if ident in _FORBIDDEN_IDENTIFIERS:
            violations.append((lx.line_of(pos), _FORBIDDEN_IDENTIFIERS[ident]))
        elif ident == "_Pragma":
            problem = _check_pragma_operator(lx, pos + len(ident))
            if problem is not None:
                violations.append((lx.line_of(pos), problem))
        elif ident in refused:
            # Wherever it is spelled: called, passed on, or the body of the candidate's own #define.
            violations.append((lx.line_of(pos), _macro_refusal(ident)))
    if macros.fixed:
        for m in _DEFINE_OR_UNDEF.finditer(clean):
            if m.group(2) in macros.fixed and m.group(2) not in refused:
                violations.append((lx.line_of(m.start(2)), _fixed_name_refusal(m.group(1), m.group(2))))

    if violations:
        violations.sort(key=lambda v: v[0] or 0)
        raise PolicyViolation(violations)
    return tuple(headers)
