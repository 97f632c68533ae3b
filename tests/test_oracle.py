"""The oracle: dtype, shape, values, nan/inf, exact integers, agreement on raising."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.core.oracle import assert_agree, compare
from conformance.registry import EXACT, Tol

F32 = Tol(rtol=1e-6, atol=1e-6)


def arr(values, dtype="float32"):
    return np.asarray(values, dtype=dtype)


def test_message_names_backend_element_values_error_tolerance_and_case():
    result = compare([arr([[1, 1, 1], [1, 1, 1.0]])], [arr([[1, 1, 1], [1, 1, 0.5]])], F32,
                     backend="onnxruntime", case="round(float32[2,3])")
    assert not result.ok
    assert result.message.startswith("onnxruntime: out[1, 2]=")
    assert "pytensor-py=" in result.message and "abs err 0.5 > tol" in result.message
    assert result.message.endswith("[round(float32[2,3])]")


def test_nan_matches_nan_and_infinities_must_match_exactly():
    nan_inf = arr([np.nan, np.inf, -np.inf])
    assert compare([nan_inf], [nan_inf.copy()], F32, backend="b").ok
    assert not compare([arr([np.inf])], [arr([-np.inf])], Tol(rtol=1.0, atol=1e9), backend="b").ok
    assert not compare([arr([1.0])], [arr([np.nan])], Tol(rtol=1.0, atol=1e9), backend="b").ok
    # the other way round too: a tolerance relative to a nan expectation allows nothing
    got = compare([arr([np.nan, 2.0])], [arr([1.0, 2.0])], Tol(rtol=1.0, atol=1e9), backend="b")
    assert not got.ok and "out[0]=1.0 but pytensor-py=nan" in got.message, got.message
    assert not compare([arr([np.inf])], [arr([3e38])], Tol(rtol=1.0), backend="b").ok


def test_signed_zeros_differ_with_their_own_message_whatever_the_tolerance():
    for tol in (EXACT, Tol(rtol=1.0, atol=1.0)):
        result = compare([arr([1.0, 2.0, 0.0, -0.0])], [arr([1.0, 2.0, 0.0, 0.0])], tol,
                         backend="onnxruntime", reference="pytensor-py", case="neg(float32[4])",
                         signed_zeros=True)
        assert not result.ok
        assert result.message == ("onnxruntime: out[3]=0.0 but pytensor-py=-0.0 "
                                  "(sign of zero differs) [neg(float32[4])]")
        assert result.where == (0, (3,))
    assert compare([arr([-0.0, 0.0])], [arr([-0.0, 0.0])], EXACT, backend="b",
                   signed_zeros=True).ok
    # off by default (--signed-zeros turns it on for a run)
    assert compare([arr([-0.0])], [arr([0.0])], EXACT, backend="b").ok


def test_a_value_error_is_reported_before_a_sign_of_zero():
    result = compare([arr([-0.0, 1.0])], [arr([0.0, 2.0])], F32, backend="b", signed_zeros=True)
    assert "abs err 1 > tol" in result.message and result.where == (0, (1,))
    assert compare([arr([-0.0, 1.0])], [arr([0.0, 1.0 + 1e-7])], F32, backend="b",
                   signed_zeros=True).message.endswith("(sign of zero differs)")


def test_integer_zeros_have_no_sign():
    assert compare([np.array([0, 0])], [np.array([-0, 0])], EXACT, backend="b",
                   signed_zeros=True).ok


def test_tolerance_is_absolute_plus_relative():
    assert compare([arr([100.0])], [arr([100.00009])], Tol(rtol=1e-6, atol=0.0), backend="b").ok
    assert not compare([arr([100.0])], [arr([100.0002])], Tol(rtol=1e-6), backend="b").ok


def test_integers_and_bools_are_exact_whatever_the_tolerance():
    big = arr([2**53 + 1], "int64")
    result = compare([big], [big - 1], Tol(rtol=1.0, atol=10.0), backend="pytensor-c")
    assert not result.ok and "exact match required for int64" in result.message
    assert not compare([arr([True], "bool")], [arr([False], "bool")], F32, backend="b").ok


def test_dtype_and_shape_mismatches_are_reported_before_values():
    dt = compare([arr([1.0])], [arr([1.0], "float64")], F32, backend="b")
    assert "out.dtype=float64, but pytensor-py gives float32" in dt.message
    sh = compare([arr([1.0])], [arr([[1.0]])], F32, backend="b")
    assert "out.shape=(1, 1), but pytensor-py gives (1,)" in sh.message


def test_values_false_checks_only_dtype_and_shape():
    assert compare([arr([1.0])], [arr([7.0])], F32, backend="b", values=False).ok
    assert not compare([arr([1.0])], [arr([7.0, 1])], F32, backend="b", values=False).ok


def test_raising_must_agree():
    err = ValueError("bad shape")
    assert compare(err, KeyError("other"), F32, backend="b").ok
    one_sided = compare(err, [arr([1.0])], F32, backend="onnxruntime")
    assert not one_sided.ok
    assert "onnxruntime returned float32[1] but pytensor-py raised ValueError: bad shape" in (
        one_sided.message)


def test_multi_output_messages_name_the_output():
    result = compare([arr([1.0]), arr([2.0])], [arr([1.0]), arr([3.0])], F32, backend="b")
    assert result.message.startswith("b: out1[0]=")


def test_worst_errors_are_reported_for_passing_comparisons():
    result = compare([arr([1.0, 2.0])], [arr([1.0, 2.0000002])], Tol(rtol=1e-6), backend="b")
    assert result.ok and 0 < result.max_abs < 1e-6 and result.max_ulp == pytest.approx(1.0)


def test_assert_agree_raises_with_the_message():
    with pytest.raises(AssertionError, match=r"b: out\[0\]"):
        assert_agree([arr([1.0])], [arr([2.0])], F32, backend="b")


@pytest.mark.parametrize("shape", [(), (3,)])
def test_a_bool_byte_other_than_0_or_1_is_named_though_it_reads_as_true(shape):
    """PyTensor's C All of nothing returns the byte 255: == calls it True, a cast 255."""
    expected = np.ones(shape, bool)
    actual = expected.copy()
    actual.view(np.uint8)[...] = 255
    result = compare([expected], [actual], EXACT, backend="pytensor-c")
    assert not result.ok
    where = "out" if not shape else "out[0]"
    assert f"pytensor-c: {where} holds the byte 255, not a bool (0 or 1)" in result.message
    assert compare([expected], [expected.copy()], EXACT, backend="pytensor-c").ok
