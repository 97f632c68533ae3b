"""Linear algebra: dot products and the BLAS ops, Blockwise matmul, einsum, diagonals, det.

Float operands are drawn from [-1, 1] plus special values (0, -0.0, +-1, nan, +-inf), so
that the rounding error of a sum of products is bounded a priori: every implementation
(BLAS, MLAS, numpy, the ONNX reference) sums in its own order, and each result is within
``roundings * u * sum(|terms|)`` of the exact value (u: the dtype's unit roundoff). Two
implementations may then differ by twice that, which is the tolerance (see ``rounding``).
nan/inf propagate through a sum of products the same way in any order. Integer results are
exact and drawn over the full range, so wrapping products are exercised.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from hypothesis import strategies as st
from pytensor.tensor import basic as ptb
from pytensor.tensor.blas import (
    BatchedDot,
    _dot22,
    _dot22scalar,
    gemm_no_inplace,
    gemv_no_inplace,
    ger,
)
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.math import Dot

from conformance.jax_records import dtype_differs, elemwise_dtype, on_jax
from conformance.registry import (
    JAX_BACKENDS,
    NUMBA_BACKENDS,
    ONNX_BACKENDS,
    ORT_BACKENDS,
    Blame,
    Case,
    Composes,
    Row,
    Tol,
)
from conformance.strategies import ANY, Domain, dtypes, fixed
from conformance.strategies.matrices import ILL_COND, MAX_N, square_systems
from conformance.strategies.products import (
    ALLOC_DIAGONALS,
    MAX_K,
    alloc_diagonal_operands,
    blas_operands,
    diagonal_operands,
    dot_operands,
    einsum_operands,
    matmul_operands,
    square_operands,
)

try:  # PyTensor 3
    from pytensor.tensor.linalg import SLogDet
except ImportError:  # PyTensor 2.x
    from pytensor.tensor.nlinalg import SLogDet

FLOATS, ALL = dtypes.FLOATS, dtypes.ALL


def rounding(roundings: int, magnitude: float) -> dict[str, Tol]:
    """Per-float-dtype tolerance for two results that are each within ``roundings * u *
    magnitude`` of the exact value, ``magnitude`` bounding the sum of |terms|."""
    return {d: Tol(atol=2 * roundings * magnitude * float(np.finfo(d).eps) / 2) for d in FLOATS}


def zero_scales_nonfinite(case: Case) -> bool:
    """A one-element zero operand and a non-finite other one (numpy.dot's and BLAS's scal
    path, taken for either operand)."""
    x, y = case.values
    return any(a.size == 1 and bool((a == 0).all()) and not np.isfinite(b).all()
               for a, b in ((x, y), (y, x)))


def has_nonfinite(*positions):
    """True when a float operand at one of ``positions`` holds nan or inf."""
    return lambda case: any(not np.isfinite(case.values[i]).all() for i in positions)


def empty_contraction(i=0, j=1):
    """True when operands ``i`` and ``j`` share a length-0 contracted axis but their product
    is not empty."""

    def when(case) -> bool:
        x, y = case.values[i], case.values[j]
        cols = y.shape[-1:] if y.ndim >= 2 else ()
        return x.shape[-1] == 0 and math.prod(x.shape[:-1]) * math.prod(cols) > 0

    return when


def empty_batch_broadcast(case) -> bool:
    """A length-1 batch axis meets a longer or length-0 one while some matrix is empty."""
    x, y = case.values
    pairs = zip(x.shape[:-2][::-1], y.shape[:-2][::-1], strict=False)
    broadcast = any(1 in (a, b) and a != b for a, b in pairs)
    return broadcast and (x.size == 0 or y.size == 0)


# -- factorisations and solvers ------------------------------------------------------
# (the matrices themselves are drawn by conformance.strategies.matrices)


def has_zero_cross(case) -> bool:
    a = case.values[0]
    return a.size > 0 and bool((a == 0).all(axis=-1).any())


def empty_batch(case) -> bool:
    return any(0 in v.shape[:-2] for v in case.values)


def solve_singular_result(example):
    """Solve.perform answers a singular system with ``np.full(a.shape, nan, a.dtype)``
    (the default rewrites may replace the Solve, so pytensor-c-opt differs as ONNX does)."""
    return {"backends": (*ONNX_BACKENDS, "pytensor-c-opt", *NUMBA_BACKENDS),
            "blame": Blame.PYTENSOR,
            "reason": "Solve.perform returns nan shaped and typed like a (float16 stays float16), "
                      "not like its output, when scipy finds a singular (or, for pos, not "
                      "positive definite) matrix",
            "match": r"shape=|gives float16|pytensor-py raised ValueError: could not broadcast",
            "when": lambda case: case.values[1].shape != case.values[0].shape
            or case.values[0].dtype == np.float16, "example": example}


def no_term_underflows(case) -> bool:
    """Whether no term alpha * x_i * y_j of ger's A + alpha * outer(x, y) underflows, in
    either order of its products. One that does leaves a zero whose sign follows how a
    backend rounds: OpenBLAS's ger kept the sign of the exact, tiny term (A = 0,
    alpha = -1e-45, x = 1, y = 0.5 gave -0.0 in float32, as a fused multiply-add does), a
    product rounded before the add gives +0.0; zero signs are judged on the other cases."""
    _, alpha, x, y = (np.asarray(v, dtype=np.longdouble) for v in case.values)
    tiny = np.finfo(case.values[0].dtype).tiny
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 is nan: not an underflow
        terms = (alpha * x, alpha * y, np.outer(x, y), alpha * np.outer(x, y))
        return not any(((t != 0) & (abs(t) < tiny)).any() for t in terms)


def reads_other_triangle(case) -> bool:
    """A matrix right-hand side (the rewrite takes no vector) and, with lower=False, a lower
    triangle of a that is not the transpose of its upper one (the triangle to read)."""
    a, b = case.values
    lower = np.swapaxes(np.tril(a), -1, -2)
    return (b.ndim >= 2 and not dict(case.params)["lower"]
            and not np.array_equal(np.triu(a), lower, equal_nan=True))


def zero_batch(rhs: bool, **params) -> dict:
    """Blockwise.perform runs a core op without a gufunc_spec through np.vectorize, which
    raises on a length-0 batch axis (Det and MatrixInverse have one)."""
    values = (np.zeros((0, 2, 2)), np.zeros(2)) if rhs else (np.zeros((0, 2, 2)),)
    return {"backends": (*ONNX_BACKENDS, *NUMBA_BACKENDS), "blame": Blame.PYTENSOR,
            "reason": "Blockwise.perform raises NotImplementedError on a length-0 batch axis "
                      "(np.vectorize with zero size)",
            "match": "pytensor-py raised NotImplementedError: vectorize with zero size",
            "when": empty_batch, "example": fixed(*values, params=list(params.items()))}


def no_float16(op: str) -> dict:
    return {"backends": ONNX_BACKENDS, "dtypes": ("float16",), "blame": Blame.PYTENSOR,
            "reason": f"{op} accepts float16 but perform raises (numpy.linalg has no float16)",
            "cause": "nlinalg-perform-float16",
            "match": "pytensor-py raised (TypeError|ValueError)",
            "example": fixed([[1.0, 2.0], [3.0, 4.0]])}


def jax_linalg_dtype(example, dtypes_) -> dict:
    return dtype_differs(example, dtypes_, cause="jax-linalg-dtype",
                         reason="JAX's linalg returns jax.numpy's float dtype (float32 for int32, "
                                "float16 kept), not the one the graph declares")


def not_positive_definite(case) -> bool:
    try:
        np.linalg.cholesky(case.values[0].astype(np.float64))
    except np.linalg.LinAlgError:
        return True
    return not np.isfinite(case.values[0]).all()


# PyTensor's JAX backend: a matrix that is not positive definite
JAX_CHOLESKY_NAN = {
    "backends": JAX_BACKENDS, "dtypes": ("float32", "float64"), "blame": Blame.PYTENSOR,
    "cause": "jax-cholesky-nan-triangle",
    "reason": "JAX's cholesky of a matrix that is not positive definite is nan in its triangle "
              "and 0 in the other, where the Op (on_error='nan') gives nan throughout",
    "match": r"=0\.0 but pytensor-py=nan", "when": not_positive_definite,
    "example": fixed([[-2.0, 0.0], [0.0, 2.0]], params=[("lower", True)]),
}


def linalg_tol(roundings: float) -> dict[str, Tol]:
    """``roundings * u`` on the output's dtype (float16 input gives float32)."""
    return {d: Tol(atol=roundings * float(np.finfo(d).eps) / 2) for d in FLOAT_PAIR}


def ill_tol(tol: dict[str, Tol], power: int = 1) -> dict[str, Tol]:
    """``tol`` times the *_illcond rows' condition number ILL_COND (``power`` times)."""
    return {d: Tol(rtol=t.rtol * ILL_COND[d] ** power, atol=t.atol * ILL_COND[d] ** power)
            for d, t in tol.items()}


FLOAT_PAIR = ("float32", "float64")
LOWER = ("lower", (True, False))
TRIANGULAR = (LOWER, ("trans", (0, 1)), ("unit_diagonal", (False, True)))
SINGULAR_VECTOR_RHS = fixed([[1.0, 0.0], [0.0, 0.0]], [1.0, 1.0], params=[("lower", False)])
INV_SINGULAR = {"backends": ONNX_BACKENDS, "blame": Blame.CONVERTER, "dtypes": FLOAT_PAIR,
                "reason": "semantic gap: np.linalg.inv raises on a singular matrix, ONNX cannot "
                          "raise and the model returns nan",
                "match": "pytensor-py raised LinAlgError", "when": has_zero_cross,
                "example": fixed([[1.0, 0.0], [0.0, 0.0]])}
# Well-conditioned systems have |x| about 1, and LU, Cholesky and substitution are backward
# stable: two of them differ by about n * cond * u, which 64 u bounds (substitution is
# componentwise stable). A determinant has that relative error, log|det| that absolute one.
# The *_illcond rows scale it by ILL_COND, the inverse (entries up to ILL_COND) once more.
SOLVE_TOL = linalg_tol(MAX_N * 16)
DET_RTOL = {d: Tol(rtol=MAX_N * 16 * float(np.finfo(d).eps) / 2) for d in FLOAT_PAIR}


def _solve(assume_a):
    return lambda a, b, lower: pt.linalg.solve(a, b, assume_a=assume_a, lower=lower)


def _solve_triangular(a, b, lower, trans, unit_diagonal):
    return pt.linalg.solve_triangular(a, b, lower=lower, trans=trans,
                                      unit_diagonal=unit_diagonal)


DOT_TOL = rounding(MAX_K, MAX_K)
SCALED_TOL = rounding(MAX_K + 2, MAX_K + 1)  # a*dot + b*z with |a|, |b|, |z| <= 1
DET_TOL = rounding(27, 6)  # n <= 3: LU's n**3 roundings, |det| <= 3! for entries in [-1, 1]
SMALL_INTS = ("bool", "int8", "int16", "uint8", "uint16")
INTS = dtypes.INTS
UINT_WIDE = ("uint32", "uint64")


def ort_empty_contraction(example, i=0, j=1):
    return {"backends": ORT_BACKENDS, "dtypes": UINT_WIDE, "blame": Blame.ONNXRUNTIME,
            "reason": "MatMul on uint32/uint64 fails when the contracted axis has length 0",
            "match": "IsPrimitiveDataType", "when": empty_contraction(i, j), "example": example}


# Products in random graphs: whole operands in [-2, 2], so every partial sum of up to 512
# products (no graph value holds more elements) is exact in any order. Not on float16: ONNX
# Runtime skips rounding float16 intermediates it computes in float32 (the graph row's
# record), which the guard's rounding makes a whole unit (exp(exp(x)) rounds to 1 or 2);
# nor on the dtypes of ort_empty_contraction's record: graph contractions may be empty.
EXACT_PRODUCTS = Domain(-2, 2, integral=True, allow_nan=False, allow_inf=False)
PRODUCT_DTYPES = tuple(d for d in ALL if d not in ("float16", *UINT_WIDE))


def _contracts(a: tuple, b: tuple) -> bool:
    """Whether a vector or matrix ``a`` and a vector or matrix ``b`` make a dot product."""
    return 1 <= len(a) <= 2 and 1 <= len(b) <= 2 and a[-1] == b[0]


def _products(ranks: tuple[int, ...], dtypes: tuple[str, ...]) -> Composes:
    """A dot product of operands of ``ranks`` (1 or 2); a first operand must make one with
    itself (a vector or a square matrix), as the graph uses it twice when no other fits."""
    return Composes(domains=(EXACT_PRODUCTS, EXACT_PRODUCTS),
                    shape=lambda shapes, params: (*shapes[0][:-1], *shapes[1][1:]),
                    accepts=lambda a: len(a) in ranks and _contracts(a, a),
                    pairs=lambda a, b: len(b) in ranks and _contracts(a, b), dtypes=dtypes)


def _diagonal_params(shape: tuple):
    return st.tuples(st.integers(-2, 2), st.permutations(range(len(shape)))).map(
        lambda p: (("offset", p[0]), ("axis1", p[1][0]), ("axis2", p[1][1])))


def _diagonal_shape(shapes, params) -> tuple:
    (shape,), k, a1, a2 = shapes, params["offset"], params["axis1"], params["axis2"]
    length = max(0, min(shape[a1] + min(k, 0), shape[a2] - max(k, 0)))
    return (*(n for i, n in enumerate(shape) if i not in (a1, a2)), length)


def _alloc_diagonal_params(shape: tuple):
    return st.sampled_from([p for rank, *p in ALLOC_DIAGONALS if rank == len(shape)]).map(
        lambda p: (("offset", p[0]), ("axis1", p[1]), ("axis2", p[2])))


def _alloc_diagonal_shape(shapes, params) -> tuple:
    """v's last axis becomes a diagonal (longer by |offset|) across axis1 and axis2; its
    other axes fill the remaining places in order."""
    (shape,) = shapes
    side, rest = shape[-1] + abs(params["offset"]), iter(shape[:-1])
    return tuple(side if i in (params["axis1"], params["axis2"]) else next(rest)
                 for i in range(len(shape) + 1))


def beyond_float32_integers(case) -> bool:
    """True when an integer product of the operands may leave the integers float32 holds
    exactly (2**24): the bound of every term times the number of terms."""
    ints = [v for v in case.values if v.dtype.kind in "iub"]
    if len(ints) < 2:
        return False
    bound = 1
    for v in ints:
        bound *= int(np.abs(v.astype(object)).max()) if v.size else 0
    return bound * max(v.size for v in ints) >= 2**24


# PyTensor's Numba Dot (and the BLAS-free contractions built on it) casts integer operands
# to floats (float32 below 32 bits) and the result back, where numpy multiplies exactly and
# wraps in the integer dtype.
NUMBA_INT_DOT = {
    "backends": NUMBA_BACKENDS, "dtypes": tuple(d for d in INTS if d[-1] != "8"),
    "blame": Blame.PYTENSOR, "cause": "numba-int-dot-float", "match": "exact match required",
    "when": beyond_float32_integers,
    "reason": "Numba's integer dot computes in floating point: products beyond 2**24 (or "
              "2**53) round, and results the dtype cannot hold do not wrap",
}
NUMBA_INT_BATCHED = {
    "backends": NUMBA_BACKENDS, "dtypes": ("bool", *INTS), "blame": Blame.PYTENSOR,
    "cause": "numba-int-batched-dot", "match": "raised TypingError",
    "reason": "Numba cannot type BatchedDot (and the batched matmul it stands for) of integers",
}


ROWS = [
    Row("dot", pt.dot, dot_operands([(1, 1), (2, 1), (1, 2), (2, 2)]), ALL, tol=DOT_TOL,
        compose=_products((1, 2), PRODUCT_DTYPES))
    .xfail(**ort_empty_contraction(fixed(np.ones((2, 0)), np.ones((0, 2)))))
    .xfail(**NUMBA_INT_DOT, example=lambda d: fixed([[np.iinfo(d).max]], [[513]])(d)),
    # pt.dot with a 0-d operand is an elementwise Mul (any values): the 0-d operand first.
    Row("dot_0d", pt.dot, dot_operands([(0, 0), (0, 2), (1, 0)]), ALL, tol=DOT_TOL,
        compose=Composes(domains=(ANY, ANY), accepts=lambda a: a == (), pairs=lambda a, b: True,
                         shape=lambda shapes, params: shapes[1]))
    .xfail(**elemwise_dtype(True, True, dtypes=("bool",),
                            what="add and mul of 0-d bools (Python's sum and * from an int)"),
           when=lambda case: all(v.ndim == 0 for v in case.values)),
    Row("dot_mixed", pt.dot, dot_operands([(2, 2), (1, 2)], mixed=True), ALL, tol=DOT_TOL)
    .xfail(**{**NUMBA_INT_DOT, "dtypes": ("int16", "int32")},
           example=lambda d: Case((np.asarray([[np.iinfo(d).max]], d),
                                   np.asarray([[65535 if d == "int16" else 4194305]], "u" + d)),
                                  ((None, None), (None, None)))),
    Row("dot_op", Dot(), dot_operands([(2, 2)]), ALL, tol=DOT_TOL,
        compose=_products((2,), PRODUCT_DTYPES))
    .xfail(**ort_empty_contraction(fixed(np.ones((2, 0)), np.ones((0, 2)))))
    .xfail(**NUMBA_INT_DOT, example=lambda d: fixed([[np.iinfo(d).max]], [[513]])(d)),
    Row("dot_nonfinite", pt.dot, dot_operands([(2, 2)], values="any"), FLOATS, tol=DOT_TOL)
    .xfail(backends=("onnx-reference",), dtypes=("float32", "float64"), blame=Blame.ONNX_REFERENCE,
           cause="numpy-dot-scal-zero",
           reason="MatMul is numpy.dot, which scales by a 1x1 operand with BLAS scal: "
                  "0 times nan or inf gives 0",
           match="out.*=0\\.0 but pytensor-py=(nan|-?inf)", when=zero_scales_nonfinite,
           example=fixed([[0.0]], [[np.nan, np.inf]]))
    .xfail(backends=("pytensor-c-opt",), dtypes=("float32", "float64"), blame=Blame.PYTENSOR,
           reason="the default rewrites make the product a BLAS Dot22, which gives 0 for a 1x1 "
                  "0 times nan or inf",
           match="out.*=0\\.0 but pytensor-py=(nan|-?inf)", when=zero_scales_nonfinite,
           example=fixed([[0.0]], [[np.nan, np.inf]])),
    # Graphs give it matrices only, so the batch-broadcast record cannot show.
    Row("matmul", pt.matmul, matmul_operands, ALL, tol=DOT_TOL,
        compose=_products((2,), PRODUCT_DTYPES))
    .xfail(backends=ORT_BACKENDS, blame=Blame.ONNXRUNTIME,
           reason="MatMul mis-broadcasts a length-1 batch axis when a matrix is empty",
           match="shape=|cannot broadcast", when=empty_batch_broadcast,
           example=fixed(np.ones((1, 0, 0)), np.ones((0, 0, 0)),
                         static=((1, None, None), (None, None, None))),
           versions="onnxruntime<1.32")
    .xfail(backends=("pytensor-c-opt", "onnxruntime-rewritten"), blame=Blame.PYTENSOR,
           reason="the default rewrites reshape an empty batch with a -1 for a Dot22, which "
                  "numpy and ONNX Reshape refuse (cannot reshape array of size 0)",
           match="raised (ValueError: cannot reshape array of size 0|Fail: .*Reshape node)",
           when=lambda case: any(v.size == 0 for v in case.values),
           example=fixed(np.ones((1, 0, 0)), np.ones((0, 0, 0)),
                         static=((1, None, None), (None, None, None))))
    .xfail(backends=("onnxruntime-rewritten",), dtypes=UINT_WIDE, blame=Blame.ONNXRUNTIME,
           reason="MatMul on uint32/uint64 operands of an empty batch fails a type check in "
                  "the kernel (Tensor::MutableData<int or long>)",
           match="MutableData", when=lambda case: any(v.size == 0 for v in case.values),
           example=fixed(np.ones((1, 1, 0)), np.ones((0, 0, 0)),
                         static=((1, None, None), (None, None, None))))
    .xfail(**ort_empty_contraction(fixed(np.ones((1, 2, 0)), np.ones((1, 0, 2)))))
    .xfail(backends=("pytensor-numba-opt",), blame=Blame.PYTENSOR, cause="numba-int-batched-dot",
           dtypes=("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
           reason="the NUMBA mode makes an integer matmul with unknown batch axes a BatchedDot, "
                  "which Numba cannot type", match="raised TypingError",
           example=fixed(np.ones((1, 1, 1)), np.ones((1, 1, 1))))
    .xfail(backends=("pytensor-numba-opt",), blame=Blame.PYTENSOR, cause="numba-matmul-batched",
           reason="the NUMBA mode reshapes an empty broadcast batch with -1, which Numba "
                  "refuses (total size of new array must be unchanged)",
           match="raised ValueError: total size of new array",
           when=lambda case: any(v.size == 0 for v in case.values),
           example=fixed(np.ones((1, 1, 1, 0)), np.ones((1, 1, 0, 1)),
                         static=((None, 1, None, None), (1, None, None, None))))
    .xfail(**NUMBA_INT_DOT,
           example=lambda d: fixed([[[[np.iinfo(d).max]]]], [[[[513]]]],
                                   static=((None, 1, None, None), (1, None, None, None)))(d))
    .xfail(backends=("pytensor-jax-opt",), blame=Blame.PYTENSOR,
           cause="jax-reshape-minus-one-empty",
           reason="the JAX mode reshapes an empty broadcast batch with a -1 for a dot, and "
                  "jnp.reshape divides by the zero size (ZeroDivisionError)",
           match="raised ZeroDivisionError",
           when=lambda case: any(v.size == 0 for v in case.values),
           example=fixed(np.ones((1, 0, 0)), np.ones((0, 0, 0)),
                         static=((1, None, None), (None, None, None)))),
    Row("batched_dot", BatchedDot(), blas_operands("batched"), ALL, tol=DOT_TOL)
    .xfail(**ort_empty_contraction(fixed(np.ones((1, 2, 0)), np.ones((1, 0, 2)))))
    .xfail(**NUMBA_INT_BATCHED, example=fixed(np.ones((1, 1, 1)), np.ones((1, 1, 1)))),
    # Graph operands are finite, so the record (nan and inf) cannot show.
    Row("dot22", _dot22, blas_operands("dot22"), FLOATS, tol=DOT_TOL,
        compose=_products((2,), FLOAT_PAIR))
    .xfail(backends=ORT_BACKENDS, dtypes=("float32", "float64"), blame=Blame.PYTENSOR,
           reason="Dot22 uses np.dot, whose BLAS call drops 0 * nan and 0 * inf (gives 0)",
           match=r"=nan but pytensor-py=", when=has_nonfinite(0, 1),
           example=fixed([[0.0]], [[math.nan, math.nan]])),
    Row("dot22scalar", _dot22scalar, blas_operands("dot22scalar"), FLOATS,
        tol=rounding(MAX_K + 1, MAX_K)),
    Row("gemm", gemm_no_inplace, blas_operands("gemm"), FLOATS, tol=SCALED_TOL),
    Row("gemv", gemv_no_inplace, blas_operands("gemv"), ALL, tol=SCALED_TOL)
    .xfail(**ort_empty_contraction(fixed(np.ones(2), 1, np.ones((2, 0)), np.ones(0), 1), 2, 3)),
    Row("ger", ger, blas_operands("ger"), ("float32", "float64"), tol=rounding(3, 2),
        signed_zeros=no_term_underflows),
    Row("einsum", lambda *xs, subscripts: pt.einsum(subscripts, *xs), einsum_operands, ALL,
        tol=rounding(9, 9))
    .xfail(**{**ort_empty_contraction(fixed(np.ones((2, 0)), np.ones((0, 2)),
                                            params=[("subscripts", "ij,jk->ik")])),
              "when": lambda case: "," in dict(case.params)["subscripts"]
              and any(v.size == 0 for v in case.values)})
    .xfail(backends=ORT_BACKENDS, dtypes=("int64", "uint64"), blame=Blame.ONNXRUNTIME,
           reason="ReduceSum on int64 (uint64 runs on it) loses low bits of values beyond 2**53 "
                  "(inlined ii->i, ij->)",
           match="exact match required",
           when=lambda case: "," not in dict(case.params)["subscripts"],
           example=fixed([[2**63 - 2]], params=[("subscripts", "ii->i")]),
           cause="reducesum-int64-low-bits")
    .xfail(**NUMBA_INT_DOT,
           example=lambda d: fixed([[np.iinfo(d).max]], [[513]],
                                   params=[("subscripts", "ij,ij->")])(d))
    .xfail(**{**NUMBA_INT_BATCHED, "dtypes": ("uint32",)},
           example=fixed(np.ones((1, 1, 1)), np.ones((1, 1, 1)),
                         params=[("subscripts", "bij,bjk->bik")]))
    .xfail(**dtype_differs(fixed([[1]], params=[("subscripts", "ii->i")]),
                           ("bool", "int8", "int16", "int32", "uint8", "uint16", "uint32",
                            "float16", "float32"), cause="jax-careduce-dtype",
                           reason="JAX returns a reduction in its accumulator's dtype (an operand "
                                  "reduced over no axis as it is), not the graph's")),
    Row("extract_diag", lambda x, offset, axis1, axis2: pt.diagonal(x, offset, axis1, axis2),
        diagonal_operands, ALL,
        compose=Composes(domains=(ANY,), params=_diagonal_params, shape=_diagonal_shape,
                         accepts=lambda shape: len(shape) >= 2)),
    Row("alloc_diag", lambda v, offset, axis1, axis2: ptb.alloc_diag(v, offset, axis1, axis2),
        alloc_diagonal_operands, ALL,
        compose=Composes(domains=(ANY,), params=_alloc_diagonal_params,
                         shape=_alloc_diagonal_shape, accepts=lambda shape: 1 <= len(shape) <= 2))
    .xfail(**dtype_differs(fixed([1], params=[("offset", 0), ("axis1", 0), ("axis2", 1)]),
                           ("int8", "int16", "int32", "uint8", "uint16", "uint32", "uint64",
                            "float16", "float32"), cause="jax-constant-dtype",
                           reason="JAX gets a 0-d constant as a Python scalar, so a fill of one "
                                  "takes JAX's default dtype (int64, float64)")),
    Row("det", pt.linalg.det, square_operands, ALL, tol=DET_TOL)
    .xfail(backends=ONNX_BACKENDS, dtypes=SMALL_INTS, blame=Blame.PYTENSOR,
           reason="Det's output type is float32 for small ints but perform returns float64",
           match="dtype=float32, but pytensor-py gives float64", example=fixed([[1, 0], [0, 1]]),
           versions="pytensor>=3")
    .xfail(**no_float16("Det"))
    .xfail(backends=NUMBA_BACKENDS, dtypes=("bool", "int8", "int16", "uint8", "uint16"),
           blame=Blame.PYTENSOR, cause="numba-det-narrow-int",
           reason="Numba's det of a bool or 8/16-bit integer matrix returns float32 where "
                  "PyTensor declares float64", match=r"out\.dtype=float32",
           versions="pytensor>=3", example=fixed([[1]]))
    .xfail(backends=JAX_BACKENDS, dtypes=SMALL_INTS, blame=Blame.PYTENSOR,
           reason="Det's output type is float32 for small ints but perform returns float64",
           match="dtype=float32, but pytensor-py gives float64", example=fixed([[1, 0], [0, 1]]),
           versions="pytensor>=3")
    .xfail(**jax_linalg_dtype(fixed([[1]]), ("int32", "uint32")))
    .xfail(**on_jax(no_float16("Det"))),
    Row("det_matrices", pt.linalg.det, square_systems(("general", "singular")), FLOATS,
        tol=DET_RTOL).xfail(**no_float16("Det")).xfail(**on_jax(no_float16("Det"))),
    Row("det_illcond", pt.linalg.det, square_systems(("general_ill",), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(DET_RTOL)),
    Row("slogdet", lambda a: Blockwise(SLogDet())(a), square_systems(("general", "singular")),
        FLOATS, tol=SOLVE_TOL).xfail(**no_float16("SLogDet"))
    .xfail(**on_jax(no_float16("SLogDet"))),
    Row("slogdet_illcond", lambda a: Blockwise(SLogDet())(a),
        square_systems(("general_ill",), batches=[()]), FLOAT_PAIR, tol=ill_tol(SOLVE_TOL)),
    Row("cholesky", lambda a, lower: pt.linalg.cholesky(a, lower=lower),
        square_systems(("spd", "not_pd", "singular_pd", "nonfinite_pd"), params=(LOWER,)),
        FLOATS, tol=SOLVE_TOL).xfail(**zero_batch(False, lower=True))
    .xfail(**on_jax(zero_batch(False, lower=True), dtypes=FLOAT_PAIR)).xfail(**JAX_CHOLESKY_NAN),
    Row("cholesky_illcond", lambda a, lower: pt.linalg.cholesky(a, lower=lower),
        square_systems(("spd_ill",), params=(LOWER,), batches=[()]), FLOAT_PAIR,
        tol=ill_tol(SOLVE_TOL)),
    Row("solve_triangular", _solve_triangular,
        square_systems(("triangular", "triangular_singular"), rhs="tri", params=TRIANGULAR),
        FLOATS, tol=SOLVE_TOL)
    .xfail(**zero_batch(True, lower=True, trans=0, unit_diagonal=False))
    .xfail(**on_jax(zero_batch(True, lower=True, trans=0, unit_diagonal=False)))
    .xfail(**jax_linalg_dtype(fixed([[1.0]], [1.0], params=[("lower", True), ("trans", 0),
                                                           ("unit_diagonal", False)]),
                              ("float16",))),
    Row("solve_triangular_illcond", _solve_triangular,
        square_systems(("triangular_ill",), rhs="tri", params=TRIANGULAR, batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL)),
    Row("cho_solve", lambda c, b, lower: pt.linalg.cho_solve((c, lower), b),
        square_systems(("factor",), rhs="cho", params=(LOWER,)), FLOATS, tol=SOLVE_TOL)
    .xfail(**zero_batch(True, lower=True)).xfail(**on_jax(zero_batch(True, lower=True)))
    .xfail(**jax_linalg_dtype(fixed([[1.0]], [1.0], params=[("lower", True)]), ("float16",))),
    Row("cho_solve_illcond", lambda c, b, lower: pt.linalg.cho_solve((c, lower), b),
        square_systems(("factor_ill",), rhs="cho", params=(LOWER,), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL)),
    Row("solve", _solve("gen"), square_systems(("general", "singular"), rhs="gen",
                                               params=(LOWER,)), FLOATS, tol=SOLVE_TOL)
    .xfail(**solve_singular_result(SINGULAR_VECTOR_RHS))
    .xfail(**zero_batch(True, lower=False))
    .xfail(**on_jax(zero_batch(True, lower=False), dtypes=FLOAT_PAIR)),
    Row("solve_illcond", _solve("gen"),
        square_systems(("general_ill",), rhs="gen", params=(LOWER,), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL)),
    Row("solve_sym", _solve("sym"), square_systems(("symmetric", "symmetric_singular"),
                                                   rhs="sym", params=(LOWER,)),
        FLOATS, tol=SOLVE_TOL)
    .xfail(**solve_singular_result(SINGULAR_VECTOR_RHS))
    .xfail(**zero_batch(True, lower=False))
    .xfail(**on_jax(zero_batch(True, lower=False), dtypes=FLOAT_PAIR)),
    Row("solve_pos", _solve("pos"), square_systems(("spd", "not_pd", "singular_pd"), rhs="sym",
                                                   params=(LOWER,)), FLOATS, tol=SOLVE_TOL)
    .xfail(**solve_singular_result(fixed([[1.0, 0.0], [0.0, -1.0]], [1.0, 1.0],
                                        params=[("lower", False)])))
    .xfail(**zero_batch(True, lower=False))
    .xfail(backends=(*ONNX_BACKENDS, "pytensor-c-opt", *NUMBA_BACKENDS), blame=Blame.PYTENSOR,
           reason="scipy.linalg.solve divides a 1x1 system without checking that a > 0 "
                  "(assume_a='pos'); larger ones not positive definite give nan",
           match="=nan but pytensor-py=", when=lambda case: case.values[0].shape[-1] == 1,
           example=fixed([[-2.0]], [1.0], params=[("lower", False)]))
    .xfail(backends=("pytensor-c-opt", "pytensor-numba-opt", "onnxruntime-rewritten"),
           blame=Blame.PYTENSOR, versions="pytensor>=3", cause="psd-solve-cholesky-lower",
           reason="the default rewrites solve assume_a='pos', lower=False through a Cholesky "
                  "of a's lower triangle, not the upper one asked for",
           when=reads_other_triangle,
           example=fixed([[2.0, 1.0], [5.0, 2.0]], [[1.0], [1.0]], params=[("lower", False)]))
    .xfail(**on_jax(zero_batch(True, lower=False), dtypes=FLOAT_PAIR)),
    Row("inv", pt.linalg.inv, square_systems(("general", "singular")), FLOATS, tol=SOLVE_TOL)
    .xfail(**INV_SINGULAR).xfail(**no_float16("MatrixInverse"))
    .xfail(backends=JAX_BACKENDS, dtypes=FLOAT_PAIR, blame=Blame.PYTENSOR,
           cause="jax-inv-singular",
           reason="JAX's inv of a singular matrix returns inf or nan where numpy raises "
                  "LinAlgError", match="but pytensor-py raised LinAlgError",
           example=fixed([[0.0]])),
    Row("inv_illcond", pt.linalg.inv, square_systems(("general_ill",), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL, power=2)),
]
