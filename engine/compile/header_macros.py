"""The macros of the CUDA headers that a candidate may not use, because their expansion can form what
the include policy refuses where the candidate spells it.

The policy (includes.py) refuses `##`, `_Pragma` with anything but an allowed literal, `__pragma` and
`__has_include` in the candidate's text; but a macro of the headers may paste or emit a pragma on the
candidate's behalf: `_CCCL_PP_CAT(__has_, include)(</etc/passwd>)` probes a host file and
`_CCCL_PRAGMA(message("..."))` gets past the pragma allow list. So every header the compiler may read
(the folders of engine/compile/headers.py, which are also all the jail lets it read) is scanned once per
process for `#define` lines, and a macro is *refused* (the candidate may not write its name anywhere)
when the candidate could steer what it pastes, emits or probes:

- a function-like macro whose replacement list holds `##`, `_Pragma`, `__pragma` or `__has_include`
  (or `__has_include_next`, `__has_embed`), or names a refused macro (the closure, to a fixed point): its
  arguments are the candidate's;
- an object-like macro that leads to one of those: its own tokens are fixed, so its expansion is
  computed (every definition of every macro in it, whatever `#if` branch holds it) and it is refused
  when that expansion can end in a refused function-like macro's name, `_Pragma` or `__has_include`, or
  inside an unclosed call, where the candidate's next tokens would become the arguments; or when the
  expansion cannot be computed within a budget.

An object-like macro whose expansion merely pastes fixed tokens (`__device__` in the toolkit's
host_defines.h, whose MSVC branch pastes `__##a##__`; libcu++'s `_CUDA_VSTD`, which pastes its ABI
version in CUDA 13.0) stays usable: nothing of the candidate reaches the paste, unless the candidate
defines a macro named like a token that reaches the paste. So those names (every name in the
arguments of the macro calls of such an expansion, what it pastes together, and the operands of its
`_Pragma` and `__has_include`) are *fixed*: the candidate may not `#define` or `#undef` them.

Every definition in the folders counts, whichever `#if` branch holds it (a candidate's own `#define`
before an `#include` can pick the branch), and a name defined several times counts with each
definition. The scan and the analysis take 0.7-1 s for NVRTC 13.5's 2,400 headers (20 MB) on a
2-core VM; they run off the event loop (the policy is called from a worker thread), once per process
and set of folders.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

# What a macro of the headers must not let the candidate steer: the pasting operator and the
# operators that emit a pragma or probe a file (the EDG spellings of __has_include included).
PASTE = frozenset({"##", "%:%:"})
SINKS = frozenset(
    {
        "_Pragma",
        "__pragma",
        "__has_include",
        "__has_include_next",
        "__has_include__",
        "__has_include_next__",
        "__has_embed",
    }
)

# Enough for the deepest expansion of the CUDA headers' object-like macros (libcu++'s namespaces: a few
# hundred tokens); a macro that needs more is refused, never guessed.
_TOKEN_BUDGET = 50_000
_MAX_ALTERNATIVES = 256

_DEFINE = re.compile(rb"#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)")
_DIGRAPH_DEFINE = re.compile(rb"(?:#|%:)[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)")
_BODY_TOKEN = re.compile(
    r"""(?P<space>[ \t\f\v\r]+)
    |(?P<comment>//.*|/\*.*?(?:\*/|$))
    |(?P<str>(?:u8|u|U|L)?"(?:[^"\\]|\\.)*"?|(?:u8|u|U|L)?'(?:[^'\\]|\\.)*'?)
    |(?P<id>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<num>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.'])*)
    |(?P<punct>\#\#|%:%:|\#|%:|\.\.\.|.)""",
    re.X | re.S,
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Definition:
    params: tuple[str, ...] | None  # None: object-like
    body: tuple[str, ...]  # the replacement list's tokens, comments gone, whitespace dropped
    variadic: bool = False  # the last parameter takes the rest (`...` as __VA_ARGS__, or GNU `args...`)


@dataclass(frozen=True)
class HeaderMacros:
    """What the policy needs from the headers; `refused` and `fixed` are what it checks."""

    refused: frozenset[str]  # names the candidate may not write
    fixed: frozenset[str]  # names the candidate may not #define or #undef
    folders: tuple[str, ...] = ()
    files: int = 0
    bytes: int = 0
    macros: int = 0
    seconds: float = 0.0
    reasons: dict[str, str] = field(default_factory=dict, compare=False, repr=False)


NO_HEADERS = HeaderMacros(frozenset(), frozenset())


# -- reading the headers -------------------------------------------------------------------------


def _tokens(text: str) -> list[str]:
    out = []
    for m in _BODY_TOKEN.finditer(text):
        kind = m.lastgroup
        if kind in ("space", "comment"):
            continue
        out.append(m.group())
    return out


def parse_definition(rest: str) -> Definition:
    """A `#define NAME` line's text after NAME (line splices joined, comments not yet removed)."""
    if rest.startswith("("):
        close = rest.find(")")
        if close < 0:  # malformed: whatever follows counts as the body
            return Definition((), tuple(_tokens(rest[1:])))
        names = []
        variadic = False
        for raw in rest[1:close].split(","):
            raw = re.sub(r"/\*.*?\*/", " ", raw).strip()
            if raw.endswith("..."):  # `...` is __VA_ARGS__; GNU's `args...` names it
                names.append(raw[:-3].strip() or "__VA_ARGS__")
                variadic = True
            elif raw:
                names.append(raw)
        return Definition(tuple(names), tuple(_tokens(rest[close + 1 :])), variadic)
    return Definition(None, tuple(_tokens(rest)))


def definitions_in(text: str | bytes) -> Iterator[tuple[str, Definition]]:
    """Every `#define` of a header's text, line splices joined. One behind `//` on its line is a
    comment; other text that looks like a define (in a /* */ comment, say) counts: a definition too
    many can only refuse more."""
    data = text.encode("latin-1", "replace") if isinstance(text, str) else text
    data = data.replace(b"\\\r\n", b"").replace(b"\\\n", b"")
    # A literal '#' lets the regex engine skip ahead fast; the %: digraph is looked for only where present.
    for m in (_DIGRAPH_DEFINE if b"%:" in data else _DEFINE).finditer(data):
        prefix = data[data.rfind(b"\n", 0, m.start()) + 1 : m.start()]
        comment = prefix.find(b"//")
        if comment >= 0 and b"*/" not in prefix[comment:]:
            continue  # in a // comment (documentation examples): never a directive
        end = data.find(b"\n", m.end())
        end = len(data) if end < 0 else end
        rest = data[m.end() : end].decode("latin-1")
        # A /* comment that runs past the line end continues the directive after it closes.
        while rest.count("/*") > rest.count("*/") and end < len(data):
            close = data.find(b"*/", end)
            if close < 0:
                break
            line_end = data.find(b"\n", close)
            line_end = len(data) if line_end < 0 else line_end
            rest += " " + data[end:line_end].decode("latin-1").replace("\n", " ")
            end = line_end
        yield m.group(1).decode(), parse_definition(rest)


def _header_files(folders: Sequence[str]) -> Iterator[str]:
    """Every file beneath `folders`, each folder once (one may hold another: include/ and include/cccl;
    a link to a folder is followed, as the compiler would)."""
    seen: set[tuple[int, int]] = set()
    stack: list[str] = []
    for folder in folders:
        try:
            st = os.stat(folder)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            stack.append(folder)
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir():
                    st = entry.stat()
                    if (st.st_dev, st.st_ino) not in seen:
                        seen.add((st.st_dev, st.st_ino))
                        stack.append(entry.path)
                elif entry.is_file():
                    yield entry.path
            except OSError:
                continue


def scan(folders: Sequence[str]) -> tuple[dict[str, list[Definition]], int, int]:
    """Every macro defined beneath `folders`, each with its distinct definitions; files and bytes read."""
    macros: dict[str, list[Definition]] = defaultdict(list)
    files = size = 0
    for path in _header_files(folders):
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        files += 1
        size += len(data)
        if b"define" not in data:
            continue
        for name, definition in definitions_in(data):
            if definition not in macros[name]:
                macros[name].append(definition)
    return dict(macros), files, size


# -- expanding an object-like macro ----------------------------------------------------------------


class _Unknown(Exception):
    """The expansion could not be computed within the budget."""


@dataclass(frozen=True)
class _Tok:
    text: str
    hide: frozenset[str] = frozenset()


@dataclass
class _Outcome:
    """What the expansions of one object-like macro can leave for the candidate's next tokens."""

    unknown: bool = False
    tails: set[str] = field(default_factory=set)  # the last token of each alternative
    open_call: bool = False  # an expansion ends inside a macro call's parentheses
    open_sink: bool = False  # a _Pragma / __has_include whose parentheses do not close in it
    steering: set[str] = field(default_factory=set)  # names whose meaning reaches a paste or operand


class _Expander:
    """The C preprocessor's macro expansion (Prosser's algorithm, hide sets and all), where a name with
    several definitions expands each way."""

    def __init__(self, macros: dict[str, list[Definition]]) -> None:
        self.macros = macros
        self.budget = _TOKEN_BUDGET
        self.open_call = False
        # Names whose meaning reaches a paste or an operator's operand: every token of a macro call's
        # arguments (an argument may be pasted further down, after its own expansion), and every
        # token a paste forms.
        self.steering: set[str] = set()
        self._in_argument = 0

    def _spend(self, n: int = 1) -> None:
        self.budget -= n
        if self.budget < 0:
            raise _Unknown

    def expand(self, tokens: list[_Tok]) -> list[list[_Tok]]:
        """Every full expansion of `tokens` (at most _MAX_ALTERNATIVES, or _Unknown)."""
        done: list[list[_Tok]] = []
        work: list[tuple[list[_Tok], list[_Tok]]] = [([], tokens)]
        while work:
            out, rest = work.pop()
            i = 0
            branched = False
            while i < len(rest):
                self._spend()
                tok = rest[i]
                if self._in_argument:
                    self.steering.add(tok.text)
                defs = self.macros.get(tok.text)
                if not defs or tok.text in tok.hide:
                    out.append(tok)
                    i += 1
                    continue
                alternatives: list[tuple[list[_Tok], list[_Tok]]] = []  # (output so far, what is left)
                unexpanded = False
                for d in defs:
                    if d.params is None:
                        for body in self._substitute(d, {}, tok.hide | {tok.text}):
                            alternatives.append((out, body + rest[i + 1 :]))
                        continue
                    call = self._call(rest, i + 1, d)
                    if call is None:  # no '(' follows: the name stays as it is
                        unexpanded = True
                    elif call == "open":  # the parentheses do not close: the candidate's tokens would
                        self.open_call = True
                        unexpanded = True
                    else:
                        args, close = call
                        hide = (tok.hide & rest[close].hide) | {tok.text}
                        for body in self._substitute(d, args, hide):
                            alternatives.append((out, body + rest[close + 1 :]))
                if unexpanded:
                    alternatives.append(([*out, tok], rest[i + 1 :]))
                if len(alternatives) + len(work) + len(done) > _MAX_ALTERNATIVES:
                    raise _Unknown
                work.extend((list(o), r) for o, r in alternatives)
                branched = True
                break
            if not branched:
                done.append(out)
        return done

    def _call(
        self, toks: list[_Tok], at: int, d: Definition
    ) -> tuple[dict[str, list[_Tok]], int] | Literal["open"] | None:
        """The arguments of a call whose '(' is at `at`: (args by parameter, index of ')'), None when
        no '(' is there, "open" when it does not close."""
        if at >= len(toks) or toks[at].text != "(":
            return None
        depth = 0
        args: list[list[_Tok]] = [[]]
        for j in range(at, len(toks)):
            text = toks[j].text
            if text == "(":
                depth += 1
                if depth == 1:
                    continue
            elif text == ")":
                depth -= 1
                if depth == 0:
                    for arg in args:
                        self.steering.update(t.text for t in arg)
                    return self._bind(d, args), j
            elif text == "," and depth == 1:
                args.append([])
                continue
            args[-1].append(toks[j])
        return "open"

    @staticmethod
    def _bind(d: Definition, args: list[list[_Tok]]) -> dict[str, list[_Tok]]:
        """Arguments by parameter. A count that does not fit is no program that compiles, but it may
        also be this model's mistake (a GNU extension, a definition from another branch): unknown."""
        params = d.params or ()
        if not params:
            if args != [[]]:
                raise _Unknown
            return {}
        if d.variadic:
            fixed = len(params) - 1
            if len(args) < fixed:
                raise _Unknown
            va: list[_Tok] = []
            for k, arg in enumerate(args[fixed:]):
                if k:
                    va.append(_Tok(","))
                va.extend(arg)
            bound = dict(zip(params[:fixed], args[:fixed], strict=True))
            bound[params[-1]] = va
            return bound
        if len(args) != len(params):
            raise _Unknown
        return dict(zip(params, args, strict=True))

    def _substitute(self, d: Definition, args: dict[str, list[_Tok]], hide: frozenset[str]) -> list[list[_Tok]]:
        """The replacement list with the arguments in (each way their expansions go), pasted, and the
        hide set added."""
        body = d.body
        self._spend(len(body))
        pieces: list[list[list[_Tok]]] = []  # a sequence of choices; each choice a list of alternatives
        expanded: dict[str, list[list[_Tok]]] = {}
        n = len(body)
        k = 0
        out: list[_Tok | None] = []  # None: a placemarker (an empty argument next to ##)

        def flush() -> None:
            if out:
                pieces.append([[t for t in out if t is not None]])
                out.clear()

        while k < n:
            t = body[k]
            nxt = body[k + 1] if k + 1 < n else None
            prev = body[k - 1] if k else None
            if d.params is not None and t in ("#", "%:") and nxt in args:
                out.append(_Tok(_stringize(args[nxt])))
                k += 2
                continue
            if t in PASTE and out and k + 1 < n:
                right = body[k + 1]
                right_toks: list[_Tok | None] = list(args[right]) if right in args else [_Tok(right)]
                if not right_toks:
                    right_toks = [None]
                left = out.pop()
                if (
                    d.variadic
                    and d.params  # a variadic macro has parameters: __VA_ARGS__ at least
                    and left is not None
                    and left.text == ","
                    and right == d.params[-1]
                    and not args[right]
                ):
                    k += 2  # GNU: `, ## __VA_ARGS__` drops the comma when there are no variable arguments
                    continue
                if left is None:
                    out.extend(right_toks)
                elif right_toks[0] is None:
                    out.append(left)
                else:
                    first = right_toks[0]
                    out.append(_Tok(left.text + first.text, left.hide & first.hide))
                    self.steering.add(left.text + first.text)
                    out.extend(right_toks[1:])
                k += 2
                continue
            if t in args:
                if (nxt in PASTE) or (prev in PASTE):
                    out.extend(args[t] or [None])
                else:
                    if t not in expanded:
                        self._in_argument += 1
                        try:
                            expanded[t] = self.expand(list(args[t]))
                        finally:
                            self._in_argument -= 1
                    flush()
                    pieces.append(expanded[t])
                k += 1
                continue
            out.append(_Tok(t))
            k += 1
        flush()
        results: list[list[_Tok]] = [[]]
        for choice in pieces:
            results = [r + c for r in results for c in choice]
            if len(results) > _MAX_ALTERNATIVES:
                raise _Unknown
        return [[_Tok(t.text, t.hide | hide) for t in r] for r in results]


def _stringize(arg: list[_Tok]) -> str:
    text = " ".join(t.text for t in arg)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _outcome(name: str, macros: dict[str, list[Definition]]) -> _Outcome:
    expander = _Expander(macros)
    try:
        alternatives = expander.expand([_Tok(name)])
    except _Unknown:
        return _Outcome(unknown=True)
    result = _Outcome(open_call=expander.open_call, steering=expander.steering)
    for alt in alternatives:
        if alt:
            result.tails.add(alt[-1].text)
        for at, tok in enumerate(alt):
            if tok.text in SINKS:
                end = _closes(alt, at + 1)
                if end is None:
                    result.open_sink = True
                else:
                    result.steering.update(t.text for t in alt[at + 1 : end])
    result.steering = {t for t in result.steering if _IDENT.fullmatch(t)}
    return result


def _closes(toks: list[_Tok], at: int) -> int | None:
    """Where the group a '(' at `at` opens closes within `toks`; None when it does not (or no '(')."""
    if at >= len(toks) or toks[at].text != "(":
        return None
    depth = 0
    for j in range(at, len(toks)):
        depth += toks[j].text == "("
        depth -= toks[j].text == ")"
        if depth == 0:
            return j
    return None


# -- the analysis --------------------------------------------------------------------------------


def _identifiers(d: Definition) -> set[str]:
    params = set(d.params or ())
    return {t for t in d.body if _IDENT.fullmatch(t) and t not in params}


def _direct(d: Definition) -> bool:
    return any(t in PASTE or t in SINKS for t in d.body)


def analyse(macros: dict[str, list[Definition]]) -> tuple[frozenset[str], frozenset[str], dict[str, str]]:
    """(refused, fixed, why each refused name is) for the macros of a set of headers."""
    names_in = {name: set().union(*(_identifiers(d) for d in defs)) for name, defs in macros.items()}
    used_by: dict[str, set[str]] = defaultdict(set)
    for name, ids in names_in.items():
        for ident in ids:
            used_by[ident].add(name)
    function_like = {name for name, defs in macros.items() if any(d.params is not None for d in defs)}
    object_like = {name for name, defs in macros.items() if any(d.params is None for d in defs)}

    # Every macro that reaches a paste or a sink at all.
    reaching = {name for name, defs in macros.items() if any(_direct(d) for d in defs)}
    work = list(reaching)
    while work:
        for user in used_by.get(work.pop(), ()):
            if user not in reaching:
                reaching.add(user)
                work.append(user)

    reasons: dict[str, str] = {}
    refused: set[str] = set()
    for name in function_like:
        if any(d.params is not None and _direct(d) for d in macros[name]):
            refused.add(name)
            reasons[name] = "pastes or emits a pragma"
    outcomes = {name: _outcome(name, macros) for name in sorted(object_like & reaching)}

    def open_(name: str) -> str | None:
        o = outcomes[name]
        if o.unknown:
            return "expands too far to be checked"
        if o.open_call or o.open_sink:
            return "leaves a call open for the tokens after it"
        tail = next((t for t in sorted(o.tails) if t in SINKS or t in refused), None)
        return f"can expand to {tail}" if tail else None

    changed = True
    while changed:
        changed = False
        for name in sorted(outcomes):
            if name not in refused and (why := open_(name)):
                refused.add(name)
                reasons[name] = why
                changed = True
        work = list(refused)
        while work:
            current = work.pop()
            for user in used_by.get(current, ()):
                if (
                    user in function_like
                    and user not in refused
                    and any(d.params is not None and current in _identifiers(d) for d in macros[user])
                ):
                    refused.add(user)
                    reasons[user] = f"uses {current}"
                    work.append(user)
                    changed = True

    # What an allowed expansion pastes, or hands to _Pragma or __has_include, must stay the headers'.
    fixed: set[str] = set()
    for name, outcome in outcomes.items():
        if name not in refused:
            fixed.update(outcome.steering)
    return frozenset(refused), frozenset(fixed), reasons


def _identity(folders: Iterable[str]) -> tuple[tuple[str, int, int, int], ...]:
    out = []
    for folder in folders:
        try:
            st = os.stat(folder)
        except OSError:
            continue
        out.append((os.path.realpath(folder), st.st_dev, st.st_ino, st.st_mtime_ns))
    return tuple(out)


@functools.lru_cache(maxsize=4)
def _analysed(identity: tuple[tuple[str, int, int, int], ...]) -> HeaderMacros:
    started = time.perf_counter()
    folders = tuple(entry[0] for entry in identity)
    macros, files, size = scan(folders)
    refused, fixed, reasons = analyse(macros)
    return HeaderMacros(refused, fixed, folders, files, size, len(macros), time.perf_counter() - started, reasons)


_lock = threading.RLock()  # current() holds it around for_folders()


def for_folders(folders: Sequence[str]) -> HeaderMacros:
    """The analysis of the headers beneath `folders`, computed once per process and set of folders
    (their path, device, inode and modification time)."""
    identity = _identity(folders)
    if not identity:
        return NO_HEADERS
    with _lock:  # one thread scans; the others wait for its answer
        return _analysed(identity)


def compiler_folders() -> tuple[str, ...]:
    """The header folders the compiler processes use (engine/compile/nvrtc_library.py, the same call
    they make; NVRTC is loaded here for its version), or the toolkit's when NVRTC cannot be loaded."""
    from cuda_llm.engine.compile import headers, nvrtc_library

    try:
        found = nvrtc_library.header_folders()
    except Exception:  # no NVRTC here: nothing compiles, but the toolkit's headers are still a guide
        found = headers.find_toolkit_headers()
    return tuple(str(d) for d in found.dirs) if found else ()


_current: HeaderMacros | None = None


@dataclass(frozen=True)
class KnownMacros:
    """An analysis and the identity of the folders it was made of (_identity): what a process hands
    the compiler children it starts, so that each need not scan the same 20 MB again."""

    identity: tuple[tuple[str, int, int, int], ...]
    macros: HeaderMacros


def known() -> KnownMacros | None:
    """This process's analysis of its compiler headers, if current() has made it."""
    made = _current
    if made is None or not made.folders:
        return None
    return KnownMacros(_identity(made.folders), made)


def adopt(given: KnownMacros | None) -> bool:
    """Take another process's analysis as this one's current() where it was made of these very
    folders (path, device, inode, modification time: what the per-process cache keys on); else
    nothing is taken and current() scans. A compiler child calls this before it is jailed
    (compiler_process.prepare_child), with what its parent made: a few seconds less to start it."""
    global _current
    if given is None or _identity(compiler_folders()) != given.identity:
        return False
    with _lock:
        if _current is None:
            _current = given.macros
    return _current is given.macros


def current() -> HeaderMacros:
    """The analysis for this process's compiler headers, kept once made (the first call loads NVRTC
    and scans; concurrent first calls wait for it). A compiler child makes it before it is jailed
    (worker.prepare_child), where a chroot hides the folders' real paths."""
    global _current
    if _current is None:
        with _lock:
            if _current is None:
                _current = for_folders(compiler_folders())
    return _current
