"""Reading NVRTC's log: compiler diagnostics (EDG's format) and the `ptxas -v` resource report.

EDG prints a diagnostic as a header line, then the offending source line indented by two spaces,
then a caret line under the column:

    candidate.cu(4): error: identifier "y" is undefined
        if (i < n) a[i] = y + 1.0f;
                          ^

A tab in the source is echoed as a tab in both lines, so the caret's index, less the indent, is
the column.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from cuda_llm.engine.compile.ptx import precision_hints
from cuda_llm.engine.compile.result import CANDIDATE_FILE, Diagnostic, KernelResources, Severity

__all__ = ["keep_own_diagnostics", "parse_diagnostics", "parse_ptxas", "precision_hints"]

# What replaces a diagnostic attributed to a file that is neither the candidate nor a CUDA header.
FOREIGN_FILE = "(an included file)"
FOREIGN_MESSAGE = "an error in an included file (its text is not shown)"

_HEADER = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<sev>catastrophic error|internal error|error|warning"
    r"|remark|note)(?: #(?P<code>[\w-]+))?: (?P<msg>.*)$"
)
# Diagnostics with no source position: "nvrtc: error: invalid value for --gpu-architecture".
_NO_POSITION = re.compile(r"^(?:nvrtc|command-line)(?: error)?: (?P<sev>error|warning): (?P<msg>.+)$")
_PTXAS = re.compile(r"^ptxas\s*(?P<sev>info|warning|error|fatal)\s*: (?P<msg>.*)$")
_CARET = re.compile(r"^[ \t]*\^[ \t]*$")
_SEVERITIES: dict[str, Severity] = {
    "catastrophic error": "error",
    "internal error": "error",
    "error": "error",
    "fatal": "error",
    "warning": "warning",
    "remark": "note",
    "note": "note",
}
# EDG's echo of the source line starts with two spaces.
_ECHO_INDENT = 2


def _column(echo: str, caret: str, source_line: str | None) -> int:
    indent = _ECHO_INDENT
    if source_line and echo.endswith(source_line):
        indent = len(echo) - len(source_line)
    return max(1, caret.index("^") - indent + 1)


def parse_diagnostics(log: str, source: str, *, limit: int = 1000) -> tuple[Diagnostic, ...]:
    """Every compiler and ptxas diagnostic in `log`, with lines and columns of `source` (the
    candidate as written, without the prelude)."""
    source_lines = source.split("\n")  # not splitlines(): it also breaks at \x0c, \x1c, \u2028
    lines = log.split("\n")
    found: list[Diagnostic] = []
    i = 0
    while i < len(lines) and len(found) < limit:
        text = lines[i]
        i += 1
        m = _HEADER.match(text)
        if m is not None:
            file, line = m.group("file"), int(m.group("line"))
            own = file == CANDIDATE_FILE
            source_line = source_lines[line - 1] if own and 0 < line <= len(source_lines) else None
            column = None
            echo = None
            if i + 1 < len(lines) and _CARET.match(lines[i + 1]):
                echo = lines[i]
                column = _column(echo, lines[i + 1], source_line)
                i += 2
            if source_line is None and echo is not None:
                source_line = echo[_ECHO_INDENT:]
            detail: list[str] = []
            while i < len(lines) and lines[i].startswith(" ") and lines[i].strip():
                detail.append(lines[i].strip())  # "detected during instantiation of ..."
                i += 1
            code = m.group("code")
            message = m.group("msg") + (f" [#{code}]" if code else "")
            found.append(
                Diagnostic(
                    severity=_SEVERITIES[m.group("sev")],
                    line=line if own else None,
                    column=column if own else None,
                    message=message,
                    source_line=source_line,
                    file=file,
                    detail="\n".join(detail),
                )
            )
            continue
        m = _PTXAS.match(text)
        if m is not None and m.group("sev") != "info":
            found.append(Diagnostic(_SEVERITIES[m.group("sev")], None, None, m.group("msg"), None, "ptxas"))
            continue
        m = _NO_POSITION.match(text)
        if m is not None:
            found.append(Diagnostic(_SEVERITIES[m.group("sev")], None, None, m.group("msg"), None, "nvrtc"))
    return tuple(found)


def keep_own_diagnostics(log: str, header_file: Callable[[str], bool]) -> str:
    """The log with every diagnostic about another file reduced to one line without its text.

    A diagnostic echoes the offending source line, so a file the compiler read for any reason (an
    include the policy missed, a header the sandbox let through) would come back line by line, and
    the log goes to a model that may run on someone else's server. Kept whole: diagnostics of the
    candidate's own source and of the CUDA headers (`header_file(name)` says which names are those);
    every other one becomes `(an included file)(0): error: an error in an included file`, and its
    echo, caret and detail lines are dropped."""
    lines = log.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        text = lines[i]
        i += 1
        m = _HEADER.match(text)
        if m is None or m.group("file") == CANDIDATE_FILE or header_file(m.group("file")):
            out.append(text)
            continue
        out.append(f"{FOREIGN_FILE}(0): {m.group('sev')}: {FOREIGN_MESSAGE}")
        while i < len(lines) and lines[i].startswith(" ") and lines[i].strip():
            i += 1  # the echo of the foreign line, its caret, "detected during ..."
    return "\n".join(out)


_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_PROPERTIES = re.compile(r"Function properties for (?P<name>\S+)")
_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<st>\d+) bytes spill stores, (?P<ld>\d+) bytes spill loads")
_USED = re.compile(r"^Used (?P<regs>\d+) registers")
_USED_FIELDS = {
    "barriers": re.compile(r"used (\d+) barriers"),
    "shared_bytes": re.compile(r"(\d+) bytes smem"),
    "cumulative_stack_bytes": re.compile(r"(\d+) bytes cumulative stack size"),
    "constant_bytes": re.compile(r"(\d+) bytes cmem\[0\]"),
}


def parse_ptxas(log: str) -> tuple[KernelResources, ...]:
    """The `ptxas -v` report of each entry function, in the order ptxas compiled them."""
    frames: dict[str, tuple[int, int, int]] = {}
    used: dict[str, dict[str, int]] = {}
    entries: list[str] = []
    current: str | None = None  # the entry being compiled: "Used ..." belongs to it
    described: str | None = None  # the function whose properties the next frame line gives
    for raw in log.split("\n"):
        text = raw.strip()
        # The frame line reads "ptxas . 8 bytes stack frame, ..." (no colon) in NVRTC's log and
        # "    8 bytes stack frame, ..." in nvcc's.
        if (m := _FRAME.search(text)) and described is not None:
            frames[described] = (int(m.group("stack")), int(m.group("st")), int(m.group("ld")))
            continue
        if not text.startswith("ptxas") or ":" not in text:
            continue
        body = text.split(":", 1)[1].strip()
        if m := _ENTRY.search(body):
            current = m.group("name")
            if current not in entries:
                entries.append(current)
        elif m := _PROPERTIES.search(body):
            described = m.group("name")
        elif (m := _USED.match(body)) and current is not None:
            fields = {"registers": int(m.group("regs"))}
            for key, pattern in _USED_FIELDS.items():
                hit = pattern.search(body)
                fields[key] = int(hit.group(1)) if hit else 0
            used[current] = fields
    kernels = []
    for name in entries:
        stack, spill_st, spill_ld = frames.get(name, (0, 0, 0))
        fields = used.get(name, {})
        kernels.append(
            KernelResources(
                name=name,
                registers=fields.get("registers", 0),
                shared_bytes=fields.get("shared_bytes", 0),
                stack_frame_bytes=stack,
                spill_store_bytes=spill_st,
                spill_load_bytes=spill_ld,
                barriers=fields.get("barriers", 0),
                cumulative_stack_bytes=fields.get("cumulative_stack_bytes", 0),
                constant_bytes=fields.get("constant_bytes", 0),
            )
        )
    return tuple(kernels)


def with_global_writes(
    kernels: tuple[KernelResources, ...], writes: dict[str, tuple[str, ...]]
) -> tuple[KernelResources, ...]:
    """Attach the device globals each kernel writes (found in the PTX) to its resources."""
    return tuple(replace(k, writes_device_globals=writes.get(k.name, ())) for k in kernels)
