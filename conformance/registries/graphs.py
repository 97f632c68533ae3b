"""Random multi-op graphs composed from the elemwise and reduction rows."""

from __future__ import annotations

import numpy as np

from conformance.registry import Blame, Case, Row
from conformance.strategies.graphs import Composer

#: Bound to the whole registry by ``conformance.registries`` once it is assembled.
COMPOSER = Composer()


def leaves_float16(case: Case) -> bool:
    """Some float16 input is small or large enough that a product of two leaves float16's
    range (below its smallest subnormal, or above its largest value)."""
    return any(v.dtype == np.float16 and bool(((v != 0) & (np.abs(v) < 2.0**-12)).any()
                                               | (np.abs(v) > 2.0**8).any())
               for v in case.values)


def underflow_example(dtype: str) -> Case:
    values = (np.array(1.0, dtype), np.array(2.0**-14, dtype))
    nodes = (("mul", (1, 1), ()), ("switch", (2, 2, 0), ()))
    return Case(values, ((), ()), (("nodes", nodes), ("outputs", (3,))))


def repeats_zero_times(case: Case) -> bool:
    """Some node repeats a whole axis zero times with a constant scalar count."""
    return any(name == "repeat_scalar" and dict(params).get("r") == 0
               for name, _, params in dict(case.params)["nodes"])


def zero_repeat_example(dtype: str) -> Case:
    nodes = (("repeat_scalar", (0,), (("r", 0), ("axis", 0))),)
    return Case((np.ones(1, dtype),), ((1,),), (("nodes", nodes), ("outputs", (1,))))


def pads_through_scan(case: Case) -> bool:
    """Some node pads by reflection or symmetry (PyTensor builds those with a Scan)."""
    nodes = dict(case.params)["nodes"]
    return any(name in ("pad_reflect", "pad_symmetric") for name, _, _ in nodes)


def padded_mean_example(dtype: str) -> Case:
    nodes = (("pad_symmetric", (0,), (("widths", ((4, 1),)),)), ("mean", (1,), (("axis", None),)))
    return Case((np.ones(3, dtype),), ((None,),), (("nodes", nodes), ("outputs", (2,))))


ROWS = [
    Row("random_graph", COMPOSER.build, COMPOSER.cases,
        ("bool", "int8", "int32", "int64", "uint8", "float16", "float32", "float64"),
        code=COMPOSER.code, signed_zeros=COMPOSER.judges_zero_signs)
    .xfail(backends=("onnxruntime",), dtypes=("float16",), blame=Blame.ONNXRUNTIME,
           reason="ONNX Runtime's optimizer keeps float16 node chains in float32, so an "
                  "intermediate that leaves float16's range does not underflow or overflow",
           match="abs err", when=leaves_float16, example=underflow_example)
    .xfail(backends=("onnxruntime", "onnxruntime-rewritten"), blame=Blame.ONNXRUNTIME_OPTIMIZER,
           cause="ort-expand-elimination-zero",
           reason="ExpandElimination drops an Expand to a constant shape with a 0 where its "
                  "input's length is 1, so repeat(x, 0) of a static length-1 axis keeps it",
           match="onnxruntime(-rewritten)? raised", when=repeats_zero_times,
           example=zero_repeat_example)
    .xfail(backends=("onnxruntime-rewritten",), blame=Blame.CONVERTER,
           reason="the default rewrites compute a reflect or symmetric pad's output shape "
                  "through the pad's inner Scan (for a mean, say), and the converter has no "
                  "rule for Scan",
           match="UnsupportedOpError: cannot convert Scan", when=pads_through_scan,
           example=padded_mean_example),
]
