"""bfloat16 on the CPU: the exact conversions (NumPy has no bf16: the host carries its bits as
uint16), its poison and host comparison, the prompt's bf16 contract, and every kernel written for
the bf16 tasks compiling and binding (the GPU judges them in tests/gpu/test_bf16.py)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from bf16_replies import REPLIES

from cuda_llm.app.cli.main import main
from cuda_llm.engine.fsr.prompt import PromptBuilder
from cuda_llm.engine.gpu.compare import compare_output, poison_of
from cuda_llm.engine.gpu.validate import poison
from cuda_llm.engine.task import bfloat16
from cuda_llm.engine.task.dtypes import DTYPES, HALF_POISON
from cuda_llm.engine.task.library import TaskLibrary
from cuda_llm.engine.task.model import Tolerance


def _value(bits: int) -> Fraction:
    return Fraction(float(bfloat16.to_float32(np.array([bits], np.uint16))[0]))


def _is_nearest_even(x: float, bits: int) -> bool:
    """Whether `bits` is the finite bf16 nearest to x, ties to even, by exact rational arithmetic:
    no neighbour (bf16 values of one sign are ordered like their bits) is nearer, or as near and even."""
    exact, err = Fraction(x), abs(_value(bits) - Fraction(x))
    for other in (bits - 1, bits + 1):
        if other & 0x7FFF >= 0x7F80 or (other ^ bits) & 0x8000:
            continue  # past the largest finite value, or across the sign
        other_err = abs(_value(other) - exact)
        if other_err < err or (other_err == err and other % 2 == 0):
            return False
    return True


def test_reading_bf16_bits_is_the_top_half_of_a_float():
    bits = np.array([0x3F80, 0xC000, 0x0000, 0x8000, 0x7F80, 0x0001, 0x7F7F], dtype=np.uint16)
    got = bfloat16.to_float32(bits)
    assert got.dtype == np.float32
    assert list(got[:5]) == [1.0, -2.0, 0.0, -0.0, np.inf]
    assert got[5] == np.float32(2.0**-133)  # the smallest subnormal
    assert got[6] == np.float32(3.3895313892515355e38)  # the largest finite


@pytest.mark.parametrize(
    "x",
    [
        1.0 + 2.0**-8,  # a tie: to even (1.0)
        1.0 + 3 * 2.0**-8,  # a tie: to even (1 + 2^-6)
        1.0 + 2.0**-8 + 2.0**-30,  # just past a tie in float64, a tie once rounded to float32 first
        -(1.0 + 2.0**-8 + 2.0**-40),
        3.3961e38,  # just under the half step past the largest finite value: the largest finite
        1.5e-40,  # a subnormal
        -7.0e-39,
        0.1,
        12345.678,
    ],
)
def test_writing_bf16_rounds_to_nearest_even_exactly(x):
    bits = int(bfloat16.to_bits(np.array([x]))[0])
    assert _is_nearest_even(x, bits), hex(bits)
    assert int(bfloat16.to_bits(np.array([x], np.float32).astype(np.float64))[0]) == int(
        bfloat16.to_bits(np.array([x], np.float32))[0]
    ), "an fp32 value rounds the same from float32 and from float64"


def test_overflow_goes_to_infinity_and_ties_go_to_even():
    got = bfloat16.to_bits(np.array([3.3962e38, -3.5e38, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 1.0 + 2.0**-8 + 2.0**-30]))
    assert [int(b) for b in got] == [0x7F80, 0xFF80, 0x3F80, 0x3F82, 0x3F81]


def test_rounding_float32_agrees_with_pytorch():
    torch = pytest.importorskip("torch")
    x = (np.random.default_rng(3).standard_normal(200_000) * 1e3).astype(np.float32)
    theirs = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(bfloat16.to_bits(x), theirs)
    assert int(bfloat16.to_bits(np.array([np.nan], np.float32))[0]) == bfloat16.CANONICAL_NAN


def test_bf16_in_the_dtype_table():
    d = DTYPES["bfloat16"]
    assert (d.numpy, d.c_type, d.itemsize, d.torch, d.header) == (
        "uint16",
        "__nv_bfloat16",
        2,
        "bfloat16",
        "cuda_bf16.h",
    )
    assert {"__nv_bfloat16", "__nv_bfloat162", "unsigned short"} <= d.pointer_types
    assert float(bfloat16.to_float32(np.array([d.poison], np.uint16))[0]) != float(
        bfloat16.to_float32(np.array([d.poison], np.uint16))[0]
    ), "the poison is a bf16 NaN"


class _Memory:
    def fill16(self, buf: np.ndarray, value: int) -> None:
        buf.view(np.uint16)[:] = value

    def fill32(self, buf: np.ndarray, value: int) -> None:
        buf.view(np.uint32)[:] = value


def test_a_bf16_output_is_compared_by_its_values_and_its_poison_is_seen():
    expected = np.array([1.0, -2.5, 3.0e10, 0.1, 7.0])
    got = bfloat16.to_bits(expected)
    tol = Tolerance("abs", 2.0**-8, 0.0)
    assert compare_output("y", expected, got, tol, dtype="bfloat16").passed
    # The bits read as integers would be wildly off: the comparison decodes them.
    assert not compare_output("y", expected, got.astype(np.float64), tol).passed
    got[1] = bfloat16.to_bits(np.array([-2.53125]))[0]  # one bf16 step off at 2.5: 2^-7, outside 2^-8
    got[4] = HALF_POISON
    result = compare_output("y", expected, got, tol, dtype="bfloat16")
    assert (result.wrong, result.unwritten) == (2, 1)
    assert result.mismatches[0].got == -2.53125
    buf = np.ones(8, np.uint16)
    poison(_Memory(), buf, "bfloat16")  # type: ignore[arg-type]
    assert poison_of(buf, "bfloat16") == HALF_POISON and (buf == HALF_POISON).all()


def test_the_prompt_of_a_bf16_task_gives_the_bf16_contract():
    lib = TaskLibrary()
    text = PromptBuilder(lib.get("gemm_bf16"), "sm_90", "13.0")._task
    for needle in ("__nv_bfloat16", "<cuda_bf16.h>", "__nv_bfloat162", "__float2bfloat16", "fp32 accumulators"):
        assert needle in text, needle
    assert "__nv_bfloat162" not in PromptBuilder(lib.get("gemm_fp16"), "sm_90", "13.0")._task


def _nvrtc_or_skip() -> None:
    from cuda_llm.engine.compile import nvrtc_library
    from cuda_llm.engine.compile.result import CompilerUnavailableError

    try:
        nvrtc_library.load()
    except CompilerUnavailableError as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")


@pytest.mark.parametrize("reply", sorted(REPLIES))
def test_every_bf16_task_reply_compiles_and_binds(tmp_path, capsys, reply):
    _nvrtc_or_skip()
    task, text, _verdict = REPLIES[reply]
    path = tmp_path / f"{reply}.md"
    path.write_text(text, encoding="utf-8")
    code = main(["eval", task, str(path), "--compile-only"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verdict:  compiled" in out
    assert "reduced precision" not in out  # a bf16 task converts to and from bf16 by design
