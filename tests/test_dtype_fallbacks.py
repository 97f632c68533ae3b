"""The converter's stand-ins for ONNX Runtime's missing CPU kernels: integer operators run
in a wider (or order-mapped) dtype and float64 trigonometric/hyperbolic functions are
composed from operators ONNX Runtime has. Checked exactly (integers) or in ulp (floats) on
ONNX Runtime and the reference evaluator, at the extremes the conformance draws reach
only by luck."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytensor
import pytensor.tensor as pt
import pytest
from onnx.reference import ReferenceEvaluator

import converter
from converter import MIN_OPSET

OPSETS = (MIN_OPSET, converter.default_opset())


def _run_both(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with np.errstate(all="ignore"):
        return {"onnxruntime": session.run(None, feeds),
                "onnx-reference": ReferenceEvaluator(model).run(None, feeds)}


def _extremes(dtype: str) -> np.ndarray:
    if dtype == "bool":
        return np.array([True, False, True, False])
    info = np.iinfo(dtype)
    values = [info.min, info.max, info.min + 1, info.max - 1, 0, 1, info.max // 2,
              info.max // 2 + 1, 2**53 + 1 if info.bits == 64 else 3]
    return np.array(values, dtype=object).astype(dtype)


INTEGER_CASES = [
    ("maximum", ("int16", "uint16"), lambda x, y: pt.maximum(x, y), np.maximum),
    ("minimum", ("int16", "uint16"), lambda x, y: pt.minimum(x, y), np.minimum),
    ("switch", ("bool", "int16", "uint16", "uint64"),
     lambda x, y: pt.switch(pt.lt(x, y), x, y), lambda x, y: np.where(x < y, x, y)),
]


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize(("name", "dtypes", "build", "expected"), INTEGER_CASES,
                         ids=[c[0] for c in INTEGER_CASES])
def test_binary_integer_fallbacks_are_exact(name, dtypes, build, expected, opset):
    for dtype in dtypes:
        x, y = pt.vector("x", dtype=dtype), pt.vector("y", dtype=dtype)
        model = converter.to_onnx([x, y], [build(x, y)], opset=opset)
        a = _extremes(dtype)
        b = a[::-1].copy()
        for backend, (out,) in _run_both(model, {"x": a, "y": b}).items():
            np.testing.assert_array_equal(out, expected(a, b), err_msg=f"{name}[{dtype}] {backend}")


REDUCTIONS = {
    "max": lambda x: pt.max(x, axis=-1), "min": lambda x: pt.min(x, axis=-1),
    "argmax": lambda x: pt.argmax(x, axis=-1), "argmin": lambda x: pt.argmin(x, axis=-1),
    "cumsum": lambda x: pt.cumsum(x, axis=-1), "sort": lambda x: pt.sort(x, axis=-1),
    "argsort": lambda x: pt.argsort(x, axis=-1, kind="stable"),
}


@pytest.mark.parametrize("dtype", ["int16", "uint16", "uint32", "uint64"])
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_order_based_integer_fallbacks_are_exact(name, dtype):
    """uint64 runs on int64 through x xor 2**63, which keeps the order of values on both
    sides of 2**63 (a plain Cast would put them below 0). Compared with PyTensor's Python
    implementation (its min of a signed integer is -max(-x), which wraps)."""
    x = pt.matrix("x", dtype=dtype)
    out = REDUCTIONS[name](x)
    model = converter.to_onnx([x], [out])
    a = np.stack([_extremes(dtype), _extremes(dtype)[::-1]])
    mode = pytensor.compile.mode.Mode(linker="py", optimizer=None)
    # CumOp.perform returns 64-bit sums (a recorded PyTensor bug): keep their low bits
    want = pytensor.function([x], out, mode=mode)(a).astype(out.dtype)
    for backend, (got,) in _run_both(model, {"x": a}).items():
        np.testing.assert_array_equal(got, want, err_msg=f"{name}[{dtype}] {backend}")


def test_unique_of_uint64_keeps_sorted_order_and_counts():
    x = pt.vector("x", dtype="uint64")
    values, counts = pt.unique(x, return_counts=True)
    model = converter.to_onnx([x], [values, counts])
    a = np.concatenate([_extremes("uint64"), _extremes("uint64")[:3]])
    want_values, want_counts = np.unique(a, return_counts=True)
    for backend, (got_values, got_counts) in _run_both(model, {"x": a}).items():
        np.testing.assert_array_equal(got_values, want_values, err_msg=backend)
        np.testing.assert_array_equal(got_counts, want_counts, err_msg=backend)


def test_unsigned_sums_wrap_like_numpy():
    """uint64 sums run on int64: the same bits modulo 2**64 (small values, as ONNX
    Runtime's int64 ReduceSum itself goes through double; see the registry records)."""
    x = pt.vector("x", dtype="uint32")
    model = converter.to_onnx([x], [pt.sum(x, acc_dtype="uint32")])
    a = np.array([2**32 - 1, 2**32 - 1, 7], dtype=np.uint32)
    for backend, (out,) in _run_both(model, {"x": a}).items():
        assert out == a.sum(dtype=np.uint32), backend


def _ulps(actual, expected) -> np.ndarray:
    same = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
    with np.errstate(all="ignore"):
        err = np.abs(actual - expected) / np.spacing(np.abs(expected))
    return np.where(same, 0.0, np.nan_to_num(err, nan=np.inf))


def _arguments() -> np.ndarray:
    rng = np.random.default_rng(0)
    bounds = [0.5, 0.66, 1.0, 2.0, 2.414213562373095, 22.0, 709.0, 2.0**-28, 2.0**28]
    near = [b * (1 + rng.uniform(-1e-3, 1e-3, 300)) for b in bounds]
    return np.concatenate([
        rng.standard_normal(3000), rng.uniform(-1, 1, 3000), rng.uniform(-720, 720, 3000),
        *[s * 10.0 ** rng.uniform(-320, 308, 3000) for s in (1, -1)], *near, *[-n for n in near],
        np.arange(1, 3000) * np.pi / 2,
        [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1.7e308, -1.7e308, 710.4, -710.4],
    ])


#: (PyTensor function, numpy function, ulp bound of the float64 composition)
FLOAT64 = {
    "tan": (pt.tan, np.tan, 5), "arcsin": (pt.arcsin, np.arcsin, 2),
    "arccos": (pt.arccos, np.arccos, 2), "arctan": (pt.arctan, np.arctan, 1),
    "sinh": (pt.sinh, np.sinh, 4), "cosh": (pt.cosh, np.cosh, 4),
    "arcsinh": (pt.arcsinh, np.arcsinh, 2), "arccosh": (pt.arccosh, np.arccosh, 2),
    "arctanh": (pt.arctanh, np.arctanh, 2),
}


@pytest.mark.parametrize("name", list(FLOAT64))
def test_float64_compositions_stay_within_their_ulp_bound(name):
    build, reference, bound = FLOAT64[name]
    x = pt.vector("x", dtype="float64")
    model = converter.to_onnx([x], [build(x)])
    a = _arguments()
    with np.errstate(all="ignore"):
        want = reference(a)
    for backend, (out,) in _run_both(model, {"x": a}).items():
        err = _ulps(out, want)
        worst = int(np.argmax(err))
        assert err[worst] <= bound, (
            f"{backend}: {name}({a[worst]!r}) = {out[worst]!r}, numpy {want[worst]!r} "
            f"({err[worst]:.3g} ulp > {bound})")
        zero = want == 0
        assert (np.signbit(out[zero]) == np.signbit(want[zero])).all(), f"{backend}: sign of 0"


def test_float64_arctan2_keeps_quadrants_and_signed_zeros():
    y, x = pt.vector("y", dtype="float64"), pt.vector("x", dtype="float64")
    model = converter.to_onnx([y, x], [pt.arctan2(y, x)])
    a = _arguments()
    b = np.random.default_rng(1).permutation(a)
    special = np.array([0.0, -0.0, np.inf, -np.inf])
    a = np.concatenate([a, np.repeat(special, 4)])
    b = np.concatenate([b, np.tile(special, 4)])
    want = np.arctan2(a, b)
    for backend, (out,) in _run_both(model, {"y": a, "x": b}).items():
        assert _ulps(out, want).max() <= 2, backend
        assert (np.signbit(out) == np.signbit(want))[~np.isnan(want)].all(), backend


@pytest.mark.parametrize("name", list(FLOAT64))
def test_only_float64_is_composed(name):
    """float32 keeps the plain ONNX operator; float64 and integers (computed in float64)
    never use it, as ONNX Runtime has no float64 kernel."""
    build = FLOAT64[name][0]
    plain = {"tan": "Tan", "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan",
             "sinh": "Sinh", "cosh": "Cosh", "arcsinh": "Asinh", "arccosh": "Acosh",
             "arctanh": "Atanh"}[name]
    for dtype, expect_plain in (("float32", True), ("float64", False), ("int32", False)):
        x = pt.vector("x", dtype=dtype)
        ops = {n.op_type for n in converter.to_onnx([x], [build(x)]).graph.node}
        assert (plain in ops) == expect_plain, f"{name}[{dtype}]: {sorted(ops)}"
