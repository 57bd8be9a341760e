"""The byte-level checks a source passes before any compiler process is involved."""

from __future__ import annotations

import dataclasses

import pytest

from cuda_llm.engine.compile.source import check_source
from cuda_llm.engine.core.errors import FormatError
from cuda_llm.engine.core.settings import CompileSettings
from tests.compile.attacks import K

SETTINGS = CompileSettings()


def test_a_5_mb_source_is_refused_with_its_size() -> None:
    source = K + "// " + "x" * (5 * 1024 * 1024) + "\n"
    with pytest.raises(FormatError) as info:
        check_source(source, SETTINGS)
    assert f"{SETTINGS.max_source_bytes:,} bytes" in str(info.value)
    assert f"{len(source.encode()):,} bytes" in str(info.value)


def test_the_size_limit_is_the_setting() -> None:
    small = dataclasses.replace(SETTINGS, max_source_bytes=len(K.encode()))
    assert check_source(K, small).text == K
    with pytest.raises(FormatError):
        check_source(K + " ", small)


@pytest.mark.parametrize("source", [K + "\0", (K + "\0").encode()])
def test_a_nul_byte_is_refused_with_its_line(source: str | bytes) -> None:
    with pytest.raises(FormatError, match=r"NUL byte \(line 2\)"):
        check_source(source, SETTINGS)


def test_invalid_utf8_is_refused_with_the_byte_and_line() -> None:
    with pytest.raises(FormatError, match=r"not valid UTF-8 \(byte 0xff on line 2\)"):
        check_source(K.encode() + b"// \xff\xfe\n", SETTINGS)


def test_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(FormatError, match="not valid UTF-8"):
        check_source(K + "// \udc80\n", SETTINGS)


def test_windows_line_ends_and_a_bom_are_normalised() -> None:
    checked = check_source(("\ufeff" + K).replace("\n", "\r\n").encode(), SETTINGS)
    assert checked.text == K


def test_the_headers_come_back() -> None:
    checked = check_source("#include <cuda_fp16.h>\n" + K, SETTINGS)
    assert checked.headers == ("cuda_fp16.h",)
