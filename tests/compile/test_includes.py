"""The include and preprocessor policy, without a compiler."""

from __future__ import annotations

import pytest

from cuda_llm.engine.compile.includes import (
    PolicyViolation,
    check_source_policy,
    is_allowed_header,
    pragma_allowed,
)
from cuda_llm.engine.compile.source import check_source
from cuda_llm.engine.core.errors import FormatError
from cuda_llm.engine.core.settings import CompileSettings
from tests.compile.attacks import ATTACKS, HARMLESS, K, attack


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_every_attack_is_refused_with_a_line_number(name: str) -> None:
    with pytest.raises(PolicyViolation) as info:
        check_source_policy(attack(name))
    assert isinstance(info.value, FormatError)
    assert info.value.violations
    line, message = info.value.violations[0]
    assert line is not None and line >= 1
    assert f"line {line}: {message}" in str(info.value)


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_harmless_tricks_pass(name: str) -> None:
    source = HARMLESS[name].replace("FILE", "/etc/passwd")
    checked = check_source(source, CompileSettings())
    assert "\r" not in checked.text


def test_a_refusal_names_the_right_line_and_explains() -> None:
    source = K + '\n// fine\n#include "kernel.h"\n'
    with pytest.raises(PolicyViolation) as info:
        check_source_policy(source)
    assert info.value.violations == (
        (
            4,
            'quoted includes (#include "...") are not allowed: write #include <X> with an '
            "allowed CUDA header, or put the code in the reply",
        ),
    )


def test_lines_after_splices_keep_their_original_numbers() -> None:
    source = "#define A(x) \\\n  (x)\n#define B 1\n#include <stdio.h>\n"
    with pytest.raises(PolicyViolation) as info:
        check_source_policy(source)
    assert info.value.violations[0][0] == 4


def test_every_violation_is_reported_at_once() -> None:
    source = '#include "a.h"\n#pragma message("x")\n#line 7\n' + K
    with pytest.raises(PolicyViolation) as info:
        check_source_policy(source)
    assert [line for line, _ in info.value.violations] == [1, 2, 3]


def test_included_headers_are_returned_in_order_once_each() -> None:
    source = (
        "#include <cuda_fp16.h>\n#include <cuda/std/cstdint>\n"
        "#  include   <cooperative_groups.h>\n#include <mma.h>\n#include <cuda_fp16.h>\n" + K
    )
    assert check_source_policy(source) == (
        "cuda_fp16.h",
        "cuda/std/cstdint",
        "cooperative_groups.h",
        "mma.h",
    )


@pytest.mark.parametrize(
    "header",
    [
        "cuda_fp16.h",
        "cuda_bf16.h",
        "cuda_fp8.h",
        "cuda_pipeline.h",
        "cuda_awbarrier.h",
        "cooperative_groups.h",
        "cooperative_groups/reduce.h",
        "mma.h",
        "math_constants.h",
        "cuda/std/cstdint",
        "cuda/std/limits",
        "cuda/std/type_traits",
        "cuda/barrier",
        "cuda/pipeline",
        "cuda/atomic",
        "nv/target",
    ],
)
def test_allowed_headers(header: str) -> None:
    assert is_allowed_header(header)


@pytest.mark.parametrize(
    "header",
    [
        "stdio.h",
        "math.h",
        "cuda_runtime.h",
        "curand_kernel.h",
        "thrust/sort.h",
        "cub/cub.cuh",
        "cub/block/block_reduce.cuh",  # reaches thrust's computed includes in CUDA 13.0
        "cuda/stream",
        "cuda/std/execution",  # reaches thrust's computed includes
        "cuda/std/__cmath/traits.h",
        "cooperative_groups/details/info.h",
        "cuda/std/../../secret",
        "cuda/std//cstdint",
        "/etc/passwd",
        "cuda/",
        "cuda_fp16.h ",
    ],
)
def test_refused_headers(header: str) -> None:
    assert not is_allowed_header(header)


@pytest.mark.parametrize(
    ("header", "hint"),
    [
        ("stdio.h", "printf is built into device code"),
        ("cuda_runtime.h", "the harness does every host-side step"),
        ("math.h", "are built in"),
        ("cstdint", "<cuda/std/cstdint>"),
        ("thrust/reduce.h", "host libraries are not available"),
        ("cub/block/block_reduce.cuh", "CUB is not available"),
        ("unknown.h", "allowed: "),
    ],
)
def test_refused_headers_come_with_a_hint(header: str, hint: str) -> None:
    with pytest.raises(PolicyViolation) as info:
        check_source_policy(f"#include <{header}>\n" + K)
    assert hint in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        " unroll",
        " unroll 4",
        " unroll (TILE / 2)",
        " nounroll",
        " once",
        " nv_diag_suppress 177",
        " nv_diag_suppress 177, 550",
        " diag_suppress set_but_not_used",
        " nv_diag_default 177",
        " nv_diagnostic push",
        " nv_diagnostic pop",
    ],
)
def test_allowed_pragmas(text: str) -> None:
    assert pragma_allowed(text)


@pytest.mark.parametrize(
    "text",
    [
        ' message("x")',
        ' push_macro("X")',
        ' GCC diagnostic ignored "-Wall"',
        ' unroll "4"',
        " once more",
        " nv_diagnostic bogus",
        " include_alias(<a>, <b>)",
        "",
    ],
)
def test_refused_pragmas(text: str) -> None:
    assert not pragma_allowed(text)


def test_an_unterminated_block_comment_is_refused() -> None:
    with pytest.raises(PolicyViolation, match="unterminated"):
        check_source_policy(K + "/* never closed\n#include <cuda_fp16.h>\n")
