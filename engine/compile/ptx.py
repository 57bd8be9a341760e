"""Facts read off the PTX: kernel parameter sizes, reduced-precision arithmetic, and module-scope
`__device__` variables with the functions that write them.

The PTX is NVVM's output, whose layout is regular: module-scope declarations at column 0, one
function body per `{ ... }` at brace depth 0, one instruction per line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cuda_llm.engine.compile.result import DeviceGlobal

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*(?:\(([^)]*)\))?")
_SCALAR = re.compile(r"\.(?:b|s|u|f)(8|16|32|64)\b")
_ARRAY = re.compile(r"\[\s*(\d+)\s*\]")


def _strip_comments(ptx: str) -> str:
    return _COMMENT.sub("", ptx)


def _decl_bytes(decl: str) -> int:
    """Bytes of one `.param`/`.global` declaration: `.u64 x` is 8, `.align 4 .b8 s[20]` is 20."""
    if re.search(r"\.(?:texref|samplerref|surfref)\b", decl):
        return 8
    scalar = _SCALAR.search(decl)
    size = int(scalar.group(1)) // 8 if scalar else 0
    vector = re.search(r"\.v(\d)\b", decl)
    if vector:
        size *= int(vector.group(1))
    array = _ARRAY.search(decl)
    return size * int(array.group(1)) if array else size


def ptx_entries(ptx: str) -> dict[str, tuple[int, ...]]:
    """Kernel name -> byte size of each parameter, in order."""
    entries: dict[str, tuple[int, ...]] = {}
    for m in _ENTRY.finditer(_strip_comments(ptx)):
        params = (m.group(2) or "").strip()
        decls = [p for p in params.split(",") if p.strip()] if params else []
        entries[m.group(1)] = tuple(_decl_bytes(d) for d in decls)
    return entries


# -- precision ------------------------------------------------------------------------------------

_PRECISION_OF = {
    "f16": "fp16",
    "f16x2": "fp16",
    "bf16": "bf16",
    "bf16x2": "bf16",
    "tf32": "tf32",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "e4m3x2": "fp8",
    "e5m2x2": "fp8",
    "e4m3x4": "fp8",
    "e5m2x4": "fp8",
    "e2m1x2": "fp4",
    "e2m1x4": "fp4",
    "e2m3x2": "fp6",
    "e3m2x2": "fp6",
}
_REDUCED = "|".join(sorted(_PRECISION_OF, key=len, reverse=True))
_CONVERSION = re.compile(rf"\bcvt(?:\.[\w:]+)*?\.(?:{_REDUCED})\b[\w.:]*")
# wmma.mma names no input type for fp16 (...m16n16k16.f32.f32); its wmma.load.a/.b do.
_TENSOR = re.compile(rf"\b(?:wgmma\.mma_async|wmma\.mma|wmma\.load\.[ab]|mma)\.[\w.:]*?\.({_REDUCED})\b[\w.:]*")
_ARITHMETIC = re.compile(
    r"\b(?:add|sub|mul|fma|mad|neg|abs|min|max|div|rcp|sqrt|rsqrt|ex2|tanh|setp|set|testp)"
    rf"(?:\.[\w]+)*?\.({_REDUCED})\b[\w.]*"
)


def _statements(ptx: str) -> list[tuple[str, str]]:
    """(opcode, operands) of every instruction. cuda_fp16.h's inline asm puts several on one line
    inside braces ("{ cvt.rn.f16x2.f32 %r1, %f2, %f1; }"), so statements are split at ';' and
    stripped of the scope braces around them (vector operands keep theirs)."""
    found = []
    for statement in re.split(r"[;\n]", _strip_comments(ptx)):
        text = statement.strip().strip("{}").strip()
        while text.endswith(":") or re.match(r"^[\w$]+:\s", text):  # a label
            text = text.split(":", 1)[1].strip() if ":" in text else ""
        if text.startswith("@"):  # predicated: "@%p1 add.f16 ..."
            text = text.split(None, 1)[1] if " " in text else ""
        if not text or text.startswith((".", "{", "}")):
            continue
        parts = text.split(None, 1)
        found.append((parts[0], parts[1] if len(parts) == 2 else ""))
    return found


def precision_hints(ptx: str) -> tuple[str, ...]:
    """Reduced-precision work in the PTX, one hint per precision and kind, with the first
    instruction as the example: ("fp16 conversion: cvt.rn.f16.f32", ...)."""
    hints: dict[tuple[str, str], str] = {}
    for opcode, _ in _statements(ptx):
        for kind, pattern in (
            ("tensor-core mma", _TENSOR),
            ("conversion", _CONVERSION),
            ("arithmetic", _ARITHMETIC),
        ):
            if pattern.match(opcode) is None:
                continue
            suffixes = opcode.split(".")
            precision = next((_PRECISION_OF[s] for s in suffixes if s in _PRECISION_OF), "reduced precision")
            hints.setdefault((precision, kind), f"{precision} {kind}: {opcode}")
            break
    return tuple(hints.values())


# -- device globals --------------------------------------------------------------------------------

_GLOBAL_DECL = re.compile(
    r"^[ \t]*(?:\.(?:visible|extern|weak|common)\s+)*\.global\s+(?P<decl>[^;=]*?)"
    r"(?P<name>[A-Za-z_$%][\w$]*)\s*(?P<array>\[\s*\d*\s*\])?\s*(?:=|;)",
    re.M,
)
_FUNCTION = re.compile(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?(?P<name>[\w$.]+)")
_TOKEN = re.compile(r"[%A-Za-z_$][\w$]*")
# Instructions that write memory through their first operand. Loads, and stores to shared, local
# or parameter space, cannot change a `.global` variable.
_WRITE = re.compile(r"^(?:st|atom|red|cp\.async\.bulk|cp\.reduce\.async\.bulk|multimem)\b")
_NOT_GLOBAL_SPACE = re.compile(r"\.(?:shared|local|param|const)\b")


@dataclass(frozen=True)
class _Function:
    name: str
    is_entry: bool
    body: tuple[str, ...]  # instruction lines


def _functions(ptx: str) -> list[_Function]:
    functions: list[_Function] = []
    depth = 0
    header: str | None = None
    body: list[str] = []
    pending: str | None = None  # a function header seen, its body not yet opened
    for line in _strip_comments(ptx).split("\n"):
        if depth == 0:
            if _FUNCTION.search(line) is not None:
                pending = line
            elif line.strip().endswith(";"):  # a declaration (.extern .func ...;, .global x = {..};)
                pending = None
        opens, closes = line.count("{"), line.count("}")
        if depth == 0 and opens and pending is not None:
            header, pending, body = pending, None, []
        if depth > 0:
            body.append(line)
        depth += opens - closes
        if depth == 0 and header is not None and (opens or closes):
            m = _FUNCTION.search(header)
            assert m is not None
            functions.append(_Function(m.group("name"), ".entry" in header, tuple(body)))
            header = None
    return functions


def _operands(text: str) -> list[str]:
    """Split an instruction's operands at top-level commas ([addr] and {vec} stay whole)."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
        parts.append("".join(cur))
    return [p.strip() for p in parts]


def _uses(function: _Function, names: set[str]) -> tuple[set[str], set[str]]:
    """The globals `function` refers to, and those it writes: a flow-insensitive taint of the
    registers holding their addresses (mov/cvta/add chains), then the stores, atomics and
    reductions through them. Passing such an address to a call counts as a write: the callee may
    store through it."""
    instructions = [(op, _operands(rest)) for op, rest in _statements("\n".join(function.body))]

    taint: dict[str, set[str]] = {}

    def refs(operand: str) -> set[str]:
        found: set[str] = set()
        for tok in _TOKEN.findall(operand):
            if tok in names:
                found.add(tok)
            found |= taint.get(tok, set())
        return found

    changed = True
    while changed:
        changed = False
        for opcode, ops in instructions:
            if not ops or _WRITE.match(opcode) or opcode.startswith(("ld", "call")):
                continue  # a loaded value is data, not the variable's address
            sources: set[str] = set()
            for op in ops[1:]:
                sources |= refs(op)
            if not sources:
                continue
            for dest in _TOKEN.findall(ops[0]):
                if not sources <= taint.get(dest, set()):
                    taint.setdefault(dest, set()).update(sources)
                    changed = True

    referenced: set[str] = set()
    written: set[str] = set()
    for opcode, ops in instructions:
        for op in ops:
            referenced |= {tok for tok in _TOKEN.findall(op) if tok in names}
        if not ops:
            continue
        if _WRITE.match(opcode) and not _NOT_GLOBAL_SPACE.search(opcode):
            # The address is the bracketed operand: first for st/red, second for atom.
            for op in ops:
                if op.startswith("["):
                    written |= refs(op)
        elif opcode.startswith("st.param"):  # an address handed to a callee
            for op in ops[1:]:
                written |= refs(op)
    return referenced, written


def device_globals(ptx: str) -> tuple[tuple[DeviceGlobal, ...], dict[str, tuple[str, ...]]]:
    """Module-scope `__device__` variables that some function uses (printf's and assert's strings,
    and the headers' unused constants left out) and, per kernel, the ones it writes."""
    text = _strip_comments(ptx)
    declared: dict[str, int] = {}
    for m in _GLOBAL_DECL.finditer(text):
        name = m.group("name")
        # Compiler-made constants: printf's format strings ($str) and the strings assert() hands to
        # __assertfail (__unnamed_N; names with a double underscore are the implementation's).
        if name.startswith(("$str", "__unnamed_")):
            continue
        declared[name] = _decl_bytes(m.group("decl") + (m.group("array") or ""))
    if not declared:
        return (), {}
    names = set(declared)
    used_any: set[str] = set()
    written_any: set[str] = set()
    per_kernel: dict[str, tuple[str, ...]] = {}
    for function in _functions(text):
        used, writes = _uses(function, names)
        used_any |= used
        written_any |= writes
        if function.is_entry and writes:
            per_kernel[function.name] = tuple(sorted(writes))
    found = tuple(
        DeviceGlobal(name=n, size_bytes=size, written=n in written_any) for n, size in declared.items() if n in used_any
    )
    return found, per_kernel
