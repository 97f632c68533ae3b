"""Operands for products: dot, matmul, the BLAS ops, einsum, diagonals and square matrices.

Float operands are drawn from [-1, 1] plus special values (0, -0.0, +-1, nan, +-inf) so that the
rounding error of a sum of products is bounded a priori (see conformance.registries.blas for
the tolerances that bound gives); integers over their full range, or in [-1, 1] when the
product is a float.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from pytensor.scalar import upcast

from conformance.registry import Case
from conformance.strategies.values import ANY, Domain, elements

MAX_K = 4  # longest contraction drawn
FINITE_SPECIALS = [0.0, -0.0, 1.0, -1.0]
NONFINITE = [math.nan, math.inf, -math.inf]

# The second operand of a mixed-dtype product (PyTensor upcasts like numpy). Partners are
# integers, so the result is float only where the row's dtype is float (the tolerance is
# the row dtype's) or where both are 64-bit ints (float64 from small ints: exact).
PARTNER = {"bool": "int8", "int8": "uint8", "int16": "uint16", "int32": "uint32",
           "int64": "uint64", "uint8": "int8", "uint16": "int8", "uint32": "int8",
           "uint64": "int8", "float16": "int8", "float32": "int16", "float64": "int32"}


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


@dataclass(frozen=True)
class Unit(Domain):
    """[-1, 1], with +-inf where ``allow_inf`` (a bounded Domain holds none): the floats
    operand_elements draws, as the domain of a row's special-value grid."""

    min_value: float | None = -1.0
    max_value: float | None = 1.0

    def contains(self, value, dtype) -> bool:
        if dtype.kind == "f" and math.isinf(value):
            return self.allow_inf
        return super().contains(value, dtype)


def drawn_from(values: str = "finite", bounded: bool = False):
    """The grid domain (dtype -> Domain) of the values ``operand_elements(dtype, bounded,
    values)`` draws, so that the grid keeps the rounding bound the tolerances rest on."""
    floats = {"finite": Unit(allow_nan=False, allow_inf=False), "nan": Unit(allow_inf=False),
              "any": Unit()}[values]

    def domain(dtype: str) -> Domain:
        kind = np.dtype(dtype).kind
        if kind == "f":
            return floats
        return Domain(0 if kind == "u" else -1, 1) if bounded and kind in "iu" else ANY

    return domain


def _float_product(*dtypes) -> bool:
    return np.dtype(upcast(*dtypes)).kind == "f"


# dot_mixed's operands: the row's dtype, then its PARTNER. int8 partners rows whose product
# is float (float16, uint64) and rows whose product is an integer (bool, uint8-uint32): a
# domain sees the operand's dtype only, so it takes the float products' bound, [-1, 1].
MIXED_GRID = (
    lambda d: drawn_from(bounded=_float_product(d, PARTNER[d]))(d),
    lambda p: drawn_from(bounded=any(_float_product(r, q) for r, q in PARTNER.items()
                                     if q == p))(p),
)


def _case(draw, specs, params=()):
    """``specs``: (dtype, shape, static[, values]) per operand; see operand_elements."""
    specs = [(*s, "finite") if len(s) == 3 else s for s in specs]
    bounded = np.dtype(upcast(*[s[0] for s in specs])).kind == "f"
    values = tuple(draw(hnp.arrays(np.dtype(d), shape, elements=operand_elements(d, bounded, v)))
                   for d, shape, _, v in specs)
    return Case(values, tuple(tuple(s[2]) for s in specs), tuple(params))


def _dims(draw, n, hi=MAX_K):
    return draw(st.lists(st.integers(0, hi), min_size=n, max_size=n))


def _sizes(draw, n, hi=MAX_K):
    """Like _dims, shrinking to 2: a product row's first draw, its canonical case when it
    has one layout, then holds elements for the special-value grid to fill (an empty one
    holds none), and a contraction of two terms."""
    return draw(st.lists(st.sampled_from([2, 0, 1, *range(3, hi + 1)]), min_size=n,
                         max_size=n))


def dot_operands(ranks, *, mixed=False, values="finite"):
    """Two operands of the given (rank_x, rank_y) layouts, sharing the contracted length;
    with ``mixed`` the second has the dtype's PARTNER dtype."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            rx, ry = draw(st.sampled_from(ranks))
            n, k, m = _sizes(draw, 3)
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
        n, k, m = _sizes(draw, 3)
        rank = max(len(sx), len(sy)) - 2
        batch = _sizes(draw, rank, hi=3)

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
            n, k, m = _sizes(draw, 3)
            b = _sizes(draw, 1, hi=3)[0]
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
        size = dict(zip(letters, _sizes(draw, len(letters), hi=3), strict=True))
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
    """One square matrix or a batch of them; integers in [-1, 1] too, as det is a float."""

    @st.composite
    def cases(draw):
        n, b = _dims(draw, 2, hi=3)
        shape = draw(st.sampled_from([(n, n), (b, n, n)]))
        value = draw(hnp.arrays(np.dtype(dtype), shape, elements=operand_elements(dtype, True)))
        return Case((value,), ((None,) * len(shape),))

    return cases()
