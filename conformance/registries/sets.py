"""Sets and searches: repeat, unique, nonzero and searchsorted, whose cases draw from small
pools of values so that duplicates, ties and zeros are common."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytensor.tensor as pt
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.jax_records import dtype_differs
from conformance.registries.creation import ALLOC_NEGATIVE_ZERO
from conformance.registries.misc import case_of, example, has_axes
from conformance.registry import (
    JAX_BACKENDS,
    NUMBA_BACKENDS,
    ONNX_BACKENDS,
    ORT_BACKENDS,
    REWRITTEN_ONNX,
    Blame,
    Composes,
    Row,
)
from conformance.strategies import ANY, array_shapes, arrays, dtypes, elements
from conformance.strategies.values import special_values

ALL = dtypes.ALL


@st.composite
def pooled(draw, dtype, shape, *, with_zero=False):
    """An array whose elements come from a pool of at most three values (plus 0), so that
    duplicates, ties and zeros are common, and special values (nan, -0.0, extremes) are
    drawn on purpose; shrinks toward one repeated value."""
    specials = st.sampled_from(special_values(dtype))
    pool = draw(st.lists(st.one_of(specials, elements(dtype)), min_size=1, max_size=3))
    if with_zero:
        pool.append(False if np.dtype(dtype) == np.bool_ else 0)
    return draw(hnp.arrays(np.dtype(dtype), shape, elements=st.sampled_from(pool)))


# -- repeat -------------------------------------------------------------------------

REPEAT_LAYOUTS = ((1, 0), (2, 0), (2, -1), (3, 1))  # (rank, axis)


def repeats(*, flat: bool = False, scalar: bool = False):
    """x and int64 counts in 0..3: one per element along ``axis`` (or one for all)."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            if flat:
                shape, axis = draw(array_shapes(max_rank=2)), None
            else:
                rank, axis = draw(st.sampled_from(REPEAT_LAYOUTS))
                shape = draw(array_shapes(min_rank=rank, max_rank=rank))
            x = draw(arrays(dtype, shape))
            length = int(np.prod(shape)) if axis is None else shape[axis]
            n = 1 if scalar or (length and draw(st.integers(0, 4)) == 0) else length
            counts = draw(hnp.arrays(np.int64, () if scalar else (n,), elements=st.integers(0, 3)))
            return case_of([x, counts], params=[("axis", axis)])

        return cases()

    return factory


def negative_count(case) -> bool:
    return bool((case.values[1] < 0).any())


# Counts in 0..3, one per element along the axis (or of all, for axis None). A length-1
# count vector is static length 1, which pt.repeat squeezes into the scalar count's graph,
# so those keep to axes of another length. (A scalar count of 0 on a static length-1 axis
# meets an ONNX Runtime optimizer bug, a record of random_graph.)
@st.composite
def repeat_params(draw, shape: tuple, *, flat: bool = False, scalar: bool = False):
    if scalar:
        return (("r", draw(st.integers(0, 3))),
                ("axis", draw(st.integers(-len(shape), len(shape) - 1))))
    axis = None if flat else draw(
        st.sampled_from([a for a in range(-len(shape), len(shape)) if shape[a] != 1]))
    n = math.prod(shape) if flat else shape[axis]
    return (("r", tuple(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))),
            ("axis", axis))


def repeated_shape(shapes, params) -> tuple:
    (shape,), r, axis = shapes, params["r"], params["axis"]
    if axis is None:
        shape, axis = (math.prod(shape),), 0
    axis %= len(shape)
    n = sum(r) if isinstance(r, tuple) else shape[axis] * r
    return (*shape[:axis], n, *shape[axis + 1:])


def _repeats(params, accepts, dtypes_=None) -> Composes:
    return Composes(domains=(ANY,), params=params, shape=repeated_shape, accepts=accepts,
                    dtypes=dtypes_)


# -- unique, nonzero, searchsorted --------------------------------------------------


def uniques(*, axis_rows: bool = False):
    """Arrays with many duplicates; with ``axis_rows`` a matrix and an axis (0 or 1),
    otherwise rank 0-2 and either no extra output or all three."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            if axis_rows:
                shape = draw(array_shapes(min_rank=2, max_rank=2))
                flags, axis = (True, True, True), draw(st.sampled_from((0, 1)))
            else:
                shape = draw(array_shapes(max_rank=2))
                flags, axis = draw(st.sampled_from(((False,) * 3, (True,) * 3))), None
            x = draw(pooled(dtype, shape))
            return case_of([x], params=[("flags", flags), ("axis", axis)])

        return cases()

    return factory


def has_nan(case) -> bool:
    return bool(np.isnan(case.values[0]).any())


def unique(x, flags, axis):
    out = pt.unique(x, *flags, axis=axis)
    return list(out) if isinstance(out, list | tuple) else out


def nonzeros(dtype: str):
    """Arrays of rank 1-3 (Nonzero refuses 0-d) with many zeros."""
    shapes = array_shapes(min_rank=1, max_rank=3)
    return shapes.flatmap(lambda s: pooled(dtype, s, with_zero=True)).map(lambda x: case_of([x]))


def searches(*, with_sorter: bool = False):
    """A vector x (sorted, or with its argsort as ``sorter``) and queries v of rank 0-2
    sharing x's values, for side left and right."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            n = draw(st.integers(0, 5))
            x = draw(pooled(dtype, (n,)))
            v = draw(pooled(dtype, draw(array_shapes(max_rank=2))))
            if n:  # many queries hit x's values exactly
                v = np.where(draw(hnp.arrays(np.bool_, v.shape)), v, np.resize(x, v.shape))
            side = ("side", draw(st.sampled_from(("left", "right"))))
            if with_sorter:
                return case_of([x, v, np.argsort(x, kind="stable")], params=[side])
            return case_of([np.sort(x), v], params=[side])

        return cases()

    return factory


ROWS = [
    Row("repeat", lambda x, r, axis: pt.repeat(x, r, axis=axis), repeats(), ALL, grid=(ANY,),
        compose=_repeats(repeat_params, lambda shape: any(n != 1 for n in shape), ALL))
    .xfail(backends=ONNX_BACKENDS, blame=Blame.CONVERTER, when=negative_count,
           reason="semantic gap: numpy.repeat raises on a negative count, ONNX cannot raise",
           match="pytensor-py raised ValueError",
           example=example([1, 2], [-1, 2], dtypes_=(None, "int64"), params=[("axis", 0)])),
    Row("repeat_flat", lambda x, r, axis: pt.repeat(x, r, axis=axis), repeats(flat=True), ALL,
        grid=(ANY,),
        compose=_repeats(functools.partial(repeat_params, flat=True),
                         lambda shape: math.prod(shape) != 1)),
    # A scalar count is built from broadcast_to and reshape, which pt.repeat refuses on uint64.
    # a scalar count repeats through Alloc (x[:, None] allocated to (n, r), reshaped)
    Row("repeat_scalar", lambda x, r, axis: pt.repeat(x, r, axis=axis),
        repeats(scalar=True), tuple(d for d in ALL if d != "uint64"), grid=(ANY,),
        compose=_repeats(functools.partial(repeat_params, scalar=True), has_axes))
    .xfail(**ALLOC_NEGATIVE_ZERO,
           example=example([-0.0], 1, dtypes_=(None, "int64"), params=[("axis", 0)])),
    Row("unique", unique, uniques(), ALL, grid=(ANY,))
    .xfail(backends=ORT_BACKENDS, dtypes=dtypes.FLOATS, blame=Blame.ONNXRUNTIME, when=has_nan,
           reason="ONNX Runtime's Unique mishandles nan (it drops other values); numpy.unique "
                  "keeps them and one nan, sorted last",
           example=example([np.nan, 1, np.nan], params=[("flags", (True,) * 3), ("axis", None)]))
    .xfail(backends=("pytensor-c-opt", *REWRITTEN_ONNX), dtypes=("bool",),
           blame=Blame.PYTENSOR, match="raised AssertionError: \\(Unique", versions="pytensor<3.3",
           reason="a default rewrite of a bool Unique with its extra outputs fails an assertion "
                  "on the float64 it makes",
           example=example(False, params=[("flags", (True,) * 3), ("axis", None)]))
    .xfail(backends=("pytensor-numba-opt",), dtypes=("bool",), blame=Blame.PYTENSOR,
           cause="numba-unique-bool", match="AssertionError", versions="pytensor<3.3",
           reason="the NUMBA mode's Unique of bools with indices, inverse and counts fails an "
                  "assertion (a float64 output where bool belongs)",
           example=example(False, params=(("flags", (True, True, True)), ("axis", None))))
    .xfail(backends=JAX_BACKENDS, blame=Blame.PYTENSOR, cause="jax-unique-lax-numpy",
           reason="PyTensor's JAX Unique calls jnp.lax_numpy._unique1d, which jax no longer has",
           match="raised AttributeError: module 'jax.numpy' has no attribute 'lax_numpy'",
           when=lambda case: dict(case.params)["axis"] is None,
           example=example(False, params=(("flags", (False,) * 3), ("axis", None))))
    .xfail(backends=("pytensor-jax-opt",), blame=Blame.PYTENSOR, cause="jax-mode-unique-0d",
           reason="the JAX mode's Unique of a 0-d operand with indices, inverse and counts "
                  "fails an assertion (a float64 output type)",
           match=r"pytensor-jax-opt raised AssertionError: \(Unique",
           when=lambda case: case.values[0].ndim == 0,
           example=example(0, params=(("flags", (True,) * 3), ("axis", None)))),
    Row("unique_axis", unique, uniques(axis_rows=True), ALL, grid=(ANY,))
    .xfail(backends=ORT_BACKENDS, dtypes=dtypes.FLOATS, blame=Blame.ONNXRUNTIME, when=has_nan,
           reason="ONNX Runtime's Unique along an axis merges slices holding nan; numpy.unique "
                  "keeps them apart",
           example=example([[np.nan], [np.nan]], params=[("flags", (True,) * 3), ("axis", 0)])),
    Row("nonzero", lambda x: pt.nonzero(x), nonzeros, ALL, grid=(ANY,)),
    Row("flatnonzero", pt.flatnonzero, nonzeros, ALL, grid=(ANY,)),
    # x must stay sorted (or match its sorter): the queries v alone take the grid's values
    Row("searchsorted", lambda x, v, side: pt.searchsorted(x, v, side=side), searches(), ALL,
        grid=(None, ANY))
    .xfail(**dtype_differs(example([1, 2], 1, params=(("side", "left"),)), ALL,
                           cause="jax-searchsorted-dtype",
                           reason="JAX returns jnp.searchsorted's int32 indices, where the graph "
                                  "declares int64")),
    Row("searchsorted_sorter", lambda x, v, s, side: pt.searchsorted(x, v, side=side, sorter=s),
        searches(with_sorter=True), ALL, grid=(None, ANY))
    .xfail(backends=NUMBA_BACKENDS, blame=Blame.PYTENSOR, cause="numba-searchsorted-sorter",
           reason="Numba's SearchsortedOp with a sorter raises TypeError (can't unbox array)",
           match="TypeError: can't unbox array",
           example=example([1, 2], 1, [0, 1], dtypes_=(None, None, "int64"),
                           params=(("side", "left"),)))
    .xfail(backends=JAX_BACKENDS, blame=Blame.PYTENSOR, cause="jax-searchsorted-sorter",
           reason="PyTensor's JAX searchsorted passes the sorter as its third positional "
                  "argument, side, which jit takes as static and cannot hash",
           match="raised ValueError: Non-hashable static arguments",
           example=example([1, 2], 1, [0, 1], dtypes_=(None, None, "int64"),
                           params=(("side", "left"),))),
]
