"""The oracle's budgets in units in the last place: spacing in the output's dtype, subnormals
included, the cancellation term scaled to the operands, and the Tol fields checked up front."""

from __future__ import annotations

import mpmath
import numpy as np
import pytensor.tensor as pt
import pytest

from conformance.accuracy import mpmath_reference
from conformance.core.oracle import compare, either_expectation, ulp
from conformance.registry import DEFAULT_TOL, Row, Tol, ulp_budget
from conformance.strategies import ANY, elemwise

FOUR = Tol(ulps=4)


def steps(value, n: int, dtype: str) -> np.ndarray:
    """``value`` (rounded to ``dtype``) moved ``n`` representable numbers up."""
    x = np.asarray(value, dtype)
    for _ in range(n):
        x = np.nextafter(x, np.asarray(np.inf, dtype))
    return x


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("value", [1.0, 3.0e-3, -7.5])
def test_a_budget_counts_steps_of_the_output_dtype(dtype, value):
    expected = np.asarray([value], dtype)
    assert compare([expected], [steps(expected, 4, dtype)], FOUR, backend="b").ok
    result = compare([expected], [steps(expected, 5, dtype)], FOUR, backend="b")
    assert not result.ok and result.max_ulp == pytest.approx(5, rel=0.05)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_subnormal_results_are_judged_in_the_subnormal_spacing(dtype):
    tiny = np.finfo(dtype).smallest_subnormal
    expected = np.asarray([7 * tiny], dtype)
    assert compare([expected], [steps(expected, 3, dtype)], FOUR, backend="b").ok
    result = compare([expected], [np.zeros(1, dtype)], FOUR, backend="b")
    assert not result.ok and result.max_ulp == pytest.approx(7)
    assert ulp(np.asarray([0.0, tiny], dtype)).tolist() == [float(tiny)] * 2


def test_the_largest_magnitude_has_a_finite_ulp():
    big = np.finfo(np.float32).max
    assert ulp(np.asarray([big, -big])).tolist() == [float(np.spacing(np.nextafter(big, 0)))] * 2
    assert np.isnan(ulp(np.asarray([np.inf], np.float32))).all()


def test_a_result_below_the_absolute_floor_is_judged_in_ulps():
    """log(1 + x) for log1p(x) at x = 1e-17 gives 0: the default tolerance lets it pass."""
    expected, naive = np.asarray([1e-17]), np.asarray([np.log(1 + 1e-17)])
    assert compare([expected], [naive], DEFAULT_TOL["float64"], backend="b").ok
    result = compare([expected], [naive], FOUR, backend="onnxruntime", case="log1p(float64[1])")
    assert not result.ok
    assert result.message.startswith("onnxruntime: out[0]=0.0 but pytensor-py=1e-17 (abs err 1e-17"
                                     " > tol ")
    assert "; 6.49e+15 ulp > 4 ulp) [log1p(float64[1])]" in result.message


def test_the_worst_element_is_the_one_furthest_beyond_its_budget():
    expected = np.asarray([1e10, 1e-10])
    actual = np.asarray([steps(1e10, 8, "float64"), 2e-10])
    result = compare([expected], [actual], FOUR, backend="b")
    assert result.where == (0, (1,)) and result.elements == ((0,), (1,))


def test_a_relative_tolerance_reports_ulps_for_information():
    result = compare([np.asarray([1.0], "float32")], [np.asarray([1.5], "float32")],
                     Tol(rtol=1e-6), backend="b")
    assert result.message.endswith("(abs err 0.5 > tol 1e-06; 4.19e+06 ulp)")


def test_the_cancellation_term_scales_with_the_operands():
    """sin(x) next to 3 pi: an argument reduction off by a fraction of x's ulp is right."""
    x = np.asarray([3 * np.pi, 0.25])
    expected = np.sin(x)
    actual = expected + np.asarray([0.4 * np.spacing(3 * np.pi), 0.0])
    tol = Tol(ulps=4, operand_ulps=1)
    assert not compare([expected], [actual], FOUR, backend="b", operands=[x]).ok
    assert compare([expected], [actual], tol, backend="b", operands=[x]).ok
    # an operand that does not broadcast to the output counts with its largest element
    assert compare([expected], [actual], tol, backend="b", operands=[np.full(3, 10.0)]).ok
    # far from the operands' ulp it is an ordinary budget
    worse = expected + np.asarray([0.0, 8 * np.spacing(expected[1])])
    assert not compare([expected], [worse], tol, backend="b", operands=[x]).ok


def test_either_expectation_judges_with_the_same_budget():
    expected, alternative = np.asarray([1.0]), np.asarray([2.0])
    actual = [steps([2.0], 3, "float64")]
    merged = either_expectation([expected], [alternative], actual, FOUR, frozenset())
    assert merged[0].tolist() == [2.0]


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"rtol": 1e-6, "ulps": 4}, "not both"),
    ({"atol": 1e-9, "ulps": 4}, "not both"),
    ({"operand_ulps": 1}, "needs ulps="),
    ({"ulps": -1}, "ulps=-1"),
    ({"rtol": float("nan")}, "rtol=nan"),
    ({"ulps": "4"}, "ulps='4'"),
])
def test_tolerance_fields_are_checked_up_front(kwargs, words):
    with pytest.raises(ValueError, match=words):
        Tol(**kwargs)


def test_ulp_budget_names_float_dtypes_only():
    assert ulp_budget(float32=4) == {"float32": Tol(ulps=4)}
    with pytest.raises(ValueError, match=r"\['int8'\] are not float dtypes"):
        ulp_budget(int8=1)


def test_a_row_reference_refines_its_dtypes_only():
    reference = mpmath_reference(mpmath.digamma, dtypes=("float64",), reason="scipy is off")
    row = Row("psi", pt.psi, elemwise(ANY), ("float32", "float64"), reference=reference)
    x = np.asarray([-2.9999999999895515, -3.0, np.inf])
    linker = [np.asarray([-95705776838.1, np.nan, np.inf])]
    (refined,) = row.expected("float64", (x,), linker)
    with mpmath.workdps(40):
        exact = float(mpmath.digamma(mpmath.mpf(x[0])))
    # the finite element is mpmath's, rounded once; the pole and the infinity are the linker's
    assert refined[0] == exact and np.isnan(refined[1]) and refined[2] == np.inf
    assert row.expected("float32", (x,), linker) is linker
    failure = ValueError("raised")
    assert row.expected("float64", (x,), failure) is failure
    with pytest.raises(ValueError, match=r"Reference.dtypes \['int8'\]"):
        Row("psi", pt.psi, elemwise(ANY), ("float64",),
            reference=mpmath_reference(mpmath.digamma, dtypes=("int8",), reason="r"))
