"""Reductions: CAReduce (Sum, Prod, Max, Min, All, Any, fused Composite), ProdWithoutZeros,
Argmax/argmin, mean/var/std compositions and the CumOp scans."""

from __future__ import annotations

import math

import numpy as np
import pytensor.scalar.basic as ps
import pytensor.tensor as pt
from pytensor.tensor.elemwise import CAReduce
from pytensor.tensor.extra_ops import cumprod, cumsum
from pytensor.tensor.math import ProdWithoutZeros, var

from conformance.jax_records import dtype_differs, on_jax, without_jax
from conformance.registry import (
    C_BACKENDS,
    JAX_BACKENDS,
    NOT_REFERENCE,
    NUMBA_BACKENDS,
    ORT_BACKENDS,
    REWRITTEN_ONNX,
    Blame,
    Composes,
    Row,
    summed,
    without_numba,
)
from conformance.strategies import ANY, Domain, dtypes, fixed
from conformance.strategies.axes import (
    SCAN_LAYOUTS,
    axis_cases,
    exact_sums,
    exact_values,
)
from conformance.strategies.composing import (
    axis_params,
    has_nonempty_axis,
    keepdims_shape,
    nonempty_axis_params,
    same_or_flat_shape,
    single_axis_params,
)

ONNX_BACKENDS = (*ORT_BACKENDS, "onnx-reference")
ALL, FLOATS, NUMERIC = dtypes.ALL, dtypes.FLOATS, dtypes.NUMERIC
NARROW_INTS = ("int8", "int16", "int32", "uint8", "uint16", "uint32")

def reduces_empty_axis(case) -> bool:
    """True when the reduction runs over at least one length-0 axis."""
    (x,), axis = case.values, dict(case.params)["axis"]
    axes = range(x.ndim) if axis is None else [axis] if isinstance(axis, int) else axis
    return any(x.shape[a] == 0 for a in axes)


def reduces_something(case) -> bool:
    return case.values[0].size > 0


def has_nan(case) -> bool:
    return any(v.dtype.kind == "f" and np.isnan(v).any() for v in case.values)


def fused_sum_exp(x, axis):
    """CAReduce{Composite{i0 + exp(i1)}}, as ``local_careduce_fusion`` builds for
    ``sum(exp(x))`` under the C backend's FAST_RUN (PyTensor 3.0.7)."""
    acc = "float32" if x.dtype == "float16" else "float64"
    i0, i1 = ps.get_scalar_type(acc)(), ps.get_scalar_type(x.dtype)()
    out = ps.add(i0, ps.exp(i1))
    if out.type.dtype != acc:
        out = ps.cast(out, acc)
    composite = ps.Composite([i0, i1], [out])
    composite.identity, composite.nin, composite.nout = ps.add.identity, 2, 1
    return CAReduce(composite, axis=axis, acc_dtype=acc, dtype=x.dtype)(x)


def _semantic_gap_empty(op: str):
    return {"backends": ONNX_BACKENDS, "blame": Blame.CONVERTER,
            "reason": f"semantic gap: PyTensor raises on {op} over an empty axis, "
                      "ONNX cannot raise",
            "match": "pytensor-py raised ValueError: zero-size", "when": reduces_empty_axis,
            "example": fixed([], params=[("axis", None)])}


def holds_dtype_min(case) -> bool:
    x = case.values[0]
    return x.dtype.kind == "i" and bool((x == np.iinfo(x.dtype).min).any())


# pt.min of a signed integer is built as -max(-x): at the dtype's minimum -x wraps back to
# itself, so min([0, -128]) is 0; the default rewrites turn the graph into a Min.
MIN_NEGATED_MAX = {
    "backends": ("pytensor-c-opt", "pytensor-numba-opt", *REWRITTEN_ONNX),
    "dtypes": ("int8", "int16", "int32", "int64"),
    "blame": Blame.PYTENSOR, "cause": "min-as-negated-max",
    "reason": "pt.min of signed integers is -max(-x), which wraps at the dtype's minimum "
              "(min([0, -128]) is 0); rewritten, it is a Min and right",
    "match": "exact match required", "when": holds_dtype_min,
    "example": lambda d: fixed([0, np.iinfo(d).min], params=[("axis", None)])(d),
}


def c_0d(op: str, backends=("pytensor-c",)):
    """A 0-d Max or Min fails in C code generation; the default rewrites drop a 0-d
    reduction, so the rewritten backend shows it only inside a graph that keeps one."""
    return {"backends": backends, "blame": Blame.PYTENSOR,
            "reason": f"{op}'s C code generation fails for a 0-d input (unpacking error)",
            "cause": "careduce-c-0d",
            "match": "too many values to unpack", "when": lambda case: case.values[0].ndim == 0,
            "example": fixed(1, params=[("axis", None)])}


def _ort_nan_dropped(op: str):
    return {"backends": ORT_BACKENDS, "dtypes": FLOATS, "blame": Blame.ONNXRUNTIME,
            "reason": f"{op} keeps a nan only where it is the reduction's first element "
                      f"({op}([1, 2, nan, 4, 5]) is 5; numpy gives nan)",
            "cause": "reduce-max-min-nan", "reported": "microsoft/onnxruntime#10514",
            "match": r"but pytensor-py=nan\b", "when": has_nan,
            "example": fixed([1.0, 2.0, math.nan, 4.0, 5.0], params=[("axis", -1)])}


def _numba_nan_dropped(op: str):
    return {"backends": NUMBA_BACKENDS, "dtypes": ("float32", "float64"),
            "blame": Blame.PYTENSOR, "cause": "numba-minmax-nan", "versions": "pytensor<3.3",
            "reason": f"Numba's {op} skips nan (an all-nan slice gives the identity, an infinity)",
            "match": r"but pytensor-py=nan\b", "when": has_nan,
            "example": fixed([math.nan, 1.0], params=[("axis", -1)])}


def has_opposite_zeros(case) -> bool:
    signs = np.signbit(case.values[0][case.values[0] == 0])
    return bool(signs.any() and not signs.all())


def _py_opposite_zeros(op: str):
    return {"backends": (*C_BACKENDS, *ORT_BACKENDS), "dtypes": ("float32", "float64"),
            "blame": Blame.PYTENSOR, "cause": "numpy-minmax-opposite-zeros",
            "reason": f"Python linker's float32/64 {op} (numpy's SIMD loops) keeps the last of "
                      "opposite zeros; C code, ONNX Runtime and numpy's docs the first",
            "match": r"\(sign of zero differs\)", "when": has_opposite_zeros,
            "example": fixed([0.0, -0.0], params=[("axis", -1)])}


def _beyond_int32(case) -> bool:
    """Some value, or its negation (min of a signed integer is -max(-x)), is beyond int32."""
    x = case.values[0]
    return bool(((x >= 2**31) | ((x <= -(2**31)) if x.dtype.kind == "i" else False)).any())


def ort131_uint32(op: str, example, match: str = "exact match required",
                  dtypes=("uint32",)):
    return {"backends": ORT_BACKENDS, "dtypes": dtypes, "blame": Blame.ONNXRUNTIME,
            "versions": "onnxruntime<1.32", "cause": "ort-reduce-uint32-signed",
            "reason": f"{op}: ONNX Runtime 1.31's {', '.join(dtypes)} ReduceMax/ReduceMin "
                      "compare as int32 from four elements on, so values beyond int32's range "
                      "land on the wrong side" + (" (uint64 reduces as int64)"
                                                  if "uint64" in dtypes else ""),
            "match": match, "when": _beyond_int32, "example": example,
            # seen on one x86 CPU, not on another with the same release: the kernel ONNX
            # Runtime picks for the CPU's instruction set decides
            "cpu": "some x86 CPUs' vectorised ReduceMin/ReduceMax kernels"}


def _ort_float16_zeros(op: str, example):
    return {"backends": ORT_BACKENDS, "dtypes": ("float16",), "blame": Blame.ONNXRUNTIME,
            "cause": "ort-reduce-float16-zero-sign",
            "reason": f"float16 {op} of opposite zeros from four elements on returns the "
                      "other zero than numpy's first-wins",
            "match": r"\(sign of zero differs\)", "when": has_opposite_zeros,
            "example": example}


def _c_wraps(op: str, example):
    return {"backends": C_BACKENDS, "dtypes": ("int64", "uint64"), "blame": Blame.PYTENSOR,
            "reason": f"{op}'s C code goes through double: 64-bit extremes come back wrapped",
            "cause": "maximum-minimum-c-double",
            "match": "exact match required", "example": example}


def _ort_int64_sum(example):
    """uint64 sums run on int64 (ONNX Runtime has no uint64 ReduceSum): the same bits."""
    return {"backends": ORT_BACKENDS, "dtypes": ("int64", "uint64"), "blame": Blame.ONNXRUNTIME,
            "reason": "ReduceSum on int64 (uint64 runs on it) loses low bits of values beyond "
                      "2**53",
            "cause": "reducesum-int64-low-bits",
            "match": "exact match required", "example": example}


AXIS_NONE = [("axis", None)]
MOMENTS = exact_sums(16, int_bound=2**20)
# Each row's special-value grid: its one operand's domain, the values its factory draws.
SUMS, PRODUCTS = (exact_values(16),), (exact_values(2),)
MOMENT_VALUES = (exact_values(16, int_bound=2**20),)
# PyTensor's Numba reductions start from the identity (or index 0) without checking the axis'
# length, so they return where numpy, and so PyTensor's Python and C code, raise.
NUMBA_EMPTY_REDUCE = {
    "backends": NUMBA_BACKENDS, "blame": Blame.PYTENSOR, "when": reduces_empty_axis,
    "cause": "numba-reduce-empty-axis",
    "reason": "Numba's max/min/argmax/argmin over a length-0 axis return where numpy raises",
    "match": "pytensor-py raised ValueError: (zero-size array|attempt to get arg)",
    "example": fixed(np.zeros((1, 0, 0)), params=[("axis", (0, 2))]),
}


def numba_bool_0d(op: str, value: bool):
    return {"backends": ("pytensor-numba",), "dtypes": ("bool",), "blame": Blame.PYTENSOR,
            "cause": "numba-careduce-bool", "versions": "pytensor<3.3",
            "reason": f"Numba's {op} of a 0-d bool without rewrites gives {not value} for "
                      f"{value}",
            "match": "exact match required", "when": lambda case: case.values[0].ndim == 0,
            "example": fixed(value, params=AXIS_NONE)}


def numba_bool_reduced(op: str, value: bool):
    """Numba's bool max (min) over an axis gives True (False) for a slice of all False (True):
    both modes, any rank from 1 (the NUMBA mode's rewrites drop a 0-d reduction)."""
    def shows(case) -> bool:
        x, axis = case.values[0], dict(case.params).get("axis")
        return x.ndim > 0 and x.size > 0 and bool(np.any(
            (np.max if op == "max" else np.min)(x, axis=axis) == value))

    return {"backends": NUMBA_BACKENDS, "dtypes": ("bool",), "blame": Blame.PYTENSOR,
            "cause": "numba-careduce-bool", "versions": "pytensor<3.3",
            "reason": f"Numba's bool {op} gives {not value} for a slice of all {value}",
            "match": "exact match required", "when": shows,
            "example": fixed(np.full((2, 3), value), params=[("axis", 0)])}


def acc_wraps(case) -> bool:
    """True when the sum, accumulated in the input's own dtype, wraps."""
    x = case.values[0]
    if x.dtype.kind not in "iu":
        return False
    info = np.iinfo(x.dtype)
    axis = dict(case.params)["axis"]
    total = np.sum(x.astype(object), axis=axis)
    return bool(np.any((np.asarray(total) > info.max) | (np.asarray(total) < info.min)))


# The ONNX reference evaluator's ArgMax is numpy's, which raises as well.
EMPTY_ARGMAX = {
    "backends": ORT_BACKENDS, "blame": Blame.CONVERTER, "when": reduces_empty_axis,
    "reason": "semantic gap: numpy raises on argmax over an empty axis even when the result "
              "is empty; ONNX returns the empty result",
    "match": "returned int64\\[.*pytensor-py raised ValueError: attempt to get argmax",
    "example": fixed(np.zeros((1, 0, 0)), params=[("axis", (0, 2))]),
}
# Integer products accumulate in int64 or uint64, and uint64 ones run on int64 (ONNX Runtime
# has no uint64 ReduceProd).
ORT_INT64_PROD = {
    "backends": ORT_BACKENDS, "dtypes": dtypes.INTS, "blame": Blame.ONNXRUNTIME,
    "reason": "ReduceProd on int64 (uint64 runs on it) rounds through double (low bits lost, "
              "saturates at 2**63-1)",
    "match": "exact match required", "example": fixed([127] * 9, params=AXIS_NONE),
}
PY_PROD_OVERFLOW = {  # not JAX's: its ProdWithoutZeros raises (below)
    "backends": without_jax(NOT_REFERENCE), "dtypes": dtypes.INTS, "blame": Blame.PYTENSOR,
    "reason": "ProdWithoutZeros.perform multiplies Python ints and raises once they pass 64 bits",
    "match": "pytensor-py raised OverflowError", "example": fixed([127] * 10, params=AXIS_NONE),
}
# JAX's cumsum of bools is int64 too: its own record, on narrow ints only. Numba's CumOp of
# bool and int32 returns numpy's int64 as perform does (2.38 and 3.0.7): it shares the fault
# (CUM_DTYPE_BUG_SHARED)
CUM_DTYPE_BUG = {
    "backends": without_jax(NOT_REFERENCE),
    "dtypes": ("int8", "int16", "uint8", "uint16", "uint32"),
    "blame": Blame.PYTENSOR,
    "reason": "CumOp.perform returns numpy's 64-bit cumsum/cumprod, not the declared dtype",
    "cause": "cumop-declared-dtype",
    "match": r"dtype=(bool|u?int(8|16|32)), but pytensor-py gives u?int64",
    "example": fixed([1, 2], params=AXIS_NONE),
}
CUM_DTYPE_BUG_SHARED = {**CUM_DTYPE_BUG, "dtypes": ("bool", "int32"), "shared_by": NUMBA_BACKENDS,
                        "backends": without_numba(CUM_DTYPE_BUG["backends"])}
NUMBA_CUMSUM_UNSIGNED = {
    "backends": NUMBA_BACKENDS, "dtypes": ("uint8", "uint16", "uint32"), "blame": Blame.PYTENSOR,
    "versions": "pytensor>=3.3", "cause": "cumop-declared-dtype",
    "reason": "3.3's Numba cumsum of a narrow unsigned int returns int64 where perform returns "
              "numpy's uint64 (the graph declares the input's dtype)",
    "match": r"out\.dtype=int64, but pytensor-py gives uint64",
    "example": fixed([1, 2], params=AXIS_NONE),
}


def jax_reduce_dtype(dtypes_, example=None) -> dict:
    """PyTensor's JAX CAReduce casts its result to the accumulator dtype and returns an
    operand it reduces over no axis as it is: not the output dtype the graph declares."""
    return dtype_differs(example or fixed([1], params=AXIS_NONE), dtypes_,
                         cause="jax-careduce-dtype",
                         reason="JAX returns a reduction in its accumulator's dtype (an operand "
                                "reduced over no axis as it is), not the graph's")


def _reduces_axes(case) -> bool:
    return case.values[0].ndim > 0


# PyTensor's JAX CAReduce reduces with the jax.lax function named after the scalar op (or
# after its nfunc_spec): none for ProdWithoutZeros or a fused Composite.
JAX_NO_LAX_REDUCER = {
    "backends": JAX_BACKENDS, "blame": Blame.PYTENSOR, "cause": "jax-careduce-scalar-op",
    "reason": "JAX's CAReduce of a scalar op jax.lax has no reducer for fails while tracing "
              "(AttributeError, UnboundLocalError) instead of saying it has no implementation",
    "match": "raised (AttributeError: module 'jax.lax' has no attribute|UnboundLocalError)",
    "when": _reduces_axes, "example": fixed([1, 2], params=AXIS_NONE),
}
# The JAX mode's rewrites cancel x - mean(x) for a 0-d x: var and std of nan or inf are 0.
JAX_MOMENT_0D = {
    "backends": ("pytensor-jax-opt",), "dtypes": ("float64",), "blame": Blame.PYTENSOR,
    "cause": "jax-mode-moment-0d",
    "reason": "the JAX mode's rewrites make var and std of a 0-d operand 0, also of nan and inf",
    "match": r"out=0\.0 but pytensor-py=nan",
    "when": lambda case: case.values[0].ndim == 0 and not np.isfinite(case.values[0]).all(),
    "example": fixed(np.nan, params=AXIS_NONE),
}

# In random graphs operands come from earlier nodes: guards keep sums and products exact in
# any order (whole numbers), extremes away from the records of max/min/argmin, and reduced
# axes non-empty where PyTensor raises on an empty one.
EXACT_SUM = Domain(-16, 16, integral=True)
EXACT_PROD = Domain(-2, 2, integral=True)
NO_EXTREMES = Domain(-2**52, 2**52, allow_nan=False, allow_inf=False)


def reduces(domain=ANY, *, dtypes=None, nonempty=False) -> Composes:
    """How a reduction over ``axis`` composes: its reduced axes kept as length-1 axes."""
    return Composes(domains=(domain,), params=nonempty_axis_params if nonempty else axis_params,
                    shape=keepdims_shape, keep_rank=True, dtypes=dtypes,
                    accepts=has_nonempty_axis if nonempty else None)


def scans(domain) -> Composes:
    return Composes(domains=(domain,), params=single_axis_params, shape=same_or_flat_shape)


# At most 16 elements reduced (LAYOUTS) or scanned (SCAN_LAYOUTS); the mean divides once more.
SUM_TOL, MEAN_TOL = summed(16), summed(17)

ROWS = [
    Row("sum", lambda x, axis: pt.sum(x, axis=axis), axis_cases(exact_sums(16)), ALL,
        compose=reduces(EXACT_SUM), grid=SUMS, tol=SUM_TOL)
    .xfail(**_ort_int64_sum(fixed([2**63 - 2], params=AXIS_NONE)))
    .xfail(**jax_reduce_dtype(("float16", "float32"))),
    Row("sum_acc_dtype", lambda x, axis: pt.sum(x, axis=axis, acc_dtype=x.dtype),
        axis_cases(exact_sums(16)), ALL,
        compose=reduces(EXACT_SUM), grid=SUMS, tol=SUM_TOL)
    .xfail(**_ort_int64_sum(fixed([2**63 - 2], params=AXIS_NONE)))
    .xfail(backends=ORT_BACKENDS, dtypes=("int32",), blame=Blame.ONNXRUNTIME,
           reason="ReduceSum on int32 saturates at 2**31-1 instead of wrapping",
           match="exact match required", example=fixed([2**31 - 1] * 2, params=AXIS_NONE))
    .xfail(backends=("pytensor-c-opt", *REWRITTEN_ONNX), dtypes=NARROW_INTS,
           blame=Blame.PYTENSOR,
           reason="the default rewrites drop a narrow acc_dtype and sum in the 64-bit output "
                  "dtype: the graph's wrapped sum comes out exact",
           match="exact match required", when=acc_wraps,
           example=lambda d: fixed([np.iinfo(d).max] * 2, params=[("axis", -1)])(d))
    .xfail(backends=NUMBA_BACKENDS, dtypes=("int8", "int16", "int32", "uint8", "uint16",
                                             "uint32"),
           blame=Blame.PYTENSOR, cause="numba-sum-acc-dtype",
           reason="Numba sums in the output dtype, not the narrower acc_dtype: no wrapping",
           match="exact match required", when=acc_wraps,
           example=lambda d: fixed([np.iinfo(d).max] * 2, params=AXIS_NONE)(d))
    .xfail(**jax_reduce_dtype(("bool", *NARROW_INTS, "float16", "float32")))
    .xfail(backends=("pytensor-jax-opt",), dtypes=("bool",), blame=Blame.PYTENSOR,
           cause="jax-mode-bool-sum",
           reason="the JAX mode sums bools in int64 whatever acc_dtype says: sum([True, True], "
                  "acc_dtype=bool) is 2 where PyTensor's bool accumulator gives 1",
           match="exact match required",
           when=lambda case: bool((np.sum(case.values[0], axis=dict(case.params)["axis"])
                                   > 1).any()),
           example=fixed([True, True], params=AXIS_NONE)),
    # Not from float32 or float64 in graphs: later nodes would compute in float16, below
    # the tolerance the graph's outputs are judged with. Small sums keep the int64 record
    # (low bits lost near 2**63) from showing.
    Row("sum_out_dtype",
        lambda x, axis: pt.sum(x, axis=axis, dtype="float16" if x.dtype[0] == "f" else "int8"),
        axis_cases(exact_sums(16)), ALL,
        compose=reduces(EXACT_SUM, dtypes=(*dtypes.BOOL, *dtypes.INTS, "float16")), grid=SUMS,
        tol=SUM_TOL)
    .xfail(**_ort_int64_sum(fixed([2**63 - 2], params=AXIS_NONE)))
    .xfail(**jax_reduce_dtype(ALL)),
    Row("prod", lambda x, axis: pt.prod(x, axis=axis), axis_cases(exact_sums(2)), ALL,
        compose=reduces(EXACT_PROD), grid=PRODUCTS, tol=SUM_TOL)
    .xfail(**ORT_INT64_PROD)
    .xfail(**jax_reduce_dtype(("float16", "float32"))),
    Row("prod_without_zeros", lambda x, axis: ProdWithoutZeros(axis)(x),
        axis_cases(exact_sums(2)), ALL,
        compose=reduces(EXACT_PROD), grid=PRODUCTS, tol=SUM_TOL)
    .xfail(**ORT_INT64_PROD).xfail(**PY_PROD_OVERFLOW)
    .xfail(**jax_reduce_dtype(("bool", *NARROW_INTS), fixed(1, params=AXIS_NONE)),
           when=lambda case: case.values[0].ndim == 0)
    .xfail(**JAX_NO_LAX_REDUCER),
    Row("max", lambda x, axis: pt.max(x, axis=axis), axis_cases(), ALL,
        compose=reduces(NO_EXTREMES, dtypes=ALL, nonempty=True), grid=(ANY,))
    .xfail(**_semantic_gap_empty("max"))
    .xfail(**c_0d("Max"))
    .xfail(**_c_wraps("Max", fixed([2**63 - 1], params=AXIS_NONE)))
    .xfail(**_ort_nan_dropped("ReduceMax"))
    .xfail(**_py_opposite_zeros("Max"))
    .xfail(**ort131_uint32("ReduceMax", fixed([2**32 - 1, 0, 0, 0], params=[("axis", -1)]),
                           dtypes=("uint32", "int64", "uint64")))
    .xfail(**_ort_float16_zeros("ReduceMax",
                                fixed([-1.0, 0.0, -0.0, -0.0], params=AXIS_NONE)))
    .xfail(**NUMBA_EMPTY_REDUCE)
    .xfail(**numba_bool_0d("max", False))
    .xfail(**numba_bool_reduced("max", False))
    .xfail(**_numba_nan_dropped("max")),
    Row("min", lambda x, axis: pt.min(x, axis=axis), axis_cases(), ALL,
        compose=reduces(NO_EXTREMES, dtypes=ALL, nonempty=True), grid=(ANY,))
    .xfail(**_semantic_gap_empty("min"))
    .xfail(**c_0d("Min"))
    .xfail(**_c_wraps("Min", lambda d: fixed([2**63 - 1] if d == "int64" else [2**63 + 1, 5],
                                             params=AXIS_NONE)(d)))
    .xfail(**_ort_nan_dropped("ReduceMin"))
    .xfail(**_py_opposite_zeros("Min"))
    .xfail(**ort131_uint32("ReduceMin", fixed([0] + [2**32 - 1] * 3, params=[("axis", -1)]),
                           dtypes=("uint32", "int64", "uint64")))
    .xfail(**_ort_float16_zeros("ReduceMin",
                                fixed([1.0, -0.0, 0.0, 0.0], params=AXIS_NONE)))
    .xfail(**MIN_NEGATED_MAX)
    .xfail(**NUMBA_EMPTY_REDUCE)
    .xfail(**numba_bool_0d("min", True))
    .xfail(**numba_bool_reduced("min", True))
    .xfail(**_numba_nan_dropped("min"))
    .xfail(**on_jax(MIN_NEGATED_MAX, ("pytensor-jax-opt",)))
    .xfail(backends=JAX_BACKENDS, dtypes=("uint64",), blame=Blame.PYTENSOR,
           cause="jax-constant-dtype",
           reason="pt.min of uint64 subtracts from the constant 2**64 - 1, which JAX gets as a "
                  "Python int and cannot make an int64 (OverflowError)",
           match="raised OverflowError: Python int", example=fixed([1], params=AXIS_NONE)),
    Row("all", lambda x, axis: pt.all(x, axis=axis), axis_cases(), ALL,
        compose=reduces(), grid=(ANY,))
    .xfail(backends=C_BACKENDS, blame=Blame.PYTENSOR,
           reason="C All stores an empty reduction's identity as the bool byte 255: it reads "
                  "as True, but casts and sums see 255",
           match="holds the byte 255, not a bool", when=lambda case: case.values[0].size == 0,
           example=fixed([], params=[("axis", -1)])),
    Row("any", lambda x, axis: pt.any(x, axis=axis), axis_cases(), ALL,
        compose=reduces(), grid=(ANY,)),
    Row("argmax", lambda x, axis: pt.argmax(x, axis=axis), axis_cases(), ALL,
        compose=reduces(dtypes=ALL, nonempty=True), grid=(ANY,))
    .xfail(**EMPTY_ARGMAX).xfail(**NUMBA_EMPTY_REDUCE),
    # argmin is argmax(-x), argmax(iinfo.max - x) or argmax(~x): uint8 lands on int16
    # (255 is an int16 constant), uint16 on int32, uint32 and uint64 wider still.
    Row("argmin", lambda x, axis: pt.argmin(x, axis=axis), axis_cases(), ALL,
        compose=reduces(NO_EXTREMES, dtypes=ALL, nonempty=True), grid=(ANY,))
    .xfail(**EMPTY_ARGMAX)
    .xfail(backends=("pytensor-c",), dtypes=("uint64",), blame=Blame.PYTENSOR,
           reason="argmin(uint64) is argmax(int64(-1) - x) in float64; the C code subtracts "
                  "in uint64 first, so large values tie", match="exact match required",
           example=fixed([1, 0], params=[("axis", -1)]))
    .xfail(**NUMBA_EMPTY_REDUCE),
    # Values keep sums exact in any order, so these rows check the composition (the
    # int64 ReduceSum divergence is recorded on "sum"). var/std take float inputs only:
    # their float64 results from integer inputs differ in the last ulp with summation
    # order, and a row's tolerance is keyed on the input dtype (exact for integers).
    # var/std keep the relative default: the graph on |x| bounds none of their squared terms.
    Row("mean", lambda x, axis: pt.mean(x, axis=axis), axis_cases(MOMENTS), ALL,
        compose=reduces(EXACT_SUM), grid=MOMENT_VALUES, tol=MEAN_TOL)
    .xfail(**jax_reduce_dtype(("float32",))),
    # math.var, not pt.var: importing the module pytensor.tensor.var (a deprecated alias of
    # .variable; coverage imports every module) rebinds pt.var to that module
    Row("var", lambda x, axis: var(x, axis=axis), axis_cases(MOMENTS), FLOATS,
        compose=reduces(EXACT_SUM), grid=MOMENT_VALUES)
    .xfail(**jax_reduce_dtype(("float16", "float32"))).xfail(**JAX_MOMENT_0D),
    Row("std", lambda x, axis: pt.std(x, axis=axis), axis_cases(MOMENTS), FLOATS,
        compose=reduces(EXACT_SUM), grid=MOMENT_VALUES)
    .xfail(**jax_reduce_dtype(("float16", "float32"))).xfail(**JAX_MOMENT_0D),
    # Only size-0 operands in graphs: over any element the Python linker's result is wrong
    # (the record below), so graphs check the fused reduction's identity and shapes.
    Row("sum_exp_fused", fused_sum_exp, axis_cases(exact_sums(16)), FLOATS,
        compose=Composes(domains=(ANY,), params=axis_params, shape=keepdims_shape,
                         keep_rank=True, dtypes=FLOATS, accepts=lambda shape: 0 in shape),
        grid=SUMS)
    # the C backends run a float16 fused reduction through perform, as wrong as the reference
    .xfail_apart(dict(backends=without_jax(NOT_REFERENCE), blame=Blame.PYTENSOR,
                      reason="CAReduce.perform with a fused Composite starts from x[0], not "
                             "exp(x[0])", match="abs err", when=reduces_something,
                      example=fixed([0.0, 1.0], params=AXIS_NONE)),
                 backends=C_BACKENDS, before=None, dtypes=("float16",), shared=True)
    .xfail(**JAX_NO_LAX_REDUCER),
    Row("cumsum", lambda x, axis: cumsum(x, axis=axis), axis_cases(layouts=SCAN_LAYOUTS), ALL,
        compose=scans(EXACT_SUM), grid=(ANY,), tol=SUM_TOL)
    .xfail(**CUM_DTYPE_BUG)
    .xfail(**on_jax(CUM_DTYPE_BUG, dtypes=NARROW_INTS)).xfail(**CUM_DTYPE_BUG_SHARED)
    .xfail(**NUMBA_CUMSUM_UNSIGNED),
    Row("cumprod", lambda x, axis: cumprod(x, axis=axis), axis_cases(layouts=SCAN_LAYOUTS), ALL,
        compose=scans(EXACT_PROD), grid=(ANY,), tol=SUM_TOL)
    .xfail(**CUM_DTYPE_BUG).xfail(**on_jax(CUM_DTYPE_BUG, dtypes=NARROW_INTS))
    .xfail(**CUM_DTYPE_BUG_SHARED),
]
