"""The checks a source passes before any compiler process is started: size, bytes, encoding, and
the include policy. Each refusal is a FormatError the model can act on."""

from __future__ import annotations

from dataclasses import dataclass

from cuda_llm.engine.compile.includes import check_source_policy
from cuda_llm.engine.core.errors import FormatError
from cuda_llm.engine.core.settings import CompileSettings


@dataclass(frozen=True)
class CheckedSource:
    text: str  # what is compiled: valid UTF-8, no NUL, "\n" line ends
    headers: tuple[str, ...]  # the allowed headers it includes, in order


def _line_of(data: bytes, offset: int) -> int:
    return 1 + data.count(b"\n", 0, offset)


def check_source(source: str | bytes, settings: CompileSettings) -> CheckedSource:
    """The source as it will be compiled, or a FormatError saying why it will not be."""
    if isinstance(source, str):
        try:
            data = source.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 spelling exists
            line = 1 + source.count("\n", 0, exc.start)
            raise FormatError(f"the source is not valid UTF-8 (line {line})") from None
    else:
        data = bytes(source)
    if len(data) > settings.max_source_bytes:
        raise FormatError(
            f"the source is {len(data):,} bytes; a kernel source may be at most {settings.max_source_bytes:,} bytes"
        )
    nul = data.find(b"\0")
    if nul >= 0:
        raise FormatError(f"the source contains a NUL byte (line {_line_of(data, nul)})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"the source is not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {_line_of(data, exc.start)})"
        ) from None
    # An editor's byte-order mark and Windows line ends are not the model's doing; normalise them
    # so the policy check and the compiler read the same text.
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    return CheckedSource(text=text, headers=check_source_policy(text))
