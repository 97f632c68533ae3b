"""Accuracy budgets in ulps for the elementwise math rows, and the records of backends that
miss them, declared once (README, "How results are judged", has the table).

A budget is numpy's spacing of the reference's result in the output dtype times a number per
dtype (conformance.registry.Tol); where cancellation makes the exact result tiny beside its
operand, the row adds ulps of the operand (``operand_ulps``), never a constant floor.
"""

from __future__ import annotations

import numpy as np

from conformance.registry import ORT_BACKENDS, Blame, Tol, ulp_budget
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
