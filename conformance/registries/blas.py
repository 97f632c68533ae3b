"""Products: dot and its BLAS forms (Dot22, Gemm, Gemv, Ger), batched and Blockwise matmul,
einsum.

Float operands are drawn from [-1, 1] plus special values (0, -0.0, +-1, nan, +-inf).
Every implementation (BLAS, MLAS, numpy, the ONNX reference) sums in its own order, and each
result is within ``roundings * u * sum(|terms|)`` of the exact value (u: the dtype's unit
roundoff); two may then differ by twice that. The tolerance is that bound with the case's
own sum of |terms| (``registry.summed``, ``Tol.terms_ulps``): a tiny product is judged to
its own digits, and only a cancellation widens what an element may be off by.
nan/inf propagate through a sum of products the same way in any order. Integer results are
exact and drawn over the full range, so wrapping products are exercised. Zero signs are
judged wherever the order of summation cannot change them (``sum_signs_determined``).
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.blas import (
    BatchedDot,
    _dot22,
    _dot22scalar,
    gemm_no_inplace,
    gemv_no_inplace,
)
from pytensor.tensor.math import Dot

from conformance.jax_records import dtype_differs, elemwise_dtype
from conformance.registry import (
    C_BACKENDS,
    NUMBA_BACKENDS,
    ORT_BACKENDS,
    REWRITTEN_ONNX,
    Blame,
    Case,
    Composes,
    Row,
    summed,
)
from conformance.strategies import ANY, Domain, dtypes, fixed
from conformance.strategies.products import (
    MAX_K,
    MIXED_GRID,
    blas_operands,
    dot_operands,
    drawn_from,
    einsum_operands,
    matmul_operands,
)
from converter import compat

FLOATS, ALL = dtypes.FLOATS, dtypes.ALL
# Grid domains: the values the factories draw (floats in [-1, 1], with nan and inf where
# the operand takes them), so that the tolerances' rounding bound holds on the grid too.
FIN, NAN, NONFIN = drawn_from("finite"), drawn_from("nan"), drawn_from("any")


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


def _terms(subscripts: str, *operands) -> tuple[np.ndarray, bool]:
    """The products of an einsum-style contraction left unsummed (in long double, whose wider
    exponent shows an underflow and whose 64-bit significand holds a float32 product
    exactly), the summed indices flattened onto a last axis, and whether anything is summed."""
    ins, out = subscripts.split("->")
    summed = "".join(sorted(set(ins) - set(out) - set(",.")))
    spec = f"{ins}->{out}{summed}"
    wide = [np.asarray(v, dtype=np.longdouble) for v in operands]
    with np.errstate(invalid="ignore", over="ignore"):
        # np.einsum adds each product to a +0.0, so it gives magnitudes and signs apart
        signs = np.einsum(spec, *(np.where(np.signbit(w), -1, 1) for w in wide))
        terms = np.copysign(np.einsum(spec, *map(abs, wide)), signs)
    lead = terms.ndim - len(summed)
    return terms.reshape(*terms.shape[:lead], math.prod(terms.shape[lead:])), bool(summed)


def sum_signs_determined(dtype, subscripts: str, *operands, scale=None) -> bool:
    """Whether every zero of ``einsum(subscripts, *operands)``, times ``scale`` if given, has
    one sign in every order of summation. Round to nearest gives +0.0 for an exact
    cancellation and for +0.0 + -0.0, so a zero sum is +0.0 whatever the order, except:

    - all terms are -0.0: an accumulator started at +0.0 (MLAS, BLAS kernels) gives +0.0, one
      that starts from the first term or scales by a 1x1 operand (numpy.dot's BLAS scal
      path) gives -0.0;
    - a term underflows: rounded before the add it is a zero that +0.0 absorbs, added by a
      fused multiply-add it rounds the sum to a zero of its own sign (as ``ger``); likewise
      a nonzero exact sum below the smallest normal (products rounded apart cancel to +0.0,
      a fused multiply-add rounds the residual);
    - with ``scale``: ``scale == 0`` times a sum whose rounding error may reach across zero
      (its sign is then the order's), or a nonzero ``scale`` whose product with the sum may
      underflow.
    """
    if np.dtype(dtype).kind != "f":
        return True
    info = np.finfo(dtype)
    terms, sums = _terms(subscripts, *operands)
    if not sums:  # one rounding per element: its sign is the exact value's
        return True
    with np.errstate(invalid="ignore", over="ignore"):
        if ((terms != 0) & (abs(terms) < info.tiny)).any():
            return False
        k = terms.shape[-1]
        zero = (terms == 0).all(-1)
        if k and (zero & np.signbit(terms).all(-1)).any():
            return False
        exact = terms.sum(-1)
        if ((exact != 0) & (abs(exact) < info.tiny)).any():
            return False
        if scale is None:
            return True
        err = 2 * k * float(info.eps) * abs(terms).sum(-1)
        if float(scale) == 0:
            return not (~zero & (abs(exact) <= err)).any()
        reach = abs(np.longdouble(scale)) * (abs(exact) + err)
        return not ((reach > 0) & (reach < info.tiny)).any()


def _dot_subscripts(x, y) -> str:
    """The contraction ``pt.dot`` makes of 1-d/2-d ``x`` and ``y``."""
    return f"{'ik'[2 - x.ndim:]},{'km'[:y.ndim]}->{'i'[:x.ndim - 1]}{'m'[:y.ndim - 1]}"


def dot_signs(case) -> bool:
    """``sum_signs_determined`` for dot's operands (x, y)."""
    x, y = case.values
    return sum_signs_determined(np.result_type(x, y), _dot_subscripts(x, y), x, y)


def contraction_signs(subscripts: str, operands=(0, 1), scale=None):
    """``sum_signs_determined`` for the operands at ``operands``, times the one at ``scale``."""

    def when(case) -> bool:
        xs = [case.values[i] for i in operands]
        return sum_signs_determined(xs[0].dtype, subscripts, *xs,
                                    scale=None if scale is None else case.values[scale])

    return when


def einsum_signs(case) -> bool:
    return sum_signs_determined(case.values[0].dtype, dict(case.params)["subscripts"],
                                *case.values)


def gemm_skips_product(case) -> bool:
    """Gemm with ``a == 0`` or an empty contraction, where the C code's result (b*z, or 0
    for ``b == 0``) has a zero of the other sign than perform's (``a*dot``, or ``b*z +
    a*dot`` for ``b != 0``)."""
    z, a, x, y, b = case.values
    if a != 0 and x.shape[1] != 0:
        return False
    with np.errstate(all="ignore"):
        prod = a * np.dot(x, y)
        perform = prod if b == 0 else b * z + prod
        c_code = np.zeros_like(z) if b == 0 else b * z
    both = (perform == 0) & (c_code == 0)
    return bool((np.signbit(perform) != np.signbit(c_code))[both].any())


def negative_zero_diagonal(case) -> bool:
    """einsum 'ii->i' of a matrix with -0.0 on its diagonal."""
    if dict(case.params)["subscripts"] != "ii->i":
        return False
    diagonal = np.diagonal(case.values[0])
    return bool(np.signbit(diagonal[diagonal == 0]).any())


def negative_zero_outer(case) -> bool:
    """einsum 'i,j->ij' with a product that is, or rounds to, -0.0."""
    if dict(case.params)["subscripts"] != "i,j->ij":
        return False
    with np.errstate(all="ignore"):
        outer = np.outer(*case.values)
    return bool(np.signbit(outer[outer == 0]).any())


def numpy_presum_flips_zero(case) -> bool:
    """numpy's optimized einsum (the reference evaluator's) gives a zero the other sign than
    the sum of the exact products has (cause numpy-einsum-presum-zero-sign)."""
    subscripts = dict(case.params)["subscripts"]
    terms, sums = _terms(subscripts, *case.values)
    with np.errstate(all="ignore"):
        fast = np.asarray(np.einsum(subscripts, *case.values, optimize=True))
        exact = terms.sum(-1) if sums else terms[..., 0]
    zero = (fast == 0) & (exact == 0)
    return bool((np.signbit(fast) != np.signbit(exact))[zero].any())


DOT_TOL = summed(MAX_K)  # k products summed: k roundings, counting the last


SCALED_TOL = summed(MAX_K + 2)  # a*dot + b*z: two more


SMALL_INTS = ("bool", "int8", "int16", "uint8", "uint16")


INTS = dtypes.INTS


# Gemm's (z, a, x, y, b), Gemv's (y, alpha, A, x, beta): as blas_operands draws them
BLAS_GRID = (NONFIN, NAN, FIN, FIN, NONFIN)


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

EINSUM_INT_BATCHED = {
    **NUMBA_INT_BATCHED, "when": lambda case: dict(case.params)["subscripts"][0] == "b",
    "example": fixed(np.ones((1, 1, 1)), np.ones((1, 1, 1)),
                     params=[("subscripts", "bij,bjk->bik")]),
}


ROWS = [
    Row("dot", pt.dot, dot_operands([(1, 1), (2, 1), (1, 2), (2, 2)]), ALL, tol=DOT_TOL,
        signed_zeros=dot_signs, grid=(FIN, FIN),
        compose=_products((1, 2), PRODUCT_DTYPES))
    .xfail(**ort_empty_contraction(fixed(np.ones((2, 0)), np.ones((0, 2)))))
    .xfail(**NUMBA_INT_DOT, example=lambda d: fixed([[np.iinfo(d).max]], [[513]])(d)),
    # pt.dot with a 0-d operand is an elementwise Mul (any values): the 0-d operand first.
    Row("dot_0d", pt.dot, dot_operands([(0, 0), (0, 2), (1, 0)]), ALL, tol=DOT_TOL,
        grid=(FIN, FIN),
        compose=Composes(domains=(ANY, ANY), accepts=lambda a: a == (), pairs=lambda a, b: True,
                         shape=lambda shapes, params: shapes[1]))
    .xfail(**elemwise_dtype(True, True, dtypes=("bool",),
                            what="add and mul of 0-d bools (Python's sum and * from an int)"),
           when=lambda case: all(v.ndim == 0 for v in case.values)),
    Row("dot_mixed", pt.dot, dot_operands([(2, 2), (1, 2)], mixed=True), ALL, tol=DOT_TOL,
        signed_zeros=dot_signs, grid=MIXED_GRID)
    .xfail(**{**NUMBA_INT_DOT, "dtypes": ("int16", "int32")},
           example=lambda d: Case((np.asarray([[np.iinfo(d).max]], d),
                                   np.asarray([[65535 if d == "int16" else 4194305]], "u" + d)),
                                  ((None, None), (None, None)))),
    Row("dot_op", Dot(), dot_operands([(2, 2)]), ALL, tol=DOT_TOL, signed_zeros=dot_signs,
        grid=(FIN, FIN),
        compose=_products((2,), PRODUCT_DTYPES))
    .xfail(**ort_empty_contraction(fixed(np.ones((2, 0)), np.ones((0, 2)))))
    .xfail(**NUMBA_INT_DOT, example=lambda d: fixed([[np.iinfo(d).max]], [[513]])(d)),
    Row("dot_nonfinite", pt.dot, dot_operands([(2, 2)], values="any"), FLOATS, tol=DOT_TOL,
        signed_zeros=dot_signs, grid=(NONFIN, NONFIN))
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
        signed_zeros=contraction_signs("...ik,...km->...im"), grid=(FIN, FIN),
        compose=_products((2,), PRODUCT_DTYPES))
    .xfail(backends=ORT_BACKENDS, blame=Blame.ONNXRUNTIME,
           reason="MatMul mis-broadcasts a length-1 batch axis when a matrix is empty",
           match="shape=|cannot broadcast", when=empty_batch_broadcast,
           example=fixed(np.ones((1, 0, 0)), np.ones((0, 0, 0)),
                         static=((1, None, None), (None, None, None))),
           versions="onnxruntime<1.32")
    # ONNX Reshape takes that -1 (onnxruntime-rewritten runs the same graph right)
    .xfail(backends=("pytensor-c-opt",), blame=Blame.PYTENSOR,
           reason="the default rewrites reshape an empty batch with a -1 for a Dot22, which "
                  "numpy refuses (cannot reshape array of size 0)",
           match="raised ValueError: cannot reshape array of size 0",
           when=lambda case: any(v.size == 0 for v in case.values),
           example=fixed(np.ones((1, 0, 0)), np.ones((0, 0, 0)),
                         static=((1, None, None), (None, None, None))))
    .xfail(backends=REWRITTEN_ONNX, dtypes=UINT_WIDE, blame=Blame.ONNXRUNTIME,
           reason="MatMul on uint32/uint64 operands of an empty batch fails a type check in "
                  "the kernel (Tensor::MutableData<int or long>)",
           match="MutableData", when=lambda case: any(v.size == 0 for v in case.values),
           example=fixed(np.ones((1, 1, 0)), np.ones((0, 0, 0)),
                         static=((1, None, None), (None, None, None))))
    .xfail(**ort_empty_contraction(fixed(np.ones((1, 2, 0)), np.ones((1, 0, 2)))))
    .xfail(backends=REWRITTEN_ONNX, blame=Blame.PYTENSOR, cause="matmul-empty-batch-dot",
           dtypes=tuple(d for d in ALL if d not in UINT_WIDE),
           reason="the default and ONNX modes' rewrites make a matmul of a length-1 batch "
                  "against an empty one a Dot whose result is reshaped to the empty batch, "
                  "which ONNX Reshape refuses as numpy does (cannot reshape)",
           match="running Reshape node", when=lambda case: any(v.size == 0 for v in case.values),
           example=fixed(np.ones((1, 2, 0)), np.ones((0, 0, 2)),
                         static=((1, None, None), (None, None, None))))
    .xfail(backends=("pytensor-numba-opt",), blame=Blame.PYTENSOR, cause="numba-int-batched-dot",
           dtypes=("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                   "uint64"),
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
    Row("batched_dot", BatchedDot(), blas_operands("batched"), ALL, tol=DOT_TOL,
        signed_zeros=contraction_signs("bik,bkm->bim"), grid=(FIN, FIN))
    .xfail(**ort_empty_contraction(fixed(np.ones((1, 2, 0)), np.ones((1, 0, 2)))))
    .xfail(**NUMBA_INT_BATCHED, example=fixed(np.ones((1, 1, 1)), np.ones((1, 1, 1)))),
    # Graph operands are finite, so the record (nan and inf) cannot show.
    Row("dot22", _dot22, blas_operands("dot22"), FLOATS, tol=DOT_TOL, signed_zeros=dot_signs,
        grid=(NONFIN, NONFIN),
        compose=_products((2,), ("float32", "float64")))
    .xfail(backends=ORT_BACKENDS, dtypes=("float32", "float64"), blame=Blame.PYTENSOR,
           reason="Dot22 uses np.dot, whose BLAS call drops 0 * nan and 0 * inf (gives 0)",
           match=r"=nan but pytensor-py=", when=has_nonfinite(0, 1),
           example=fixed([[0.0]], [[math.nan, math.nan]])),
    Row("dot22scalar", _dot22scalar, blas_operands("dot22scalar"), FLOATS,
        tol=summed(MAX_K + 1), signed_zeros=contraction_signs("ik,km->im", scale=2),
        grid=(FIN, FIN, NAN)),
    Row("gemm", gemm_no_inplace, blas_operands("gemm"), FLOATS, tol=SCALED_TOL,
        signed_zeros=contraction_signs("ik,km->im", (2, 3), scale=1), grid=BLAS_GRID)
    .xfail(backends=C_BACKENDS, dtypes=("float32", "float64"), blame=Blame.PYTENSOR,
           reason="Gemm's C code skips the product when a == 0 or the contraction is empty "
                  "(b*z, or 0 for b == 0) where perform adds a*dot, a zero of either sign",
           match=r"=-?0\.0 but pytensor-py=-?0\.0 \(sign of zero", when=gemm_skips_product,
           example=fixed([[0.0]], 0.0, [[1.0]], [[1.0]], -1.0)),
    Row("gemv", gemv_no_inplace, blas_operands("gemv"), ALL, tol=SCALED_TOL,
        signed_zeros=contraction_signs("ik,k->i", (2, 3), scale=1), grid=BLAS_GRID)
    .xfail(**ort_empty_contraction(fixed(np.ones(2), 1, np.ones((2, 0)), np.ones(0), 1), 2, 3)),
    # PyTensor < 3.3 only: 3.3 has no Ger (its rewrites build Dot and Add instead)
    *[Row("ger", ger, blas_operands("ger"), ("float32", "float64"), tol=summed(3),
          signed_zeros=no_term_underflows, grid=(NONFIN,) * 4)
      for ger in compat.present("ger")],
    Row("einsum", lambda *xs, subscripts: pt.einsum(subscripts, *xs), einsum_operands, ALL,
        tol=summed(9), signed_zeros=einsum_signs, grid=(FIN,))  # 'ii->i' has one operand
    .xfail(backends=("onnxruntime", "onnxruntime-noopt", "onnx-reference"), dtypes=FLOATS,
           blame=Blame.PYTENSOR,
           reason="einsum 'ii->i' sums Switch(eye, x, 0) over an axis, so a -0.0 on the "
                  "diagonal comes out +0.0 (numpy.einsum and ONNX Einsum keep it)",
           match=r"=-0\.0 but pytensor-py=0\.0 \(sign of zero", when=negative_zero_diagonal,
           example=fixed([[-0.0]], params=[("subscripts", "ii->i")]))
    .xfail(backends=("onnx-reference",), dtypes=FLOATS, blame=Blame.PYTENSOR,
           reason="einsum 'i,j->ij' is a Dot over a length-1 axis, whose sum starts at +0.0, "
                  "so a -0.0 product comes out +0.0 (the ONNX reference multiplies)",
           match=r"=-0\.0 but pytensor-py=0\.0 \(sign of zero", when=negative_zero_outer,
           example=fixed([0.0], [-1.0], params=[("subscripts", "i,j->ij")]))
    .xfail(backends=("pytensor-c-opt", *REWRITTEN_ONNX), dtypes=("float16",),
           blame=Blame.PYTENSOR, versions="pytensor>=3.3",
           reason="3.3 rewrites float16 einsum 'i,j->ij' into a product that keeps a -0.0 "
                  "which the unrewritten Dot over a length-1 axis sums from +0.0",
           match=r"=-0\.0 but pytensor-py=0\.0 \(sign of zero", when=negative_zero_outer,
           example=fixed([0.0], [-1.0], params=[("subscripts", "i,j->ij")]))
    .xfail(backends=("onnx-reference",), dtypes=FLOATS, blame=Blame.ONNX_REFERENCE,
           versions="numpy>=2.4", cause="numpy-einsum-presum-zero-sign",
           reason="Einsum is numpy.einsum(optimize=True), which sums a contracted length-1 "
                  "axis before multiplying: (-0.0)*(-1.0) comes out -0.0",
           match=r"=-0\.0 but pytensor-py=0\.0 \(sign of zero", when=numpy_presum_flips_zero,
           example=fixed([[-0.0]], [[-1.0]], params=[("subscripts", "ij,ij->")]))
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
    # the BatchedDot comes from the rewrites; unrewritten, only int32 (before 3.3) fails
    .xfail(**{**EINSUM_INT_BATCHED, "backends": ("pytensor-numba-opt",)})
    .xfail(**{**EINSUM_INT_BATCHED, "backends": ("pytensor-numba",), "dtypes": ("int32",),
              "versions": "pytensor<3.3"})
    .xfail(**dtype_differs(fixed([[1]], params=[("subscripts", "ii->i")]),
                           ("bool", "int8", "int16", "int32", "uint8", "uint16", "uint32",
                            "float16", "float32"), cause="jax-careduce-dtype",
                           reason="JAX returns a reduction in its accumulator's dtype (an operand "
                                  "reduced over no axis as it is), not the graph's")),
]
