"""The output comparison: tolerance rules, unwritten detection, mismatch reports and patterns."""

import numpy as np
import pytest

from cuda_llm.engine.gpu.compare import HALF_POISON, INT_POISON, allowed_error, compare_output
from cuda_llm.engine.task.model import Tolerance

ABS = Tolerance("abs", 1e-6, 1e-30)


def poisoned_float32(n: int) -> np.ndarray:
    return np.full(n, INT_POISON, dtype=np.uint32).view(np.float32)


def test_exact_match_passes_with_zero_ratio():
    exp = np.arange(1, 11, dtype=np.float64)
    cmp = compare_output("c", exp, exp.astype(np.float32), ABS)
    assert cmp.passed and cmp.wrong == 0 and cmp.worst_ratio == 0.0 and cmp.pattern is None


def test_error_just_inside_and_just_outside_the_bound():
    exp = np.array([1000.0])
    inside = compare_output("c", exp, np.array([1000.0 + 0.9e-3]), ABS)
    outside = compare_output("c", exp, np.array([1000.0 + 1.1e-3]), ABS)
    assert inside.passed and 0.85 < inside.worst_ratio < 0.95
    assert not outside.passed and outside.mismatches[0].index == (0,)


def test_unwritten_tail_is_reported_as_poisoned_not_just_wrong():
    exp = np.arange(1, 11, dtype=np.float64)
    got = exp.astype(np.float32)
    got[-3:] = poisoned_float32(3)
    cmp = compare_output("c", exp, got, ABS)
    assert cmp.wrong == 3 and cmp.unwritten == 3
    assert cmp.pattern == "the last 3 elements are unwritten (still NaN)"
    assert [m.index for m in cmp.mismatches] == [(7,), (8,), (9,)]


def test_a_computed_nan_is_wrong_but_not_unwritten():
    exp = np.ones(4)
    got = np.array([1, np.nan, 1, 1], dtype=np.float32)  # canonical NaN, not the poison pattern
    cmp = compare_output("c", exp, got, ABS)
    assert cmp.wrong == 1 and cmp.unwritten == 0


def test_int_outputs_detect_the_poison_sentinel():
    exp = np.array([5, 7, 9], dtype=np.int64)
    got = np.array([5, INT_POISON, 9], dtype=np.uint32).view(np.int32)
    cmp = compare_output("bins", exp, got, Tolerance("exact", 0, 0))
    assert cmp.wrong == 1 and cmp.unwritten == 1


def test_half_poison_detected():
    got = np.array([HALF_POISON, 0x3C00], dtype=np.uint16).view(np.float16)
    cmp = compare_output("y", np.array([1.0, 1.0]), got, ABS)
    assert cmp.unwritten == 1 and cmp.wrong == 1


def test_whole_rows_pattern_names_rows():
    exp = np.ones((4, 5))
    got = exp.astype(np.float32)
    got[1:] = 7
    assert compare_output("c", exp, got, ABS).pattern == "the last 3 rows are wrong, entirely"


def test_whole_columns_pattern_names_columns():
    exp = np.ones((4, 5))
    got = exp.astype(np.float32)
    got[:, 3:] = 0
    assert compare_output("c", exp, got, ABS).pattern == "the last 2 columns are wrong, entirely"


def test_strided_pattern():
    exp = np.ones(100)
    got = exp.astype(np.float32)
    got[::32] = 0
    assert compare_output("c", exp, got, ABS).pattern == "every 32nd of the elements from 0 are wrong"


def test_rms_scale_tolerates_small_absolute_errors_on_tiny_elements():
    exp = np.array([1.0, -1.0, 1e-9, 1.0])
    got = exp + np.array([0, 0, 5e-7, 0])  # huge relative error on the tiny element, tiny vs the RMS
    assert compare_output("c", exp, got, Tolerance("rms", 1e-6, 0)).passed
    assert not compare_output("c", exp, got, Tolerance("abs", 1e-6, 0)).passed


def test_custom_scale_requires_a_scale():
    with pytest.raises(ValueError):
        allowed_error(np.ones(3), Tolerance("custom", 1e-5, 0), None)
    bound = allowed_error(np.ones(3), Tolerance("custom", 1e-3, 0), np.array([1.0, 10.0, 100.0]))
    assert np.allclose(bound, [1e-3, 1e-2, 1e-1])


def test_infinity_never_passes():
    exp = np.array([1.0, 2.0])
    got = np.array([1.0, np.inf], dtype=np.float32)
    cmp = compare_output("c", exp, got, Tolerance("abs", 1.0, 1.0))
    assert cmp.wrong == 1


def test_mismatch_coordinates_are_multidimensional():
    exp = np.zeros((3, 4))
    got = np.zeros((3, 4), dtype=np.float32)
    got[2, 1] = 1
    cmp = compare_output("c", exp, got, Tolerance("abs", 1e-6, 1e-9))
    assert cmp.mismatches[0].index == (2, 1)
    assert cmp.mismatches[0].got == 1.0 and cmp.mismatches[0].expected == 0.0
