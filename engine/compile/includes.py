"""The include and preprocessor policy, applied to a candidate before anything is compiled.

A reply must never make the compiler read a file of the host: whatever it reads can come back in
the compile log, and the log goes to a model that may run on someone else's server. So the only
way in is `#include <X>` with X a CUDA header from an allow list, and every preprocessor feature
that can name a file (quoted or computed includes, `#include_next`, `#import`, `#embed`,
`__has_include`, `#line`, unknown pragmas) is refused with a message written for the model.

The check works on the source as the compiler sees it: line splices joined first (phase 2 of
translation), then comments and string literals blanked (phase 3), so a `#include` inside a
comment or a string is harmless while one behind a comment or a splice is caught. Whatever this
lexer cannot be sure of (trigraphs, raw strings, odd line ends) is refused rather than guessed:
honest kernels never need them, and a guess that differs from the compiler's is a way around the
policy.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from cuda_llm.engine.contract.errors import FormatError

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
_DIRECTIVE = re.compile(r"#[ \t\f\v]*([A-Za-z_][A-Za-z0-9_]*|[0-9]+)?")
_HEADER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]*")


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
    comments: tuple[tuple[int, int], ...]  # [start, end) in spliced coordinates
    literals: dict[int, str]  # opening-quote position -> literal text between the quotes
    identifiers: tuple[tuple[int, str], ...]
    newlines: tuple[int, ...]  # positions of "\n" in spliced
    splices: tuple[int, ...]  # positions in spliced where a splice was joined

    def line_of(self, pos: int) -> int:
        """The 1-based line of the original source that holds spliced position `pos`."""
        return 1 + bisect.bisect_left(self.newlines, pos) + bisect.bisect_right(self.splices, pos)


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
    clean = list(spliced)
    comments: list[tuple[int, int]] = []
    literals: dict[int, str] = {}
    identifiers: list[tuple[int, str]] = []
    n = len(spliced)

    def line_at(pos: int) -> int:
        return 1 + spliced.count("\n", 0, pos) + bisect.bisect_right(splices, pos)

    def blank(start: int, end: int) -> None:
        for k in range(start, end):
            if clean[k] != "\n":
                clean[k] = " "

    def quoted(open_at: int) -> int:
        """Blank a string or char literal; return the position after it. A literal ends at its
        closing quote or, unterminated, at the line end (where the compiler also stops it)."""
        quote = spliced[open_at]
        k = open_at + 1
        while k < n:
            ch = spliced[k]
            if ch == "\\":
                k += 2
                continue
            if ch == quote or ch == "\n":
                break
            k += 1
        k = min(k, n)
        literals[open_at] = spliced[open_at + 1 : k]
        blank(open_at + 1, k)
        return k + 1 if k < n and spliced[k] == quote else k

    pos = 0
    while True:
        m = _TOKEN.search(spliced, pos)
        if m is None:
            break
        tok, start = m.group(), m.start()
        if tok == "//":
            end = spliced.find("\n", start)
            end = n if end < 0 else end
            comments.append((start, end))
            blank(start, end)
            pos = end
        elif tok == "/*":
            end = spliced.find("*/", start + 2)
            if end < 0:
                raise PolicyViolation([(line_at(start), "unterminated /* comment")])
            comments.append((start, end + 2))
            blank(start, end + 2)
            pos = end + 2
        elif tok in ('"', "'"):
            pos = quoted(start)
        elif tok[0].isdigit() or tok[0] == ".":
            pos = m.end()
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
    newlines = tuple(i for i, ch in enumerate(spliced) if ch == "\n")
    return _Lexed(
        spliced=spliced,
        clean="".join(clean),
        comments=tuple(comments),
        literals=literals,
        identifiers=tuple(identifiers),
        newlines=newlines,
        splices=splices,
    )


# -- the checks ----------------------------------------------------------------------------------


def allowed_headers_text() -> str:
    """The allow list in one line, for messages and prompts."""
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

    def line_at(pos: int) -> int:
        return 1 + text.count("\n", 0, pos)

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


def _check_directive(lx: _Lexed, start: int, end: int) -> tuple[list[tuple[int, str]], str | None]:
    """One directive line [start, end) of the clean text: violations, and the header it includes."""
    line = lx.line_of(start)
    text = lx.clean[start:end]
    hash_at = start + (len(text) - len(text.lstrip(_WS)))
    m = _DIRECTIVE.match(lx.clean, hash_at, end)
    assert m is not None  # the caller saw the '#'
    name = m.group(1) or ""
    name_end = m.end()
    rest = lx.clean[name_end:end]
    found: list[tuple[int, str]] = []

    for c_start, c_end in lx.comments:
        if c_start >= end:
            break
        if c_end <= hash_at:
            continue
        if c_start < name_end:
            found.append((line, "a comment inside a directive name is not allowed"))
        if "\n" in lx.spliced[c_start:c_end]:
            found.append((line, "a /* */ comment that spans lines is not allowed in a directive"))
    if any(hash_at < s < name_end for s in lx.splices):
        found.append((line, "a line continuation (backslash-newline) inside a directive name is not allowed"))

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

    if any(name_end <= s < end for s in lx.splices):
        found.append((line, "a line continuation inside #include is not allowed"))
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
    m = re.compile(r"[ \t\f\v\n]*\([ \t\f\v\n]*\"").match(lx.clean, pos)
    if m is None:
        return '_Pragma(...) is allowed only with a string literal, e.g. _Pragma("unroll")'
    quote_at = m.end() - 1
    body = lx.literals.get(quote_at)
    close = re.compile(r"\"[ \t\f\v\n]*\)").match(lx.clean, quote_at + 1 + len(body or ""))
    if body is None or close is None:
        return '_Pragma(...) is allowed only with a string literal, e.g. _Pragma("unroll")'
    text = body.replace('\\"', '"').replace("\\\\", "\\")
    if not pragma_allowed(text):
        return _pragma_refusal(text)
    return None


def check_source_policy(source: str) -> tuple[str, ...]:
    """Refuse (with a PolicyViolation, a FormatError) a source that could make the compiler read a
    host file; return the allowed headers it includes, in order.

    `source` must have `\\n` line ends (engine.compile.source normalises CRLF before this)."""
    violations: list[tuple[int | None, str]] = list(_check_raw(source))
    if violations:
        raise PolicyViolation(violations)
    lx = _lex(source)
    headers: list[str] = []

    at = 0
    for raw_line in lx.clean.split("\n"):
        start, end = at, at + len(raw_line)
        at = end + 1
        if raw_line.lstrip(_WS).startswith("#"):
            found, header = _check_directive(lx, start, end)
            violations.extend(found)
            if header is not None and header not in headers:
                headers.append(header)

    for m in re.finditer(r"%:", lx.clean):
        violations.append((lx.line_of(m.start()), "the digraph %: is not allowed (write #)"))
    for m in _NON_ASCII.finditer(lx.clean):
        violations.append(
            (
                lx.line_of(m.start()),
                f"non-ASCII character {m.group()!r} outside comments and strings is not allowed",
            )
        )
        break  # one is enough to say what to fix
    for pos, ident in lx.identifiers:
        if ident in _FORBIDDEN_IDENTIFIERS:
            violations.append((lx.line_of(pos), _FORBIDDEN_IDENTIFIERS[ident]))
        elif ident == "_Pragma":
            problem = _check_pragma_operator(lx, pos + len(ident))
            if problem is not None:
                violations.append((lx.line_of(pos), problem))

    if violations:
        violations.sort(key=lambda v: v[0] or 0)
        raise PolicyViolation(violations)
    return tuple(headers)
