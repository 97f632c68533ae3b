"""Accuracy budgets in ulps for the elementwise rows, the records of backends that miss them,
and the more accurate references of rows where scipy misses them itself, declared once
(README, "How results are judged", has the table).

A budget is numpy's spacing of the reference's result in the output dtype times a number per
dtype (conformance.registry.Tol); where cancellation makes the exact result tiny beside its
operand, the row adds ulps of the operand (``operand_ulps``), never a constant floor.
"""

from __future__ import annotations

import contextlib

import mpmath
import numpy as np

from conformance.registry import (
    NUMBA_BACKENDS,
    ORT_BACKENDS,
    Blame,
    Reference,
    Tol,
    ulp_budget,
)
from conformance.strategies import fixed

# Budgets in ulps of numpy's result, measured over magnitudes log-uniform from the smallest
# subnormal to the largest finite, the small-magnitude ladder, [-4, 4] and [0.9, 1.1] on ONNX
# Runtime (with and without its optimizer), the reference evaluator, C and Numba: float16 is
# computed in float32 and rounded everywhere (at most 1 ulp); float32 and float64 within 4
# ulp (the most: ONNX Runtime's float32 Acos and the reference evaluator's float32 log10).
ULPS = ulp_budget(float16=1, float32=4, float64=4)
# ONNX Runtime's double Sin and Cos reduce |x| below ~15 by a double-precision multiple of pi:
# next to a zero of the result (x near 3 pi) the error is up to 0.44 ulp of x, 1.8e4 ulp of
# the result (measured; beyond 15 they are within 4 ulp). The exact result there is tiny
# beside the operand, so the budget takes one ulp of x besides.
PERIODIC_ULPS = {**ULPS, "float64": Tol(ulps=4, operand_ulps=1)}
# IEEE's correctly rounded operations (+, -, *, /, the square of x) and the ones that select
# or negate an operand: every backend gives numpy's result to the bit (measured over the same
# magnitudes, also with one operand broadcast), but Numba's fast-math quotient, a record.
CORRECTLY_ROUNDED = ulp_budget(float16=0, float32=0, float64=0)
# pow: libm's pow and ONNX Runtime's are within 1 ulp of numpy's (measured, bases log-uniform
# over the whole range and exponents in [-60, 60]); float16 is rounded from float32.
POW_ULPS = ulp_budget(float16=1, float32=2, float64=2)
# A sum of three operands is rounded twice, and backends add them in different orders (Numba's
# fast-math reassociates; PyTensor before 3.3 sums in double): where they cancel, the orders
# differ by up to an ulp of a partial sum, at most twice the largest operand (measured: 1 ulp
# of it, 1.3e7 ulp of the float32 result).
SUM3_ULPS = {d: Tol(ulps=1, operand_ulps=2) for d in ("float16", "float32", "float64")}


def magnitude_within(low: float, high: float, dtype: str):
    """A ``when`` predicate: some element of a ``dtype`` operand has ``low < |x| < high``."""

    def when(case) -> bool:
        x = case.values[0]
        return x.dtype == np.dtype(dtype) and bool(((np.abs(x) > low) & (np.abs(x) < high)).any())

    return when


# ONNX Runtime's Tanh kernels against numpy, measured over a sweep of each range
ORT_TANH_TINY = {
    "backends": ORT_BACKENDS, "dtypes": ("float32",), "blame": Blame.ONNXRUNTIME,
    "reason": "ONNX Runtime's float32 Tanh is off by up to 103 ulp for 0 < |x| < 6.9e-37, "
              "e.g. tanh(1e-38) = 9.999897e-39 (73 ulp)",
    "match": "abs err", "when": magnitude_within(0, 6.9e-37, "float32"), "example": fixed(1e-38),
    # MLAS picks its Tanh kernel by instruction set; measured on an AVX-512 CPU only
    "cpu": "ONNX Runtime's MLAS float32 Tanh kernel (seen with AVX-512)",
}
ORT_TANH_DOUBLE = {
    "backends": ORT_BACKENDS, "dtypes": ("float64",), "blame": Blame.ONNXRUNTIME,
    "reason": "ONNX Runtime's vectorized float64 Tanh is off by up to 9 ulp for 3.69 < |x| < "
              "17.96, e.g. tanh(11.6982) by 8 ulp (a lone element: 1 ulp)",
    "match": "abs err", "when": magnitude_within(3.69, 17.96, "float64"),
    # two elements: ONNX Runtime's kernel computes pairs in SIMD, a lone one apart
    "example": fixed([11.6982, 11.6982]), "cpu": "ONNX Runtime's SIMD double Tanh kernel",
}


def reciprocal_product_differs(case) -> bool:
    """Some float quotient x / y differs from x * (1 / y) computed in its dtype."""
    x, y = np.broadcast_arrays(*case.values[:2])
    dtype = np.result_type(x, y)  # an integer operand is converted first (true_div_int16_and)
    if dtype.kind != "f":
        return False
    x, y = x.astype(dtype), y.astype(dtype)
    with np.errstate(all="ignore"):
        quotient, product = x / y, x * (y.dtype.type(1) / y)
    return bool(((quotient != product) & ~(np.isnan(quotient) & np.isnan(product))).any())


# Numba compiles with fast-math, whose arcp flag lets LLVM divide by a divisor that is constant
# along the inner loop as a multiplication by its reciprocal: measured 1 ulp in float32 and 2
# in float64, and inf where 1 / y overflows (y subnormal) though x / y is finite. Measured on
# PyTensor 3.3.8 with numba 0.68; 3.0.7 with numba 0.65 (the same flags) divides each element.
NUMBA_RECIPROCAL_QUOTIENT = {
    "backends": NUMBA_BACKENDS, "dtypes": ("float32", "float64"), "blame": Blame.PYTENSOR,
    "cause": "numba-fastmath-reciprocal", "versions": "pytensor>=3.3",
    "reason": "Numba's fast-math divides by a divisor constant along the inner loop as x * (1 / "
              "y): 5 / 3 is 1 ulp off, and inf where 1 / y overflows",
    "match": "abs err|but pytensor-py=", "when": reciprocal_product_differs,
    "example": fixed([[5.0, 5.0]], [[3.0]], static=((1, None), (None, 1))),
}


def mpmath_reference(function, *, dtypes: tuple[str, ...], reason: str,
                     digits: int = 40) -> Reference:
    """A ``Row.reference`` for a one-operand function: ``function`` (of an mpmath number)
    at ``digits`` decimal digits, rounded to double (once, correctly; a float32 output is
    rounded again), on each element where the operand and the Python linker's result are
    finite and the result nonzero. Elsewhere (nan, infinities, poles, and a result the
    library underflows to zero) the Python linker's value stands."""

    def compute(values, outputs):
        (out,) = outputs
        x = np.broadcast_to(values[0], out.shape)
        refined = out.copy()
        with mpmath.workdps(digits):
            for index in np.ndindex(out.shape):
                if not (np.isfinite(x[index]) and np.isfinite(out[index]) and out[index]):
                    continue
                # a pole where the linker gave a value, or an operand beyond mpmath's reach
                # (erfc of 1e300), keeps the linker's
                with contextlib.suppress(ValueError, ZeroDivisionError, OverflowError):
                    refined[index] = float(mpmath.re(function(mpmath.mpf(float(x[index])))))
        return [refined]

    return Reference(compute, dtypes, reason, source=f"mpmath at {digits} digits")
