"""ndtri_exp (PyTensor 3.3's NdtriExp, converter/ops/special_ndtri.py) on ONNX Runtime against
scipy.special.ndtri_exp at chosen points: next to 0 from below, the switches of formulation,
-log 2 (where the result is 0), far below exp(x)'s underflow, and the non-finite results."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytensor.tensor as pt
import pytest
import scipy.special as sp

import converter
from converter import compat

ndtri_exp = compat.lookup("ndtri_exp")
needs_ndtri_exp = pytest.mark.skipif(
    ndtri_exp is None, reason=f"PyTensor {compat.VERSION} has no ndtri_exp (3.3 on)")

# -1000 and -1e300 are beyond exp(x)'s underflow in float64 (about -745).
POINTS = [-1e-300, -1e-10, -0.5, -math.log(2), -1.0, -2.0, -30.0, -700.0, -1000.0, -1e300]
# (x, the result scipy gives); 2**-24 is float16's smallest subnormal
NONFINITE = [(0.0, math.inf), (-0.0, math.inf), (-math.inf, -math.inf), (math.nan, math.nan),
             (2.0**-24, math.nan), (1.0, math.nan), (math.inf, math.nan)]
# Largest error in ulp of scipy's result (converter/ops/special_ndtri.py): every dtype is
# computed in float64, as scipy does, so float16 and float32 are one rounding of it.
ULP_BOUNDS = {"float16": 1, "float32": 1, "float64": 8}
# Next to x = -log 2 the result is tiny next to p = exp(x), which scipy and ONNX Runtime round
# apart: 2 ulp of p ~ 1/2 in double, times the slope sqrt(2 pi) of ndtri there (the row's atol).
NEAR_HALF = 2 * 2.0**-53 * math.sqrt(2 * math.pi)


def run(values: np.ndarray) -> np.ndarray:
    x = pt.vector("x", dtype=values.dtype.name)
    model = converter.to_onnx([x], [ndtri_exp(x)])
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": values})[0]


def reference(values: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):  # the float32 loop's result, cast as PyTensor casts it
        return np.asarray(sp.ndtri_exp(values)).astype(values.dtype)


@needs_ndtri_exp
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_matches_scipy_in_ulps_at_chosen_points(dtype):
    with np.errstate(over="ignore"):  # -1e300 is -inf in float16 and float32
        x = np.array(POINTS, dtype=dtype)
    actual, wanted = run(x), reference(x)
    assert actual.dtype == wanted.dtype, (
        f"out.dtype={actual.dtype}, but should be {wanted.dtype} [ndtri_exp({dtype})]")
    for xi, a, b in zip(x.tolist(), actual.tolist(), wanted.tolist(), strict=True):
        if not math.isfinite(b):
            assert a == b, f"ndtri_exp({dtype}) at x={xi!r}: onnxruntime={a!r}, scipy={b!r}"
            continue
        error = abs(a - b)
        ulps = error / float(np.spacing(np.abs(np.asarray(b, dtype))))
        assert ulps <= ULP_BOUNDS[dtype] or error <= NEAR_HALF, (
            f"ndtri_exp({dtype}) at x={xi!r}: onnxruntime={a!r}, scipy={b!r}, error {ulps:.3g} "
            f"ulp > {ULP_BOUNDS[dtype]} ulp (abs err {error:.3g})")


@needs_ndtri_exp
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nonfinite_results_are_scipys(dtype):
    """+inf at +-0, -inf at -inf, nan above 0 and at nan; scipy agrees with the table."""
    x = np.array([v for v, _ in NONFINITE], dtype=dtype)
    actual, wanted = run(x), reference(x)
    for xi, a, b, (_, table) in zip(x.tolist(), actual.tolist(), wanted.tolist(), NONFINITE,
                                    strict=True):
        assert (a == b) or (math.isnan(a) and math.isnan(b)), (
            f"ndtri_exp({dtype}) at x={xi!r}: onnxruntime={a!r}, scipy={b!r}")
        assert (b == table) or (math.isnan(b) and math.isnan(table)), (
            f"scipy.special.ndtri_exp({xi!r}) = {b!r}, the table says {table!r}")


def test_rule_exists_where_the_release_has_the_op():
    scalar_ops = converter.supported_ops()["scalar_ops"]
    present = compat.lookup("NdtriExp") is not None
    assert ("NdtriExp" in scalar_ops) == present, (
        f"PyTensor {compat.VERSION} {'has' if present else 'lacks'} NdtriExp but "
        f"{'no' if present else 'a'} rule is registered")
