"""What one candidate may add to the records and to every output: the compiler's PTX and log cut to a
size, with a note where they were cut. A hostile reply can make the compiler write megabytes (a large
constexpr array copied into many globals is 21 MB of PTX from 5 KB of reply); the verdict, the
diagnostics and the figures never depend on the cut text (they are parsed before it)."""

from __future__ import annotations

import dataclasses

from cuda_llm.engine.compile.result import CompileResult


def cut_note(what: str, size: int, kept: int) -> str:
    return f"\n[{what} cut: {size:,} bytes, the first {kept:,} kept]\n"


def cut_text(text: str | None, limit: int, what: str) -> str | None:
    """`text` whole if within `limit` bytes (UTF-8), else its head and a note saying so."""
    if text is None:
        return None
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode(errors="ignore") + cut_note(what, len(data), limit)


def capped_compile(result: CompileResult, max_ptx_bytes: int, max_log_bytes: int) -> CompileResult:
    """The result with its PTX and log within their caps (the same object when nothing is cut)."""
    ptx = cut_text(result.ptx, max_ptx_bytes, "PTX")
    log = cut_text(result.log, max_log_bytes, "compile log")
    if ptx is result.ptx and log is result.log:
        return result
    return dataclasses.replace(result, ptx=ptx, log=log or "")
