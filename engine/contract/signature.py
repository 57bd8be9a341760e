"""Find the kernels a CUDA source defines, with their parameters, without a compiler.

The launch plan is checked against these signatures before anything is compiled, so a reply with
an unknown kernel or mistyped arguments costs no NVRTC run and gets a message that names the
parameter. This is a scanner, not a C++ parser: it understands what kernel signatures are made
of (qualifiers, attributes, `extern "C"` blocks, templates, comments, literals, line splices) and
reports anything else as written, for the binder to reject. What it cannot see (a type hidden
behind a macro) is caught afterwards by the cross-check against the compiled PTX.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

# Type keywords that combine into one builtin type ("unsigned long long int").
_BUILTIN_WORDS = frozenset({"signed", "unsigned", "short", "long", "int", "char", "float", "double", "void", "bool"})
# Words that qualify a parameter without changing what the harness passes.
_QUALIFIERS = frozenset(
    {"const", "volatile", "__restrict__", "__restrict", "restrict", "__grid_constant__", "register"}
)
# Declaration attributes followed by a parenthesised argument list, skipped as a unit.
_ATTRIBUTES_WITH_ARGS = frozenset(
    {
        "__launch_bounds__",
        "__maxnreg__",
        "__cluster_dims__",
        "__attribute__",
        "__declspec",
        "alignas",
        "__align__",
    }
)
# Namespaces under which the standard integer typedefs are also reachable.
_STD_PREFIXES = ("::cuda::std::", "::std::", "cuda::std::", "std::", "::")

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\f\v]+)
    |(?P<nl>\n)
    |(?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
    |(?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s"]{0,16})\(.*?(?:\)(?P=delim)"|\Z))
    |(?P<string>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*"?)
    |(?P<char>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*'?)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<number>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.'])*)
    |(?P<punct>::|->|.)
    """,
    re.VERBOSE | re.DOTALL,
)
_DIRECTIVE_RE = re.compile(r"[ \t\f\v]*#[ \t]*(\w*)([^\n]*)")
_DIRECTIVE_COMMENT_RE = re.compile(r"//.*|/\*.*?\*/")
_SPLICE_RE = re.compile(r"\\[ \t]*\n")


@dataclass(frozen=True)
class KernelParam:
    name: str  # "" for an unnamed parameter (allowed in a prototype)
    # The scalar type, or the element type of a pointer, in one canonical spelling without
    # qualifiers ("unsigned int", "float4", "size_t"); anything else as written ("Params").
    c_type: str
    pointer_depth: int  # 0 for a scalar; `float x[]` counts as a pointer
    is_const_pointee: bool  # `const T*`: the kernel promises not to write through it
    raw: str  # the parameter as written (tokens joined), for messages

    @property
    def is_pointer(self) -> bool:
        return self.pointer_depth > 0


@dataclass(frozen=True)
class KernelSignature:
    name: str
    params: tuple[KernelParam, ...]
    line: int  # 1-based line of the kernel's name in the source
    defined: bool = True  # False for a prototype that no definition follows

    def describe(self) -> str:
        """The signature as a model would write it: `k(const float* a, int n)`."""
        return f"{self.name}({', '.join(p.raw for p in self.params)})"


@dataclass(frozen=True)
class KernelScan:
    kernels: tuple[KernelSignature, ...]  # extern "C" __global__ kernels, in source order
    not_extern_c: tuple[str, ...] = ()  # __global__ functions with C++ linkage (mangled names)
    templates: tuple[str, ...] = ()  # template __global__ functions (never extern "C")
    macros: tuple[str, ...] = ()  # macros whose definition mentions __global__

    def get(self, name: str) -> KernelSignature | None:
        return next((k for k in self.kernels if k.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.kernels)


@dataclass(frozen=True)
class _Token:
    kind: str  # ident | number | string | raw | char | punct
    text: str
    line: int


def _splice(text: str) -> tuple[str, list[int]]:
    """Join lines ended by a backslash (translation phase 2); also return, for line numbers,
    the offsets in the joined text where a line break was removed."""
    parts: list[str] = []
    offsets: list[int] = []
    pos = 0
    length = 0
    for m in _SPLICE_RE.finditer(text):
        parts.append(text[pos : m.start()])
        length += m.start() - pos
        offsets.append(length)
        pos = m.end()
    parts.append(text[pos:])
    return "".join(parts), offsets


def _track_conditional(name: str, rest: str, dead_depth: int) -> int:
    """Nesting depth inside an `#if 0` region after this directive (0: live code)."""
    if dead_depth:
        if name in ("if", "ifdef", "ifndef"):
            return dead_depth + 1
        if name == "endif" or (dead_depth == 1 and name in ("else", "elif", "elifdef", "elifndef")):
            return dead_depth - 1
        return dead_depth
    if name == "if" and rest.strip() in ("0", "(0)", "false"):
        return 1
    return 0


def _tokenize(source: str) -> tuple[list[_Token], tuple[str, ...]]:
    """Tokens outside comments, preprocessor directives and `#if 0` regions, and the names of
    macros whose body mentions __global__ (so an unknown kernel can be explained)."""
    text, splices = _splice(source.replace("\r\n", "\n").replace("\r", "\n"))
    tokens: list[_Token] = []
    macros: list[str] = []
    line = 1  # line in the spliced text; splices before an offset are added back
    at_line_start = True
    # Code in an `#if 0` region is never compiled, so an old kernel a model left there must not
    # count (it could have the same name as the live one, with other parameters).
    dead_depth = 0
    pos = 0
    while pos < len(text):
        if at_line_start:
            directive = _DIRECTIVE_RE.match(text, pos)
            if directive:
                name = directive.group(1)
                rest = _DIRECTIVE_COMMENT_RE.sub(" ", directive.group(2))
                dead_depth = _track_conditional(name, rest, dead_depth)
                if name == "define" and "__global__" in rest and dead_depth == 0:
                    macro = re.match(r"\s*([A-Za-z_]\w*)", rest)
                    if macro:
                        macros.append(macro.group(1))
                pos = directive.end()
                continue
        m = _TOKEN_RE.match(text, pos)
        assert m is not None  # the last alternative matches any character
        kind = m.lastgroup or "raw"  # every alternative is named: never None
        if kind == "delim":
            kind = "raw"
        value = m.group()
        if kind == "nl":
            line += 1
            at_line_start = True
        elif kind not in ("ws", "comment"):
            # A comment is one space (translation phase 3): `/* x */ #define` is a directive.
            at_line_start = False
            if dead_depth == 0:
                tokens.append(_Token(kind, value, line + bisect_right(splices, m.start())))
        if kind in ("comment", "raw"):
            line += value.count("\n")
        pos = m.end()
    return tokens, tuple(macros)


def _match(tokens: list[_Token], i: int, open_: str, close: str) -> int:
    """Index of the token closing the bracket at `i` (len(tokens) if it never closes)."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].kind != "punct":
            continue
        if tokens[j].text == open_:
            depth += 1
        elif tokens[j].text == close:
            depth -= 1
            if depth == 0:
                return j
    return len(tokens)


def _skip_attribute(tokens: list[_Token], i: int) -> int:
    """If an attribute starts at `i`, the index after it; else `i`."""
    nxt = tokens[i + 1].text if i + 1 < len(tokens) else ""
    if tokens[i].text in _ATTRIBUTES_WITH_ARGS and nxt == "(":
        return _match(tokens, i + 1, "(", ")") + 1
    if tokens[i].text == "[" and nxt == "[":
        return _match(tokens, i, "[", "]") + 1
    return i


def _split_params(tokens: list[_Token]) -> list[list[_Token]]:
    """Split a parameter list at top-level commas (template arguments and defaults nest)."""
    params: list[list[_Token]] = [[]]
    depth = 0
    for t in tokens:
        if t.kind == "punct" and t.text in ("(", "[", "{", "<"):
            depth += 1
        elif t.kind == "punct" and t.text in (")", "]", "}", ">"):
            depth -= 1
        if depth == 0 and t.kind == "punct" and t.text == ",":
            params.append([])
        else:
            params[-1].append(t)
    return [] if params == [[]] else params


def _join(tokens: list[_Token]) -> str:
    """Tokens back to readable C: `const float* __restrict__ x`."""
    text = " ".join(t.text for t in tokens)
    text = re.sub(r" ?(::|[<>()\[\]]) ?", r"\1", text)
    text = re.sub(r" ?, ?", ", ", text)
    return text.replace(" *", "*").replace(" &", "&")


def _canonical(words: list[str]) -> str:
    """One spelling per type: `int unsigned` and `unsigned` both become `unsigned int`,
    `std::size_t` becomes `size_t`."""
    if not set(words) <= _BUILTIN_WORDS:
        text = " ".join(words)
        for prefix in _STD_PREFIXES:
            if text.startswith(prefix) and "::" not in text[len(prefix) :]:
                return text[len(prefix) :]
        return text
    if not words:
        return ""
    unsigned = "unsigned" in words
    longs = words.count("long")
    if "char" in words:
        return "unsigned char" if unsigned else "signed char" if "signed" in words else "char"
    for word in ("float", "void", "bool"):
        if word in words:
            return word
    if "double" in words:
        return "long double" if longs else "double"
    if "short" in words:
        base = "short"
    elif longs >= 2:
        base = "long long"
    elif longs == 1:
        base = "long"
    else:
        base = "int"
    return f"unsigned {base}" if unsigned else base


def _rejoin_scopes(tokens: list[_Token]) -> list[str]:
    """Word units with `::` glued to their neighbours: std :: size_t -> "std::size_t"."""
    units: list[str] = []
    glue = False
    for t in tokens:
        if t.text == "::":
            if units and units[-1] != "*" and not glue:
                units[-1] += "::"
            else:
                units.append("::")
            glue = True
        elif glue and t.text != "*":
            units[-1] += t.text
            glue = False
        else:
            units.append(t.text)
            glue = False
    return units


def _param(tokens: list[_Token]) -> KernelParam:
    raw = _join(tokens)
    for k, t in enumerate(tokens):
        if t.kind == "punct" and t.text == "=":
            tokens = tokens[:k]  # a default argument changes nothing the harness passes
            break
    kept: list[_Token] = []
    i = 0
    while i < len(tokens):
        j = _skip_attribute(tokens, i)
        if j == i:
            kept.append(tokens[i])
            j = i + 1
        i = j
    # `float x[]` and `float x[4]` decay to pointers.
    array_dims = 0
    while kept and kept[-1].text == "]":
        start = max((k for k, t in enumerate(kept) if t.text == "["), default=-1)
        if start < 0:
            break
        kept = kept[:start]
        array_dims += 1
    if any(t.kind != "ident" and t.text not in ("*", "::") for t in kept):
        # A reference, a function pointer, a template argument list: kept as written, for the
        # binder to reject with a message that asks for plain types.
        if len(kept) > 1 and kept[-1].kind == "ident":
            return KernelParam(kept[-1].text, _join(kept[:-1]), 0, False, raw)
        return KernelParam("", _join(kept), 0, False, raw)

    units = _rejoin_scopes(kept)
    stars = [k for k, u in enumerate(units) if u == "*"]
    first_star = stars[0] if stars else len(units)
    words = [(k, u) for k, u in enumerate(units) if u != "*" and u not in _QUALIFIERS]
    name = ""
    if words:
        last_at, last = words[-1]
        # `float* p`, `int n`, `size_t n` name a parameter; `float*`, `unsigned int`, `size_t`
        # alone are the types of unnamed ones.
        if last_at > first_star or (len(words) >= 2 and not stars and last not in _BUILTIN_WORDS):
            name = last
            words.pop()
    base = _canonical([u for k, u in words if k < first_star])
    depth = len(stars) + array_dims
    const_pointee = depth > 0 and "const" in units[:first_star]
    return KernelParam(name, base, depth, const_pointee, raw)


def _linkage_of(tokens: list[_Token], i: int) -> str | None:
    """The language of an `extern "C"` (or `extern "C++"`) starting at `i`; else None."""
    if tokens[i].text != "extern" or i + 1 >= len(tokens) or tokens[i + 1].kind != "string":
        return None
    return tokens[i + 1].text.strip('"')


class _Scanner:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.found: dict[str, KernelSignature] = {}
        self.not_c: list[str] = []
        self.templates: list[str] = []
        self.stack: list[str | None] = []  # per open brace: the linkage block it opens, or None

    def run(self) -> None:
        tokens = self.tokens
        decl_start = 0
        i = 0
        while i < len(tokens):
            t = tokens[i]
            lang = _linkage_of(tokens, i)
            if lang is not None and i + 2 < len(tokens) and tokens[i + 2].text == "{":
                self.stack.append(lang)
                i += 3
                decl_start = i
                continue
            if t.kind == "ident" and t.text == "__global__":
                i = self.kernel(decl_start, i)
                decl_start = i
                continue
            if t.kind == "punct" and t.text == "{":
                self.stack.append(None)
            elif t.kind == "punct" and t.text == "}" and self.stack:
                self.stack.pop()
            if t.kind == "punct" and t.text in ("{", "}", ";"):
                decl_start = i + 1
            i += 1

    def kernel(self, start: int, at: int) -> int:
        """Read the declaration whose `__global__` is at `at`; return where scanning resumes
        (the body's `{` or the prototype's `;`, so that braces stay balanced)."""
        tokens = self.tokens
        linkage = next((lk for lk in reversed(self.stack) if lk is not None), "C++")
        is_template = False
        for k in range(start, at):
            lang = _linkage_of(tokens, k)
            if lang is not None:
                linkage = lang
            is_template = is_template or tokens[k].text == "template"
        # The name is the first identifier followed by `(` that is not an attribute.
        j = at + 1
        while j < len(tokens):
            skipped = _skip_attribute(tokens, j)
            if skipped != j:
                j = skipped
                continue
            t = tokens[j]
            if t.kind == "punct" and t.text in ("{", "}", ";"):
                return j  # not a declaration this scanner understands; the compiler will say
            if t.kind == "ident" and j + 1 < len(tokens) and tokens[j + 1].text == "(":
                break
            j += 1
        else:
            return len(tokens)
        name_at = j
        close = _match(tokens, name_at + 1, "(", ")")
        end = close + 1
        while end < len(tokens) and tokens[end].text not in ("{", "}", ";"):
            end += 1
        defined = end < len(tokens) and tokens[end].text == "{"
        name = tokens[name_at].text
        if is_template:
            self.templates.append(name)
        elif linkage != "C":
            self.not_c.append(name)
        else:
            groups = _split_params(tokens[name_at + 2 : close])
            if len(groups) == 1 and [t.text for t in groups[0]] == ["void"]:
                groups = []
            sig = KernelSignature(name, tuple(_param(g) for g in groups), tokens[name_at].line, defined)
            previous = self.found.get(name)
            # A prototype first and its definition later: keep the definition.
            if previous is None or (defined and not previous.defined):
                self.found[name] = sig
        return end


def parse_kernels(source: str) -> KernelScan:
    """Every `__global__` function in `source`, sorted into callable (extern "C") and not."""
    tokens, macros = _tokenize(source)
    scanner = _Scanner(tokens)
    scanner.run()
    found = scanner.found
    return KernelScan(
        kernels=tuple(sorted(found.values(), key=lambda k: k.line)),
        not_extern_c=tuple(dict.fromkeys(n for n in scanner.not_c if n not in found)),
        templates=tuple(dict.fromkeys(scanner.templates)),
        macros=macros,
    )
