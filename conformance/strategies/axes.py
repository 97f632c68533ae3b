"""Case factories of the reduction rows: one operand and an ``axis`` drawn from a few
layouts, with values any (``any_values``) or exact under any order of summation
(``exact_sums``)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.registry import Case
from conformance.strategies import ANY, Domain, arrays, elements

#: (rank, axis) layouts: 0-d, a negative axis, one axis, all axes, an axis tuple. Few, as
#: each costs a C compile.
LAYOUTS = ((0, None), (1, -1), (2, 0), (2, None), (3, (0, 2)))
SCAN_LAYOUTS = ((0, None), (1, 0), (2, None), (2, -1), (3, 1))


class WholeOrNonfinite(Domain):
    """Whole numbers within the bounds, and nan and ±inf besides (a plain Domain's bounds
    leave the infinities out)."""

    def contains(self, value, dtype: np.dtype) -> bool:
        return (dtype.kind == "f" and math.isinf(value)) or super().contains(value, dtype)


def exact_values(bound: float, int_bound: float | None = None):
    """dtype -> Domain: the values ``exact_sums`` draws (the special-value grid's domain)."""

    def domain(dtype) -> Domain:
        if np.dtype(dtype).kind != "f":
            return ANY if int_bound is None else Domain(-int_bound, int_bound)
        return WholeOrNonfinite(-bound, bound, integral=True)

    return domain


def exact_sums(bound: float, int_bound: float | None = None):
    """dtype -> (shape -> array strategy): floats are whole numbers within ``bound`` plus
    nan, ±inf and -0.0, so sums and products are exact in any order (reduction order is
    implementation-defined); integers take any value (wrapping is order-free) or, with
    ``int_bound``, values whose float64 sums stay exact."""

    def for_dtype(dtype):
        if np.dtype(dtype).kind != "f":
            return lambda shape: arrays(dtype, shape, exact_values(bound, int_bound)(dtype))
        specials = st.sampled_from([math.nan, math.inf, -math.inf, -0.0])
        small = elements(dtype, Domain(-bound, bound, integral=True, allow_nan=False,
                                           allow_inf=False))
        return lambda shape: hnp.arrays(np.dtype(dtype), shape,
                                        elements=st.one_of(specials, small, small, small))

    return for_dtype


def any_values(dtype):
    return lambda shape: arrays(dtype, shape, ANY)


def axis_cases(values=any_values, layouts=LAYOUTS, *, max_side: int = 4):
    """One operand drawn by ``values(dtype)(shape)`` and an ``axis`` from ``layouts``."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            rank, axis = draw(st.sampled_from(layouts))
            shape = tuple(draw(st.lists(st.integers(0, max_side), min_size=rank,
                                        max_size=rank)))
            value = draw(values(dtype)(shape))
            return Case((value,), ((None,) * rank,), (("axis", axis),))

        return cases()

    return factory
