"""Pinned behaviour of the output comparison: the tolerance bound, the chunked scan, the mismatch
report and the exact wording of the failure patterns (they reach the model's prompt and the screen)."""

import math

import numpy as np
import pytest

import cuda_llm.engine.gpu.compare as compare_mod
from cuda_llm.engine.gpu.compare import (
    INT_POISON,
    MIN_PATTERN_ELEMENTS,
    Mismatch,
    _describe,
    _ordinal,
    _poisoned,
    allowed_error,
    axis_names_for,
    compare_output,
    describe_pattern,
    output_rms,
)
from cuda_llm.engine.task.model import Tolerance

ABS = Tolerance("abs", 0.1, 0.0)
EXACT = Tolerance("exact", 0.0, 0.0)
CUSTOM_MSG = "tolerance scale 'custom' needs the reference's error_scale()"


def poisoned_float32(n: int) -> np.ndarray:
    return np.full(n, INT_POISON, dtype=np.uint32).view(np.float32)


def summary(cmp):
    # repr: an unwritten element's got is NaN, which never compares equal
    mismatches = tuple(repr(m) for m in cmp.mismatches)
    return (cmp.output, cmp.checked, cmp.wrong, cmp.unwritten, cmp.worst_ratio, mismatches, cmp.pattern)


# --- allowed_error -------------------------------------------------------------------------------


def test_exact_scale_bound_is_all_zeros_of_the_input_shape():
    bound = allowed_error(np.ones((2, 3)), EXACT, None)
    assert bound.shape == (2, 3)
    assert bound.dtype == np.float64
    assert not bound.any()


def test_abs_scale_bound_of_integer_input_is_float64():
    bound = allowed_error(np.array([-4, 0, 10], dtype=np.int32), Tolerance("abs", 0.5, 1.0), None)
    assert bound.dtype == np.float64
    np.testing.assert_array_equal(bound, [3.0, 1.0, 6.0])


def test_abs_scale_bound_of_float32_input_is_float64():
    exp = np.array([3.0, -0.1], dtype=np.float32)
    bound = allowed_error(exp, Tolerance("abs", 1e-3, 1e-9), None)
    assert bound.dtype == np.float64
    assert bound.tolist() == pytest.approx([1e-9 + 1e-3 * float(exp[0]), 1e-9 + 1e-3 * abs(float(exp[1]))], rel=1e-15)


def test_rms_scale_computes_the_rms_from_the_data_when_not_passed():
    bound = allowed_error(np.array([3.0, -4.0]), Tolerance("rms", 0.1, 0.5), None)
    assert bound.tolist() == pytest.approx([0.5 + 0.1 * math.sqrt(12.5)] * 2)


def test_rms_scale_of_integer_input():
    bound = allowed_error(np.array([3, -4], dtype=np.int64), Tolerance("rms", 1.0, 0.0), None)
    assert bound.dtype == np.float64
    assert bound.tolist() == pytest.approx([math.sqrt(12.5)] * 2)


def test_rms_scale_uses_the_rms_passed_in_rather_than_the_slices():
    bound = allowed_error(np.array([3.0, -4.0, 100.0]), Tolerance("rms", 0.5, 0.25), None, rms=2.0)
    assert bound.tolist() == pytest.approx([1.25, 1.25, 1.25])


def test_rms_or_abs_scale_takes_the_larger_of_the_element_and_the_rms():
    bound = allowed_error(np.array([3.0, -4.0, 100.0, 0.0]), Tolerance("rms_or_abs", 0.5, 0.25), None, rms=5.0)
    assert bound.tolist() == pytest.approx([2.75, 2.75, 50.25, 2.75])
    computed = allowed_error(np.array([3.0, -4.0]), Tolerance("rms_or_abs", 0.1, 0.0), None)
    assert computed.tolist() == pytest.approx([0.1 * math.sqrt(12.5), 0.4])  # the RMS under it, |e| over


def test_a_wide_softmax_s_fp32_rounding_passes_the_imported_rule_and_fp16_inputs_do_not():
    """The imported fp32 rule (engine/task/dtypes.py): PyTorch's softmax over 393216 columns of large
    logits peaks thousands of times above the output's RMS, and its exp rounds by ~1e-7 of the peak
    itself. Under "rms" alone PyTorch's own fp32 result fails (eager did, on an H200, at the field's
    size); under "rms_or_abs" it passes with room to spare, and the same softmax of fp16 inputs fails."""
    torch = pytest.importorskip("torch")
    from cuda_llm.engine.task.dtypes import DTYPES

    rule = DTYPES["float32"].output_rule
    assert rule.scale == "rms_or_abs"
    torch.manual_seed(0)
    x = torch.randn(8, 393216) * 30.0
    expected = torch.softmax(x.double(), -1).numpy()
    fp32 = torch.softmax(x, -1).numpy()
    fp16 = torch.softmax(x.half().float(), -1).numpy()
    imported = Tolerance(rule.scale, rule.rtol, 1e-30)
    assert not compare_output("y", expected, fp32, Tolerance("rms", rule.rtol, 1e-30)).passed
    ok = compare_output("y", expected, fp32, imported)
    assert ok.passed and ok.worst_ratio < 0.1, ok.worst_ratio
    assert not compare_output("y", expected, fp16, imported).passed


@pytest.mark.filterwarnings("error")
def test_rms_scale_of_an_empty_slice_is_empty_and_quiet():
    bound = allowed_error(np.zeros(0), Tolerance("rms", 0.5, 0.25), None)
    assert bound.shape == (0,)
    assert bound.dtype == np.float64


def test_custom_scale_uses_the_scale_array():
    bound = allowed_error(np.array([1.0, 2.0]), Tolerance("custom", 0.5, 0.125), np.array([4, 8], dtype=np.int32))
    assert bound.dtype == np.float64
    np.testing.assert_array_equal(bound, [2.125, 4.125])


def test_custom_scale_of_float32_scale_is_float64():
    scale = np.array([0.1, 3.0], dtype=np.float32)
    bound = allowed_error(np.array([1.0, 2.0]), Tolerance("custom", 1e-3, 0.0), scale)
    assert bound.dtype == np.float64
    assert bound.tolist() == pytest.approx([1e-3 * float(scale[0]), 1e-3 * float(scale[1])], rel=1e-15)


def test_custom_scale_without_a_scale_array_says_what_is_missing():
    with pytest.raises(ValueError) as info:
        allowed_error(np.array([1.0]), Tolerance("custom", 0.1, 0.0), None)
    assert str(info.value) == CUSTOM_MSG


# --- _poisoned and output_rms --------------------------------------------------------------------


def test_byte_outputs_are_never_poisoned():
    mask = _poisoned(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int8))
    assert mask.dtype == np.bool_
    assert mask.shape == (2, 3)
    assert not mask.any()


def test_poisoned_float32_elements_are_found():
    got = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    got[1:2] = poisoned_float32(1)
    assert _poisoned(got).tolist() == [False, True, False]


def test_byte_output_comparison_counts_wrong_not_unwritten():
    cmp = compare_output("b", np.array([1, 2, 3, 4]), np.array([1, 9, 3, 9], dtype=np.uint8), EXACT)
    assert (cmp.wrong, cmp.unwritten, cmp.worst_ratio) == (2, 0, math.inf)
    assert cmp.pattern == "elements 1, 3 are wrong"


def test_output_rms_values():
    assert output_rms(np.array([3.0, -4.0])) == pytest.approx(math.sqrt(12.5))
    assert output_rms(np.array([2.0, 2.0, 2.0, 2.0])) == pytest.approx(2.0)


@pytest.mark.filterwarnings("error")
def test_output_rms_of_empty_output_is_zero():
    assert output_rms(np.zeros(0)) == 0.0


# --- compare_output: counts, worst ratio, mismatches ---------------------------------------------


def test_all_exact_gives_zero_ratio_under_every_rule():
    exp = np.array([0.0, 1.0, -2.0])
    for tol in (EXACT, ABS, Tolerance("rms", 0.1, 0.0)):
        cmp = compare_output("c", exp, exp.copy(), tol)
        assert (cmp.wrong, cmp.unwritten, cmp.worst_ratio, cmp.mismatches, cmp.pattern) == (0, 0, 0.0, (), None)
        assert cmp.passed


def test_result_names_the_output_and_counts_checked_elements():
    cmp = compare_output("out_y", np.ones((3, 4)), np.ones((3, 4)), ABS)
    assert cmp.output == "out_y"
    assert cmp.checked == 12


def test_error_exactly_on_the_bound_passes():
    cmp = compare_output("c", np.array([2.0]), np.array([3.0]), Tolerance("abs", 0.5, 0.0))
    assert cmp.passed
    assert cmp.worst_ratio == 1.0


def test_finite_worst_ratio_and_mismatch_fields():
    exp = np.array([0.0, 1.0, 2.0, -4.0])
    got = np.array([0.0, 1.0, 2.5, -6.0])
    cmp = compare_output("y", exp, got, ABS)
    assert cmp.wrong == 2 and cmp.unwritten == 0
    assert cmp.worst_ratio == pytest.approx(5.0)  # 2 / 0.4
    assert cmp.mismatches == (
        Mismatch("y", (2,), 2.0, 2.5, 0.5, 0.25),
        Mismatch("y", (3,), -4.0, -6.0, 2.0, 0.5),
    )
    assert cmp.pattern == "the last 2 elements are wrong"


def test_zero_bound_with_zero_error_is_a_zero_ratio():
    # expected 0 under "abs" with atol 0 gives a zero bound: a zero error there is fine, ratio 0
    cmp = compare_output("y", np.array([0.0, 1.0]), np.array([0.0, 1.2]), ABS)
    assert cmp.wrong == 1
    assert cmp.worst_ratio == pytest.approx(2.0)


def test_nonzero_error_on_a_zero_bound_is_infinitely_wrong():
    cmp = compare_output("y", np.array([0.0, 1.0]), np.array([0.5, 1.0]), ABS)
    assert cmp.wrong == 1
    assert cmp.worst_ratio == math.inf
    (m,) = cmp.mismatches
    assert (m.index, m.expected, m.got, m.abs_err, m.rel_err) == ((0,), 0.0, 0.5, 0.5, math.inf)


def test_written_inf_and_nan_make_worst_ratio_inf():
    for bad in (np.inf, -np.inf, np.nan):
        cmp = compare_output("y", np.array([1.0, 1.0]), np.array([1.0, bad], dtype=np.float32), ABS)
        assert cmp.wrong == 1 and cmp.unwritten == 0
        assert cmp.worst_ratio == math.inf
        (m,) = cmp.mismatches
        assert m.abs_err == math.inf
        assert m.rel_err == math.inf


def test_exact_rule_with_a_computed_nan_is_infinitely_wrong():
    cmp = compare_output("y", np.array([1.0, 2.0]), np.array([1.0, np.nan]), EXACT)
    assert cmp.wrong == 1
    assert cmp.worst_ratio == math.inf


def test_exact_rule_wrong_value_is_infinitely_wrong():
    cmp = compare_output("y", np.array([1, 2, 3]), np.array([1, 2, 4], dtype=np.int32), EXACT)
    assert cmp.wrong == 1
    assert cmp.worst_ratio == math.inf
    assert cmp.mismatches == (Mismatch("y", (2,), 3.0, 4.0, 1.0, pytest.approx(1 / 3)),)


def test_unwritten_elements_do_not_make_the_ratio_inf():
    exp = np.array([1.0, 2.0, 3.0, 4.0])
    got = exp.astype(np.float32)
    got[1:2] = poisoned_float32(1)
    got[3] = 5.0
    cmp = compare_output("y", exp, got, ABS)
    assert (cmp.wrong, cmp.unwritten) == (2, 1)
    assert cmp.worst_ratio == pytest.approx(2.5)
    assert [m.index for m in cmp.mismatches] == [(1,), (3,)]
    assert math.isnan(cmp.mismatches[0].got)
    assert cmp.mismatches[0].abs_err == math.inf
    assert cmp.mismatches[0].rel_err == math.inf
    assert cmp.mismatches[1] == Mismatch("y", (3,), 4.0, 5.0, 1.0, 0.25)
    assert cmp.pattern == "elements 1, 3 are wrong"


def test_all_unwritten_output():
    cmp = compare_output("y", np.ones(5), poisoned_float32(5), ABS)
    assert (cmp.wrong, cmp.unwritten, cmp.worst_ratio) == (5, 5, 0.0)
    assert cmp.pattern == "every element is unwritten (still NaN)"


def test_at_most_eight_mismatches_by_default_first_in_flat_order():
    exp = np.ones((4, 5))
    got = np.zeros((4, 5))
    cmp = compare_output("y", exp, got, ABS)
    assert cmp.wrong == 20
    assert [m.index for m in cmp.mismatches] == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 0), (1, 1), (1, 2)]
    assert cmp.pattern == "every element is wrong"


def test_max_mismatches_limits_the_list():
    cmp = compare_output("y", np.ones(10), np.zeros(10), ABS, max_mismatches=3)
    assert [m.index for m in cmp.mismatches] == [(0,), (1,), (2,)]


def test_mismatch_with_negative_expected_and_index_tuple_of_3d_output():
    exp = np.full((2, 2, 3), -2.0)
    got = exp.copy()
    got[1, 0, 2] = 1.0
    cmp = compare_output("z", exp, got, ABS)
    assert cmp.mismatches == (Mismatch("z", (1, 0, 2), -2.0, 1.0, 3.0, 1.5),)
    assert cmp.pattern is None  # one wrong element: the mismatch says it all


def test_got_of_another_size_is_rejected():
    with pytest.raises(ValueError):
        compare_output("y", np.ones(4), np.ones(5), ABS)


def test_flat_got_for_a_2d_output():
    exp = np.ones((2, 3))
    got = np.array([1, 1, 1, 0, 0, 0], dtype=np.float32)
    cmp = compare_output("y", exp, got, ABS)
    assert [m.index for m in cmp.mismatches] == [(1, 0), (1, 1), (1, 2)]
    assert cmp.pattern == "the last 1 rows are wrong, entirely"


def test_empty_output_passes():
    for tol in (EXACT, ABS, Tolerance("rms", 0.1, 0.0)):
        cmp = compare_output("y", np.zeros(0), np.zeros(0, dtype=np.float32), tol)
        assert summary(cmp) == ("y", 0, 0, 0, 0.0, (), None)


def test_custom_scale_through_compare_output_2d():
    exp = np.zeros((2, 3))
    scale = np.array([[1.0, 1.0, 1.0], [10.0, 10.0, 10.0]])
    got = np.full((2, 3), 0.5)
    cmp = compare_output("y", exp, got, Tolerance("custom", 0.1, 0.0), scale=scale)
    assert cmp.wrong == 3
    assert cmp.worst_ratio == pytest.approx(5.0)
    assert cmp.pattern == "the first 1 rows are wrong, entirely"


def test_custom_scale_missing_in_compare_output_raises():
    with pytest.raises(ValueError) as info:
        compare_output("y", np.ones(3), np.ones(3), Tolerance("custom", 0.1, 0.0))
    assert str(info.value) == CUSTOM_MSG


def test_rms_rule_uses_the_whole_outputs_rms():
    exp = np.array([3.0, -4.0, 0.0, 0.0])
    rms = math.sqrt(25 / 4)
    tol = Tolerance("rms", 0.1, 0.0)
    inside = compare_output("y", exp, exp + np.array([0, 0, 0.2, 0]), tol)
    outside = compare_output("y", exp, exp + np.array([0, 0, 0.3, 0]), tol)
    assert inside.passed and inside.worst_ratio == pytest.approx(0.2 / (0.1 * rms))
    assert outside.wrong == 1 and outside.worst_ratio == pytest.approx(0.3 / (0.1 * rms))


def test_rms_rule_with_float16_expected_does_not_overflow():
    exp = np.full(8, 300.0, dtype=np.float16)
    got = np.full(8, 300.0)
    got[2] = 340.0
    cmp = compare_output("y", exp, got, Tolerance("rms", 0.1, 0.0))
    assert cmp.wrong == 1
    assert cmp.worst_ratio == pytest.approx(40 / 30)


@pytest.mark.filterwarnings("error")
def test_poisoned_float_output_compares_without_warnings():
    got = np.ones(4, dtype=np.float32)
    got[2:] = poisoned_float32(2)
    cmp = compare_output("y", np.ones(4), got, ABS)
    assert (cmp.wrong, cmp.unwritten) == (2, 2)
    assert cmp.pattern == "the last 2 elements are unwritten (still NaN)"


@pytest.mark.filterwarnings("error")
def test_overflowing_error_is_infinitely_wrong_without_warnings():
    exp = np.array([-1e308, 1e-300, 1.0])
    got = np.array([1e308, 1e300, 1.0])
    cmp = compare_output("y", exp, got, Tolerance("abs", 1e-10, 0.0))
    assert cmp.wrong == 2
    assert cmp.worst_ratio == math.inf


# --- chunked comparison --------------------------------------------------------------------------


def compare_both_ways(monkeypatch, exp, got, tol, **kw):
    one = compare_output("y", exp, got, tol, **kw)
    monkeypatch.setattr(compare_mod, "CHUNK_ELEMENTS", 7)
    many = compare_output("y", exp, got, tol, **kw)
    monkeypatch.undo()
    return one, many


def test_chunked_equals_single_chunk_with_mismatches_spanning_chunks(monkeypatch):
    exp = np.arange(1.0, 31.0)
    got = exp.copy()
    got[12:17] = 0.0  # chunks of 7: the second and third chunk, the first chunk is clean
    got[25] = np.inf
    one, many = compare_both_ways(monkeypatch, exp, got, ABS)
    assert summary(many) == summary(one)
    assert many.wrong == 6 and many.worst_ratio == math.inf
    assert [m.index for m in many.mismatches] == [(12,), (13,), (14,), (15,), (16,), (25,)]
    assert many.mismatches[0] == Mismatch("y", (12,), 13.0, 0.0, 13.0, 1.0)
    assert many.pattern == "elements 12, 13, 14, 15, 16, 25 are wrong"


def test_chunked_finite_worst_and_limited_mismatches(monkeypatch):
    exp = np.ones((5, 6))
    got = exp.copy()
    got[1:4] = 1.5  # rows 1-3: flat 6..23, across chunks of 7
    got[0, 0] = 1.2
    one, many = compare_both_ways(monkeypatch, exp, got, ABS, max_mismatches=10)
    assert summary(many) == summary(one)
    assert many.wrong == 19
    assert many.worst_ratio == pytest.approx(5.0)
    assert [m.index for m in many.mismatches] == [(0, 0)] + [(1, c) for c in range(6)] + [(2, 0), (2, 1), (2, 2)]
    assert many.pattern == "19 elements are wrong, in the first 4 rows"


def test_chunked_rows_pattern(monkeypatch):
    exp = np.ones((6, 5))
    got = exp.copy()
    got[2:] = -1.0
    one, many = compare_both_ways(monkeypatch, exp, got, ABS)
    assert summary(many) == summary(one)
    assert many.pattern == "the last 4 rows are wrong, entirely"


def test_chunked_rms_rule_uses_the_whole_outputs_rms(monkeypatch):
    exp = np.concatenate([np.full(7, 100.0), np.full(7, 1.0)])
    got = exp.copy()
    got[7:] += 0.5  # fine against the whole output's rms (~70.7), not against the tail's own (1)
    got[0:2] += 10.0
    one, many = compare_both_ways(monkeypatch, exp, got, Tolerance("rms", 0.01, 0.0))
    assert summary(many) == summary(one)
    rms = math.sqrt((7 * 100.0**2 + 7) / 14)
    assert many.wrong == 2
    assert many.worst_ratio == pytest.approx(10.0 / (0.01 * rms))
    assert many.pattern == "the first 2 elements are wrong"


def test_chunked_custom_scale(monkeypatch):
    exp = np.zeros(20)
    scale = np.arange(20.0)
    got = np.full(20, 0.15)
    one, many = compare_both_ways(monkeypatch, exp, got, Tolerance("custom", 0.1, 0.0), scale=scale)
    assert summary(many) == summary(one)
    assert many.wrong == 2  # scale 0 (zero bound) and scale 1 (bound 0.1)
    assert many.worst_ratio == math.inf
    assert many.pattern == "the first 2 elements are wrong"


def test_chunked_unwritten_tail(monkeypatch):
    exp = np.arange(20.0)
    got = exp.astype(np.float32)
    got[9:] = poisoned_float32(11)
    one, many = compare_both_ways(monkeypatch, exp, got, ABS)
    assert summary(many) == summary(one)
    assert (many.wrong, many.unwritten, many.worst_ratio) == (11, 11, 0.0)
    assert many.pattern == "the last 11 elements are unwritten (still NaN)"


def test_chunked_all_pass(monkeypatch):
    exp = np.arange(20.0)
    one, many = compare_both_ways(monkeypatch, exp, exp + 0.01, Tolerance("abs", 0.0, 0.1))
    assert summary(many) == summary(one)
    assert many.passed and many.worst_ratio == pytest.approx(0.1)


# --- describe_pattern, _describe, _ordinal, axis_names_for ---------------------------------------


@pytest.mark.parametrize(
    ("k", "text"),
    [
        (1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (10, "10th"), (11, "11th"), (12, "12th"),
        (13, "13th"), (20, "20th"), (21, "21st"), (22, "22nd"), (23, "23rd"), (32, "32nd"),
        (101, "101st"), (111, "111th"), (112, "112th"), (121, "121st"),
    ],
)  # fmt: skip
def test_ordinal(k, text):
    assert _ordinal(k) == text


@pytest.mark.parametrize(
    ("indices", "length", "text"),
    [
        ([0, 1, 2, 3, 4, 5], 6, "all elements"),
        ([7, 8, 9], 10, "the last 3 elements"),
        ([0, 1, 2], 10, "the first 3 elements"),
        ([0], 10, "the first 1 elements"),
        ([2, 3, 4, 5], 6, "the last 4 elements"),  # a run to the end is always "the last"
        ([5], 10, "elements 5-5"),
        ([2, 3, 4], 10, "elements 2-4"),
        ([1, 2, 3, 4, 5, 6, 7, 8], 10, "elements 1-8"),
        ([5, 9], 10, "elements 5, 9"),
        ([0, 3], 10, "elements 0, 3"),
        ([1, 4, 7], 10, "every 3rd of the elements from 1"),
        ([0, 32, 64, 96], 100, "every 32nd of the elements from 0"),
        ([0, 11, 22, 33], 40, "every 11th of the elements from 0"),
        ([1, 2, 4], 10, "elements 1, 2, 4"),
        ([0, 1, 3, 4, 6, 9], 20, "elements 0, 1, 3, 4, 6, 9"),
        ([0, 1, 3, 4, 6, 9, 10], 20, "elements 0, 1, 3, 4, 6, 9, ... (7 in all)"),
        ([0, 1, 3, 4, 6, 9, 10, 15], 20, "elements 0, 1, 3, 4, 6, 9, ... (8 in all)"),
        ([9, 3, 3, 5], 10, "elements 3, 5, 9"),
        ([4, 4], 10, "elements 4-4"),  # duplicates are counted once, sorted or not
        ([3, 3, 5], 10, "elements 3, 5"),
    ],
)
def test_describe(indices, length, text):
    assert _describe("elements", np.array(indices), length) == text


def test_axis_names_for():
    assert axis_names_for(1) == ("elements",)
    assert axis_names_for(2) == ("rows", "columns")
    assert axis_names_for(3) == ("planes", "rows", "columns")
    assert axis_names_for(4) == ("axis-0", "axis-1", "axis-2", "axis-3")


def pattern(wrong, unwritten=None, names=None):
    wrong = np.asarray(wrong, dtype=bool)
    unwritten = np.zeros_like(wrong) if unwritten is None else np.asarray(unwritten, dtype=bool)
    return describe_pattern(wrong, unwritten, axis_names_for(wrong.ndim) if names is None else names)


def test_one_wrong_element_gives_no_pattern():
    assert MIN_PATTERN_ELEMENTS == 2
    assert pattern([False, True, False, False]) is None
    assert pattern([False, False, False, False]) is None


def test_two_wrong_elements_give_a_pattern():
    assert pattern([False, False, True, True]) == "the last 2 elements are wrong"


def test_1d_patterns():
    assert pattern([True, True, True, False, False]) == "the first 3 elements are wrong"
    w = np.zeros(10, dtype=bool)
    w[1::3] = True
    assert pattern(w) == "every 3rd of the elements from 1 are wrong"
    assert pattern(np.ones(4)) == "every element is wrong"


def test_unwritten_versus_wrong_wording():
    w = np.array([False, True, True, True])
    assert pattern(w, unwritten=w) == "the last 3 elements are unwritten (still NaN)"
    assert pattern(w, unwritten=[False, True, False, False]) == "the last 3 elements are wrong"
    assert pattern(np.ones(3), unwritten=np.ones(3)) == "every element is unwritten (still NaN)"


def test_2d_whole_slices():
    w = np.zeros((6, 4), dtype=bool)
    w[2:] = True
    assert pattern(w) == "the last 4 rows are wrong, entirely"
    w = np.zeros((6, 4), dtype=bool)
    w[1:4] = True
    assert pattern(w) == "rows 1-3 are wrong, entirely"
    w = np.zeros((3, 8), dtype=bool)
    w[:, [1, 3, 5, 7]] = True
    assert pattern(w) == "every 2nd of the columns from 1 are wrong, entirely"


def test_3d_whole_slices():
    w = np.zeros((3, 4, 5), dtype=bool)
    w[1] = True
    assert pattern(w) == "planes 1-1 are wrong, entirely"
    w = np.zeros((3, 4, 5), dtype=bool)
    w[:, 3] = True
    assert pattern(w) == "the last 1 rows are wrong, entirely"
    w = np.zeros((3, 4, 5), dtype=bool)
    w[:, :, :2] = True
    assert pattern(w) == "the first 2 columns are wrong, entirely"


def test_4d_slices_use_axis_names():
    w = np.zeros((2, 2, 3, 2), dtype=bool)
    w[:, :, 2] = True
    assert pattern(w) == "the last 1 axis-2 are wrong, entirely"


def test_slices_beyond_the_axis_names_given():
    w = np.zeros((4, 3), dtype=bool)
    w[2:] = True
    assert pattern(w, names=()) == "the last 2 axis-0 slices are wrong, entirely"
    w = np.zeros((4, 3), dtype=bool)
    w[:, 1] = True
    assert pattern(w, names=("rows",)) == "axis-1 slices 1-1 are wrong, entirely"


def test_2d_flat_run_that_is_not_whole_slices():
    w = np.zeros((4, 5), dtype=bool)
    w.reshape(-1)[3:8] = True
    assert pattern(w) == "elements (flat) 3-7 are wrong"


def test_2d_scattered_falls_back_to_the_rows_hit():
    w = np.zeros((6, 3), dtype=bool)
    w[4, 0] = w[5, 2] = True
    assert pattern(w) == "2 elements are wrong, in the last 2 rows"
    w = np.zeros((6, 5), dtype=bool)
    w[1, 0] = w[1, 3] = w[4, 2] = True
    assert pattern(w) == "3 elements are wrong, in rows 1, 4"
    assert pattern(w, names=()) == "3 elements are wrong, in rows 1, 4"


def test_3d_scattered_falls_back_to_the_planes_hit():
    w = np.zeros((4, 3, 5), dtype=bool)
    w[1, 0, 0] = w[1, 2, 4] = w[2, 1, 3] = True
    assert pattern(w) == "3 elements are wrong, in planes 1-2"
