"""Tensor-creation ops: Alloc, AllocEmpty, ARange, Eye, tri/tril/triu and the *_like helpers.

Sizes, bounds and offsets are symbolic: 0-d int64 graph inputs drawn consistently with the
data. Where an op's output dtype is a parameter (eye, tri, empty, arange with ``dtype=``) the
tested dtype is that output dtype.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from hypothesis import assume
from hypothesis import strategies as st

from conformance.jax_records import dtype_differs, without_jax
from conformance.registries.shape import ranks
from conformance.registry import (
    C_BACKENDS,
    NOT_REFERENCE,
    NUMBA_BACKENDS,
    Blame,
    Case,
    Composes,
    Row,
)
from conformance.strategies import ANY, FINITE, NONZERO, Domain, arrays, dtypes, elements


def _i64(value) -> np.ndarray:
    return np.asarray(value, dtype=np.int64)


def _sizes(count: int, *, max_side: int = 4):
    return st.lists(st.integers(0, max_side), min_size=count, max_size=count)


# (static shape of the value, rank of the allocated output): one compile each.
ALLOC_LAYOUTS = (((), 2), ((None,), 2), ((1, None), 3), ((None, 1), 2), ((None,), 1))


def is_negative_zero(v) -> bool:
    return v.dtype.kind == "f" and v.size == 1 and v.item() == 0 and bool(np.signbit(v).all())


# Alloc.perform fills from np.zeros when the value is a size-1 zero, so -0.0 turns into +0.0
# (its C code, numpy's broadcast_to and ONNX Expand keep -0.0); broadcast_to builds Alloc.
ALLOC_NEGATIVE_ZERO = {
    "backends": without_jax(NOT_REFERENCE),
    "dtypes": dtypes.FLOATS, "blame": Blame.PYTENSOR, "cause": "alloc-perform-zero-value",
    "reason": "Alloc.perform fills a size-1 zero value with np.zeros: -0.0 comes out +0.0",
    "match": r"=-0\.0 but pytensor-py=0\.0 \(sign of zero",
    "when": lambda case: is_negative_zero(case.values[0]),
}


def allocs(dtype: str):
    """A value and a target shape (0-d int64 inputs) it broadcasts to: declared length-1
    axes and new leading axes get any length, the others keep the value's length."""

    @st.composite
    def cases(draw):
        static, rank = draw(st.sampled_from(ALLOC_LAYOUTS))
        shape = tuple(1 if s == 1 else draw(st.integers(0, 4)) for s in static)
        new = draw(_sizes(rank - len(static)))
        target = new + [draw(st.integers(0, 4)) if s == 1 else n
                        for s, n in zip(static, shape, strict=True)]
        value = draw(arrays(dtype, shape, ANY))
        return Case((value, *map(_i64, target)), (static,) + ((),) * rank)

    return cases()


def shapes_for(dtype: str):
    """Only a shape (0-d int64 inputs, ranks 0-3); the tested dtype is the output's."""

    @st.composite
    def cases(draw):
        target = draw(_sizes(draw(st.sampled_from([1, 2, 3, 0]))))
        return Case(tuple(map(_i64, target)), ((),) * len(target), (("dtype", dtype),))

    return cases()


def _numpy_arange(start, stop, step, dtype):
    """What PyTensor's ARange computes, or None where it raises (ONNX cannot raise)."""
    try:
        out = np.arange(start.item(), stop.item(), step.item(), dtype=dtype)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError, MemoryError):
        return None
    return out


def _bounded(values, dtype, out_dtype):
    """The arange inputs as 0-d arrays; rejects cases PyTensor raises on or that are long."""
    start, stop, step = (np.asarray(v, dtype=dtype) for v in values)
    out = _numpy_arange(start, stop, step, out_dtype)
    assume(out is not None and out.size <= 32)
    return start, stop, step


def aranges(dtype: str):
    """start, stop, step of the tested dtype: stop = start + t * step (t in [-2, 8], maybe
    fractional), so ranges are empty, exact or cut short; huge lengths, a zero step and
    non-finite bounds (PyTensor raises) are left out."""
    kind = np.dtype(dtype).kind
    out_dtype = pt.arange(*(pt.scalar(dtype=dtype) for _ in range(3))).dtype
    finite_nonzero = Domain(nonzero=True, allow_nan=False, allow_inf=False)

    @st.composite
    def cases(draw):
        if kind == "b":
            values = (draw(st.booleans()), draw(st.booleans()), True)
        else:
            start = draw(elements(dtype, FINITE if kind == "f" else ANY))
            step = draw(elements(dtype, finite_nonzero if kind == "f" else NONZERO))
            t = draw(st.integers(-2, 8)) + draw(st.sampled_from([0, 0.25, 0.5]))
            if kind == "f":
                info = np.finfo(dtype)
                stop = np.clip(float(start) + t * float(step), info.min, info.max)
            else:
                info = np.iinfo(dtype)
                stop = min(max(int(start) + int(t * int(step)), info.min), info.max)
            values = (start, stop, step)
        return Case(_bounded(values, dtype, out_dtype), ((),) * 3)

    return cases()


def aranges_to(dtype: str):
    """Small int64 start, stop, step and ``dtype=`` the tested dtype (values that leave it
    wrap around as in numpy; bounds numpy refuses are left out)."""

    @st.composite
    def cases(draw):
        start, stop = draw(st.integers(-20, 300)), draw(st.integers(-20, 300))
        step = draw(st.integers(-40, 40).filter(bool))
        arrays_ = _bounded((start, stop, step), "int64", dtype)
        return Case(arrays_, ((),) * 3, (("dtype", dtype),))

    return cases()


def diagonals(dtype: str):
    """n, m and a diagonal offset k (0-d int64 inputs), k reaching past either side."""

    @st.composite
    def cases(draw):
        n, m = draw(st.integers(0, 5)), draw(st.integers(0, 5))
        k = draw(st.integers(-6, 6))
        return Case((_i64(n), _i64(m), _i64(k)), ((),) * 3, (("dtype", dtype),))

    return cases()


def triangles(dtype: str):
    """A matrix or a stack of matrices and a diagonal offset k (a 0-d int64 input)."""

    @st.composite
    def cases(draw):
        rank = draw(st.sampled_from([2, 3]))
        value = draw(arrays(dtype, tuple(draw(_sizes(rank))), ANY))
        k = draw(st.integers(-5, 5))
        return Case((value, _i64(k)), ((None,) * rank, ()))

    return cases()


def fills(dtype: str):
    """A model of any shape and a 0-d fill value, both of the tested dtype."""

    @st.composite
    def cases(draw):
        model = draw(ranks()(dtype))
        value = draw(arrays(dtype, (), ANY))
        return Case((*model.values, value), (*model.static, ()))

    return cases()


def _beyond_double(case) -> bool:
    """True when an integer bound or step is one a float64 cannot hold exactly."""
    return any(v.dtype.kind in "iu" and abs(int(v)) > 2**53 for v in case.values)


def _near_top(dtype: str) -> Case:
    """A one-element range just below the dtype's maximum, which doubles cannot tell apart."""
    top = int(np.iinfo(dtype).max)
    values = (top, top - 1, -1) if dtype == "int64" else (top - 1, top, 1)
    return Case(tuple(np.asarray(v, dtype=dtype) for v in values), ((),) * 3)


def _numba_rounds(dtype: str) -> Case:
    """A range whose length Numba's double arithmetic gets wrong: one element of uint64 just
    below the top; int64 (1, min, min), whose (stop - start) / step is 1 + 2**-63."""
    if dtype == "uint64":
        return _near_top(dtype)
    low = int(np.iinfo(dtype).min)
    return Case(tuple(np.asarray(v, dtype=dtype) for v in (1, low, low)), ((),) * 3)


def _arange_to(start, stop, step, dtype):
    return pt.arange(start, stop, step, dtype=dtype)


def _tri(n, m, k, dtype):
    return pt.tri(n, m, k, dtype=dtype)


# In random graphs the offset k (a graph input in the rows' cases) is a constant in
# [-5, 5], as the cases draw it: past either side of small matrices.
TRIANGLES = Composes(domains=(ANY,), accepts=lambda shape: len(shape) >= 2,
                     params=lambda shape: st.integers(-5, 5).map(lambda k: (("k", k),)))
LIKES = Composes(domains=(ANY,))
# PyTensor's JAX backend hands a 0-d constant to jax as a Python scalar (jax_typify of a 0-d
# array is .item()), so zeros_like's and ones_like's fill value takes JAX's default dtype.
JAX_CONSTANT_DTYPE = dtype_differs(
    [0], ("int8", "int16", "int32", "uint8", "uint16", "uint32", "uint64", "float16", "float32"),
    cause="jax-constant-dtype",
    reason="JAX gets a 0-d constant as a Python scalar, so a fill of one takes JAX's default "
           "dtype (int64, float64)")
# The fill value is a second operand: a 0-d one, or (when the graph holds none) one of the
# model's own shape, which full_like (second(a, v)) broadcasts the same way.
FILLS = Composes(domains=(ANY, ANY), pairs=lambda a, b: b == () or b == a)


ROWS = [
    Row("alloc", pt.alloc, allocs, dtypes.ALL, grid=(ANY,))
    .xfail(**ALLOC_NEGATIVE_ZERO, example=lambda d: Case((np.asarray(-0.0, d), _i64(2)),
                                                         ((), ()))),
    Row("alloc_empty", lambda *shape, dtype: pt.empty(shape, dtype=dtype), shapes_for,
        dtypes.ALL, compare_values=False),
    Row("arange", pt.arange, aranges, dtypes.ALL)
    .xfail(backends=C_BACKENDS, dtypes=("int64", "uint64"),
           blame=Blame.PYTENSOR,
           reason="ARange's C code reads start/stop/step as double: 64-bit ints above 2**53 round",
           match=r"out\.shape=|exact match required|OverflowError", when=_beyond_double,
           example=_near_top)
    .xfail(backends=NUMBA_BACKENDS, dtypes=("int64", "uint64"), blame=Blame.PYTENSOR,
           cause="numba-arange-double",
           reason="Numba's ARange computes its length through double: 64-bit bounds above "
                  "2**53 round", match=r"out\.shape=|exact match required",
           when=_beyond_double, example=_numba_rounds)
    .xfail(backends=NUMBA_BACKENDS, dtypes=("bool",), blame=Blame.PYTENSOR,
           cause="numba-arange-bool", reason="Numba cannot type ARange of bools (TypingError)",
           match="raised TypingError",
           example=lambda d: Case(tuple(np.asarray(v, d) for v in (False, True, True)),
                                  ((),) * 3)),
    Row("arange_dtype", _arange_to, aranges_to, dtypes.ALL),
    Row("eye", lambda n, m, k, dtype: pt.eye(n, m, k, dtype=dtype), diagonals, dtypes.ALL),
    Row("tri", _tri, diagonals, dtypes.ALL),
    Row("tril", pt.tril, triangles, dtypes.ALL, compose=TRIANGLES, grid=(ANY,)),
    # PyTensor builds triu as x * (1 - tri), and refuses 1 - bool.
    Row("triu", pt.triu, triangles, dtypes.NUMERIC, compose=TRIANGLES, grid=(ANY,)),
    Row("zeros_like", pt.zeros_like, ranks(), dtypes.ALL, compose=LIKES)
    .xfail(**JAX_CONSTANT_DTYPE),
    Row("ones_like", pt.ones_like, ranks(), dtypes.ALL, compose=LIKES)
    .xfail(**JAX_CONSTANT_DTYPE),
    Row("full_like", pt.full_like, fills, dtypes.ALL, compose=FILLS, grid=(ANY, ANY)),
    Row("empty_like", pt.empty_like, ranks(), dtypes.ALL, compare_values=False),
]
