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
from hypothesis.extra import numpy as hnp
from pytensor.scalar import upcast
from pytensor.tensor import basic as ptb
from pytensor.tensor.blas import (
    BatchedDot,
    _dot22,
    _dot22scalar,
    gemm_no_inplace,
    gemv_no_inplace,
    ger,
)
from pytensor.tensor.math import Dot

from conformance.registry import ORT_BACKENDS, Blame, Case, Row, Tol, no_ort_kernel
from conformance.strategies import ANY, dtypes, elements, fixed

ONNX_BACKENDS = (*ORT_BACKENDS, "onnx-reference")
FLOATS, ALL = dtypes.FLOATS, dtypes.ALL
MAX_K = 4  # longest contraction drawn
FINITE_SPECIALS = [0.0, -0.0, 1.0, -1.0]
NONFINITE = [math.nan, math.inf, -math.inf]

# The second operand of a mixed-dtype product (PyTensor upcasts like numpy). Partners are
# integers, so the result is float only where the row's dtype is float (the tolerance is
# the row dtype's) or where both are 64-bit ints (float64 from small ints: exact).
PARTNER = {"bool": "int8", "int8": "uint8", "int16": "uint16", "int32": "uint32",
           "int64": "uint64", "uint8": "int8", "uint16": "int8", "uint32": "int8",
           "uint64": "int8", "float16": "int8", "float32": "int16", "float64": "int32"}


def rounding(roundings: int, magnitude: float) -> dict[str, Tol]:
    """Per-float-dtype tolerance for two results that are each within ``roundings * u *
    magnitude`` of the exact value, ``magnitude`` bounding the sum of |terms|."""
    return {d: Tol(atol=2 * roundings * magnitude * float(np.finfo(d).eps) / 2) for d in FLOATS}


def operand_elements(dtype: str, bounded: bool, values: str = "finite"):
    """Integers over the full range, or in [-1, 1] when the product is float. Floats in
    [-1, 1] plus specials: ``values`` is "finite", "nan" (for a scale whose product is
    computed: inf times a rounded 0 or tiny value is order-dependent) or "any"."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        finite = hnp.from_dtype(dt, min_value=-1.0, max_value=1.0, allow_nan=False,
                                allow_subnormal=True)
        specials = {"finite": FINITE_SPECIALS, "nan": [*FINITE_SPECIALS, math.nan],
                    "any": [*FINITE_SPECIALS, *NONFINITE]}[values]
        return st.one_of(st.sampled_from(specials), finite, finite, finite)
    if bounded and dt != np.bool_:
        return st.integers(0 if dt.kind == "u" else -1, 1)
    return elements(dtype, ANY)


def _case(draw, specs, params=()):
    """``specs``: (dtype, shape, static[, values]) per operand; see operand_elements."""
    specs = [(*s, "finite") if len(s) == 3 else s for s in specs]
    bounded = np.dtype(upcast(*[s[0] for s in specs])).kind == "f"
    values = tuple(draw(hnp.arrays(np.dtype(d), shape, elements=operand_elements(d, bounded, v)))
                   for d, shape, _, v in specs)
    return Case(values, tuple(tuple(s[2]) for s in specs), tuple(params))


def _dims(draw, n, hi=MAX_K):
    return draw(st.lists(st.integers(0, hi), min_size=n, max_size=n))


def dot_operands(ranks, *, mixed=False, values="finite"):
    """Two operands of the given (rank_x, rank_y) layouts, sharing the contracted length;
    with ``mixed`` the second has the dtype's PARTNER dtype."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            rx, ry = draw(st.sampled_from(ranks))
            n, k, m = _dims(draw, 3)
            sx = {0: (), 1: (k,), 2: (n, k)}[rx]
            sy = {0: (), 1: (k,), 2: (k, m)}[ry]
            other = PARTNER[dtype] if mixed else dtype
            return _case(draw, [(dtype, sx, (None,) * rx, values),
                                (other, sy, (None,) * ry, values)])

        return cases()

    return factory


MATMUL_LAYOUTS = [  # (static x, static y): batch axes equal, broadcast, or missing
    ((None, None, None), (None, None, None)),
    ((1, None, None), (None, None, None)),
    ((None, None, None), (None, None)),
    ((None, 1, None, None), (1, None, None, None)),
]


def matmul_operands(dtype: str):
    @st.composite
    def cases(draw):
        sx, sy = draw(st.sampled_from(MATMUL_LAYOUTS))
        n, k, m = _dims(draw, 3)
        rank = max(len(sx), len(sy)) - 2
        batch = _dims(draw, rank, hi=3)

        def shape(static, core):
            own = static[:-2]
            sizes = [1 if s == 1 else b for s, b in zip(own, batch[rank - len(own):], strict=True)]
            return (*sizes, *core)

        return _case(draw, [(dtype, shape(sx, (n, k)), sx), (dtype, shape(sy, (k, m)), sy)])

    return cases()


def blas_operands(kind: str):
    """Operands in the argument order of Gemm (z, a, x, y, b), Gemv (y, alpha, A, x, beta),
    Ger (A, alpha, x, y), Dot22 (x, y), Dot22Scalar (x, y, a) or BatchedDot (x, y)."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            n, k, m = _dims(draw, 3)
            b = draw(st.integers(0, 3))
            shapes = {  # (shape, values) per operand: scaled-away operands may be nan/inf
                "gemm": [((n, m), "any"), ((), "nan"), ((n, k), "finite"), ((k, m), "finite"),
                         ((), "any")],
                "gemv": [((n,), "any"), ((), "nan"), ((n, k), "finite"), ((k,), "finite"),
                         ((), "any")],
                "ger": [((n, m), "any"), ((), "any"), ((n,), "any"), ((m,), "any")],
                "dot22": [((n, k), "any"), ((k, m), "any")],
                "dot22scalar": [((n, k), "finite"), ((k, m), "finite"), ((), "nan")],
                "batched": [((b, n, k), "finite"), ((b, k, m), "finite")],
            }[kind]
            return _case(draw, [(dtype, s, (None,) * len(s), v) for s, v in shapes])

        return cases()

    return factory


EINSUMS = ("ij,jk->ik", "bij,bjk->bik", "i,j->ij", "ij,ij->", "ii->i", "ij->")


def einsum_operands(dtype: str):
    @st.composite
    def cases(draw):
        subscripts = draw(st.sampled_from(EINSUMS))
        letters = sorted(set(subscripts) - set(",->"))
        size = dict(zip(letters, _dims(draw, len(letters), hi=3), strict=True))
        specs = [(dtype, tuple(size[c] for c in term), (None,) * len(term))
                 for term in subscripts.split("->")[0].split(",")]
        return _case(draw, specs, [("subscripts", subscripts)])

    return cases()


DIAGONALS = {  # rank -> (offset, axis1, axis2) choices; axis1 > axis2 flips the offset
    2: [(0, 0, 1), (1, 0, 1), (-2, 0, 1)],
    3: [(1, 0, 2), (-1, 2, 1)],
}


def diagonal_operands(dtype: str):
    @st.composite
    def cases(draw):
        rank = draw(st.sampled_from(sorted(DIAGONALS)))
        offset, a1, a2 = draw(st.sampled_from(DIAGONALS[rank]))
        shape = tuple(_dims(draw, rank))
        return _case(draw, [(dtype, shape, (None,) * rank)],
                     [("offset", offset), ("axis1", a1), ("axis2", a2)])

    return cases()


ALLOC_DIAGONALS = [(1, 0, 0, 1), (1, 2, 0, 1), (1, -1, 0, 1), (2, 0, 0, 2), (2, 1, 1, 2)]


def alloc_diagonal_operands(dtype: str):
    """(rank of v, offset, axis1, axis2) from ALLOC_DIAGONALS."""

    @st.composite
    def cases(draw):
        rank, offset, a1, a2 = draw(st.sampled_from(ALLOC_DIAGONALS))
        shape = tuple(_dims(draw, rank))
        return _case(draw, [(dtype, shape, (None,) * rank)],
                     [("offset", offset), ("axis1", a1), ("axis2", a2)])

    return cases()


def square_operands(dtype: str):
    @st.composite
    def cases(draw):
        n, b = _dims(draw, 2, hi=3)
        shape = draw(st.sampled_from([(n, n), (b, n, n)]))
        return _case(draw, [(dtype, shape, (None,) * len(shape))])

    return cases()


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


DOT_TOL = rounding(MAX_K, MAX_K)
SCALED_TOL = rounding(MAX_K + 2, MAX_K + 1)  # a*dot + b*z with |a|, |b|, |z| <= 1
DET_TOL = rounding(27, 6)  # n <= 3: LU's n**3 roundings, |det| <= 3! for entries in [-1, 1]
SMALL_INTS = ("bool", "int8", "int16", "uint8", "uint16")
WIDE_DET = ("int32", "int64", "uint32", "uint64", "float64")
UINT_WIDE = ("uint32", "uint64")


def ort_empty_contraction(example, i=0, j=1):
    return {"backends": ORT_BACKENDS, "dtypes": UINT_WIDE, "blame": Blame.ONNXRUNTIME,
            "reason": "MatMul on uint32/uint64 fails when the contracted axis has length 0",
            "match": "IsPrimitiveDataType", "when": empty_contraction(i, j), "example": example}


ROWS = [
    Row("dot", pt.dot, dot_operands([(1, 1), (2, 1), (1, 2), (2, 2)]), ALL, tol=DOT_TOL)
    .xfail(**ort_empty_contraction(fixed(np.ones((2, 0)), np.ones((0, 2))))),
    Row("dot_0d", pt.dot, dot_operands([(0, 0), (0, 2), (1, 0)]), ALL, tol=DOT_TOL),
    Row("dot_mixed", pt.dot, dot_operands([(2, 2), (1, 2)], mixed=True), ALL, tol=DOT_TOL),
    Row("dot_op", Dot(), dot_operands([(2, 2)]), ALL, tol=DOT_TOL)
    .xfail(**ort_empty_contraction(fixed(np.ones((2, 0)), np.ones((0, 2))))),
    Row("dot_nonfinite", pt.dot, dot_operands([(2, 2)], values="any"), FLOATS, tol=DOT_TOL),
    Row("matmul", pt.matmul, matmul_operands, ALL, tol=DOT_TOL)
    .xfail(backends=ORT_BACKENDS, blame=Blame.ONNXRUNTIME,
           reason="MatMul mis-broadcasts a length-1 batch axis when a matrix is empty",
           match="shape=|cannot broadcast", when=empty_batch_broadcast,
           example=fixed(np.ones((1, 0, 0)), np.ones((0, 0, 0)),
                         static=((1, None, None), (None, None, None))),
           versions="onnxruntime<1.32")
    .xfail(**ort_empty_contraction(fixed(np.ones((1, 2, 0)), np.ones((1, 0, 2))))),
    Row("batched_dot", BatchedDot(), blas_operands("batched"), ALL, tol=DOT_TOL)
    .xfail(**ort_empty_contraction(fixed(np.ones((1, 2, 0)), np.ones((1, 0, 2))))),
    Row("dot22", _dot22, blas_operands("dot22"), FLOATS, tol=DOT_TOL)
    .xfail(backends=ORT_BACKENDS, dtypes=("float32", "float64"), blame=Blame.PYTENSOR,
           reason="Dot22 uses np.dot, whose BLAS call drops 0 * nan and 0 * inf (gives 0)",
           match=r"=nan but pytensor-py=", when=has_nonfinite(0, 1),
           example=fixed([[0.0]], [[math.nan, math.nan]])),
    Row("dot22scalar", _dot22scalar, blas_operands("dot22scalar"), FLOATS,
        tol=rounding(MAX_K + 1, MAX_K)),
    Row("gemm", gemm_no_inplace, blas_operands("gemm"), FLOATS, tol=SCALED_TOL),
    Row("gemv", gemv_no_inplace, blas_operands("gemv"), ALL, tol=SCALED_TOL)
    .xfail(**ort_empty_contraction(fixed(np.ones(2), 1, np.ones((2, 0)), np.ones(0), 1), 2, 3)),
    Row("ger", ger, blas_operands("ger"), ("float32", "float64"), tol=rounding(3, 2)),
    Row("einsum", lambda *xs, subscripts: pt.einsum(subscripts, *xs), einsum_operands, ALL,
        tol=rounding(9, 9))
    .xfail(**{**ort_empty_contraction(fixed(np.ones((2, 0)), np.ones((0, 2)),
                                            params=[("subscripts", "ij,jk->ik")])),
              "when": lambda case: "," in dict(case.params)["subscripts"]
              and any(v.size == 0 for v in case.values)})
    .xfail(backends=ORT_BACKENDS, dtypes=("int64",), blame=Blame.ONNXRUNTIME,
           reason="ReduceSum on int64 loses low bits of values near 2**63 (inlined ii->i, ij->)",
           match="exact match required",
           when=lambda case: "," not in dict(case.params)["subscripts"],
           example=fixed([[2**63 - 2]], params=[("subscripts", "ii->i")]))
    .xfail(backends=ORT_BACKENDS, dtypes=("bool", "int16", "uint8", "uint16", "uint32", "uint64"),
           blame=Blame.ONNXRUNTIME, match="NOT_IMPLEMENTED",
           reason="no CPU Where or ReduceSum kernel for these dtypes (inlined ii->i and ij->)",
           when=lambda case: "," not in dict(case.params)["subscripts"],
           example=fixed(np.ones((2, 2)), params=[("subscripts", "ii->i")])),
    Row("extract_diag", lambda x, offset, axis1, axis2: pt.diagonal(x, offset, axis1, axis2),
        diagonal_operands, ALL),
    Row("alloc_diag", lambda v, offset, axis1, axis2: ptb.alloc_diag(v, offset, axis1, axis2),
        alloc_diagonal_operands, ALL),
    Row("det", pt.linalg.det, square_operands, ALL, tol=DET_TOL)
    .xfail(**no_ort_kernel("Det", WIDE_DET, fixed([[1, 2], [3, 4]])))
    .xfail(backends=ORT_BACKENDS, dtypes=SMALL_INTS, blame=Blame.ONNXRUNTIME,
           reason="PyTensor 2.38 types det of small ints as float64 (3.x: float32), and ONNX "
                  "Runtime has no CPU kernel for Det on float64",
           match="NOT_IMPLEMENTED", example=fixed([[1, 2], [3, 4]]), versions="pytensor<3")
    .xfail(backends=ONNX_BACKENDS, dtypes=SMALL_INTS, blame=Blame.PYTENSOR,
           reason="Det's output type is float32 for small ints but perform returns float64",
           match="dtype=float32, but pytensor-py gives float64", example=fixed([[1, 0], [0, 1]]),
           versions="pytensor>=3")
    .xfail(backends=ONNX_BACKENDS, dtypes=("float16",), blame=Blame.PYTENSOR,
           reason="Det accepts float16 but perform raises (numpy.linalg has no float16)",
           match="pytensor-py raised TypeError", example=fixed([[1.0, 2.0], [3.0, 4.0]])),
]
