"""Shape-manipulating ops: DimShuffle, Reshape, Shape, Shape_i, SpecifyShape, Join, Split,
MakeVector and the tensor/scalar boundary.

Symbolic shape arguments are graph inputs (0-d or 1-d int64) whose values each strategy
draws consistently with the data, since PyTensor raises on a mismatch and ONNX cannot.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from hypothesis import strategies as st
from pytensor.tensor.basic import MakeVector
from pytensor.tensor.shape import Shape_i

from conformance.jax_records import dtype_differs, elemwise_dtype, without_jax
from conformance.registry import (
    C_BACKENDS,
    JAX_BACKENDS,
    NOT_REFERENCE,
    NUMBA_BACKENDS,
    ORT_BACKENDS,
    Blame,
    Case,
    Composes,
    Row,
    fixed_in,
)
from conformance.strategies import ANY, array_shapes, arrays, dtypes, fixed, layouts


def _i64(value) -> np.ndarray:
    return np.asarray(value, dtype=np.int64)


def _free(ndim: int) -> tuple[None, ...]:
    return (None,) * ndim


def dimshuffles(dtype: str):
    """An input and a DimShuffle pattern: dropping length-1 axes, permuting, adding axes."""

    @st.composite
    def cases(draw):
        shape = draw(array_shapes(max_rank=3))
        static = tuple(1 if s == 1 and draw(st.booleans()) else None for s in shape)
        kept = [i for i, s in enumerate(static) if s != 1 or draw(st.booleans())]
        order = [kept[i] for i in draw(layouts.permutations(len(kept)))]
        for _ in range(draw(st.integers(0, 2))):
            order.insert(draw(st.integers(0, len(order))), "x")
        value = draw(arrays(dtype, shape, ANY))
        return Case((value,), (static,), (("order", tuple(order)),))

    return cases()


@st.composite
def _shapes_of_size(draw, size: int, ndim: int, *, allow_minus_one: bool):
    """A shape of ``ndim`` entries whose product is ``size``, maybe with one entry -1."""
    if ndim == 0:
        return ()
    if size == 0:
        dims = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
        zero = draw(st.integers(0, ndim - 1))
        dims[zero] = 0
        others = [i for i in range(ndim) if i != zero]
        if allow_minus_one and others and draw(st.booleans()):
            dims[draw(st.sampled_from(others))] = -1  # ambiguous: PyTensor raises
        return tuple(dims)
    dims, rest = [], size
    for _ in range(ndim - 1):
        dims.append(draw(st.sampled_from([d for d in range(1, rest + 1) if rest % d == 0])))
        rest //= dims[-1]
    dims.append(rest)
    dims = draw(st.permutations(dims))
    if allow_minus_one and draw(st.booleans()):
        dims[draw(st.integers(0, ndim - 1))] = -1
    return tuple(dims)


def reshapes(dtype: str):
    """Data of rank 0 to 3 and a consistent target shape of length 0 to 3 given as a graph
    input (an int64 vector), with -1 in about half the cases; ``ndim`` is the target length."""

    @st.composite
    def cases(draw):
        rank, ndim = draw(st.integers(0, 3)), draw(st.integers(0, 3))
        shape = (1,) * rank if ndim == 0 else draw(array_shapes(min_rank=rank, max_rank=rank))
        target = draw(_shapes_of_size(math.prod(shape), ndim, allow_minus_one=True))
        value = draw(arrays(dtype, shape, ANY))
        return Case((value, _i64(target)), (_free(rank), (None,)), (("ndim", ndim),))

    return cases()


def _ambiguous_reshape(case) -> bool:
    """True when -1 must be inferred from a size-0 input (numpy refuses to guess)."""
    x, target = case.values
    return x.size == 0 and -1 in target


def _reshape_zeros_by_minus_one(dtype: str) -> Case:
    return Case((np.zeros(0, dtype=dtype), _i64([0, -1])), ((None,), (None,)), (("ndim", 2),))


def constant_reshapes(dtype: str):
    """Data of rank 0 to 3 and a constant target (static params) of its size, maybe with one
    -1 (not for a size-0 input, where PyTensor raises)."""

    @st.composite
    def cases(draw):
        shape = draw(array_shapes(max_rank=3))
        size = math.prod(shape)
        ndim = draw(st.integers(0 if size == 1 else 1, 3))
        target = draw(_shapes_of_size(size, ndim, allow_minus_one=size > 0))
        value = draw(arrays(dtype, shape, ANY))
        return Case((value,), (_free(len(shape)),), (("target", target),))

    return cases()


def ranks(*, min_rank: int = 0, max_rank: int = 3):
    """One input of any shape and rank."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            value = draw(arrays(dtype, draw(array_shapes(min_rank=min_rank, max_rank=max_rank)),
                                ANY))
            return Case((value,), (_free(value.ndim),))

        return cases()

    return factory


def shape_entries(dtype: str):
    """An input of rank 1 to 3 and the index of one of its axes (``Shape_i``)."""

    @st.composite
    def cases(draw):
        rank = draw(st.integers(1, 3))
        i = draw(layouts.axes(rank, allow_negative=False))
        value = draw(arrays(dtype, draw(array_shapes(min_rank=rank, max_rank=rank)), ANY))
        return Case((value,), (_free(rank),), (("i", i),))

    return cases()


def specified_shapes(dtype: str):
    """An input of rank 1 to 3, a ``specify_shape`` pattern (per axis "n", a symbolic length:
    a 0-d int64 graph input; None; or a constant length), and the symbolic lengths it needs
    (its true lengths: PyTensor raises on a mismatch, ONNX cannot check)."""

    @st.composite
    def cases(draw):
        shape = draw(array_shapes(min_rank=1, max_rank=3))
        pattern = tuple(draw(st.sampled_from(("n", None, n))) for n in shape)
        value = draw(arrays(dtype, shape, ANY))
        lengths = [_i64(s) for s, p in zip(shape, pattern, strict=True) if p == "n"]
        return Case((value, *lengths), (_free(len(shape)),) + ((),) * len(lengths),
                    (("pattern", pattern),))

    return cases()


def _specify_shape(x, *lengths, pattern):
    given = iter(lengths)
    return pt.specify_shape(x, tuple(next(given) if p == "n" else p for p in pattern))


def joins(dtype: str):
    """Two or three pieces of rank 1 to 3, of equal shape except along ``axis`` (any, negative
    ones included), where lengths (0 allowed) vary."""

    @st.composite
    def cases(draw):
        rank, n = draw(st.integers(1, 3)), draw(st.integers(2, 3))
        axis = draw(layouts.axes(rank))
        shape = list(draw(array_shapes(min_rank=rank, max_rank=rank)))
        values = []
        for _ in range(n):
            shape[axis] = draw(st.integers(0, 3))
            values.append(draw(arrays(dtype, tuple(shape), ANY)))
        return Case(tuple(values), (_free(rank),) * n, (("axis", axis),))

    return cases()


def splits(dtype: str):
    """Data of rank 1 to 3 and one to three split sizes (a graph input, zeros included)
    summing to the length of ``axis`` (any, negative ones included)."""

    @st.composite
    def cases(draw):
        rank, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        axis = draw(layouts.axes(rank))
        sizes = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        shape = list(draw(array_shapes(min_rank=rank, max_rank=rank)))
        shape[axis] = sum(sizes)
        value = draw(arrays(dtype, tuple(shape), ANY))
        return Case((value, _i64(sizes)), (_free(rank), (None,)), (("axis", axis), ("n", n)))

    return cases()


def constant_splits(dtype: str):
    """As ``splits``, with constant sizes (static params)."""

    @st.composite
    def cases(draw):
        rank = draw(st.integers(1, 3))
        axis = draw(layouts.axes(rank))
        sizes = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))
        shape = list(draw(array_shapes(min_rank=rank, max_rank=rank)))
        shape[axis] = sum(sizes)
        value = draw(arrays(dtype, tuple(shape), ANY))
        return Case((value,), (_free(rank),), (("axis", axis), ("sizes", sizes)))

    return cases()


# MakeVector's companions: the tested dtype first, then these (the output is their upcast).
MAKE_VECTOR_COMPANIONS = ("int8", "bool")


def scalars(count: int, *, companions: tuple[str, ...] = ()):
    """``count`` 0-d inputs of the tested dtype, then one 0-d input per companion dtype."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            kinds = (dtype,) * count + companions
            values = tuple(draw(arrays(d, (), ANY)) for d in kinds)
            return Case(values, ((),) * len(values))

        return cases()

    return factory


def _make_vector(*xs):
    return MakeVector(ps.upcast(*(x.dtype for x in xs)))(*xs)


def _scalar_add(x, y):
    return pt.tensor_from_scalar(pt.scalar_from_tensor(x) + pt.scalar_from_tensor(y))


@st.composite
def _orders(draw, shape: tuple):
    """A DimShuffle order for an operand of ``shape`` in a random graph: its axes permuted
    and up to two new length-1 axes (no axis dropped: only static length-1 axes can be)."""
    order = list(draw(layouts.permutations(len(shape))))
    for _ in range(draw(st.integers(0, 2))):
        order.insert(draw(st.integers(0, len(order))), "x")
    return (("order", tuple(order)),)


def _shuffled(shapes, params) -> tuple:
    (shape,) = shapes
    return tuple(1 if a == "x" else shape[a] for a in params["order"])


@st.composite
def _targets(draw, shape: tuple):
    """A reshape target for an operand of ``shape``: up to 3 lengths of the same size, one
    maybe -1 (not for a size-0 operand: PyTensor raises there, a record of the row)."""
    size = math.prod(shape)
    ndim = draw(st.integers(0 if size == 1 else 1, 3))
    target = draw(_shapes_of_size(size, ndim, allow_minus_one=size > 0))
    return (("shp", target), ("ndim", ndim))


def _reshaped(shapes, params) -> tuple:
    target = params["shp"]
    known = math.prod(n for n in target if n != -1)
    return tuple(math.prod(shapes[0]) // known if n == -1 else n for n in target)


@st.composite
def _patterns(draw, shape: tuple):
    """A specify_shape pattern for an operand of ``shape``: each length given (a constant:
    the rows' symbolic lengths are graph inputs) or left None."""
    return (("pattern", tuple(n if draw(st.booleans()) else None for n in shape)),)


def _axes(shape: tuple):
    return layouts.axes(len(shape)).map(lambda a: (("axis", a),))


def _joined(shapes, params) -> tuple:
    a, b = shapes
    axis = params["axis"] % len(a)
    return tuple(n + b[i] if i == axis else n for i, n in enumerate(a))


# In random graphs shape results are int64 values later nodes may compute with.
DIMSHUFFLES = Composes(domains=(ANY,), params=_orders, shape=_shuffled)
SHAPES = Composes(domains=(ANY,), shape=lambda shapes, params: (len(shapes[0]),))
SHAPE_ENTRIES = Composes(
    domains=(ANY,), params=lambda shape: layouts.axes(len(shape), allow_negative=False).map(
        lambda i: (("i", i),)),
    shape=lambda shapes, params: (), accepts=lambda shape: len(shape) > 0)
FLATTENS = Composes(domains=(ANY,), params=lambda shape: st.just((("target", (-1,)),)),
                    shape=lambda shapes, params: (math.prod(shapes[0]),))
# Constant targets never put -1 on a size-0 operand, so the row's record cannot show.
RESHAPES = Composes(domains=(ANY,), params=_targets, shape=_reshaped, dtypes=dtypes.ALL)
SPECIFIES = Composes(domains=(ANY,), params=_patterns)
# The tensor/scalar boundary takes 0-d operands only.
SCALARS = Composes(domains=(ANY,), accepts=lambda shape: shape == ())
SCALAR_PAIRS = Composes(domains=(ANY, ANY), accepts=lambda shape: shape == (),
                        pairs=lambda a, b: b == ())
VECTORS_OF_TWO = Composes(domains=(ANY, ANY), accepts=lambda shape: shape == (),
                          pairs=lambda a, b: b == (), shape=lambda shapes, params: (2,))
# Two pieces of one shape, joined along any of their axes.
JOINS = Composes(domains=(ANY, ANY), params=_axes, shape=_joined,
                 accepts=lambda shape: len(shape) > 0, pairs=lambda a, b: a == b)

# PyTensor's JAX Split into one part hands jnp.split's list on as the output.
JAX_SPLIT_ONE = {
    "backends": JAX_BACKENDS, "blame": Blame.PYTENSOR, "cause": "jax-split-one",
    "reason": "JAX's Split into one part returns jnp.split's list, which the output copy "
              "refuses (TypeError)",
    "match": "raised TypeError: copy requires ndarray",
}

# 3.3's Numba adds narrow integers in their own dtype; bools still come out widened
NUMBA_SCALAR_ADD_WIDENS = {
    "backends": NUMBA_BACKENDS, "blame": Blame.PYTENSOR, "cause": "numba-scalar-int-add-widens",
    "reason": "Numba's ScalarFromTensor/Add of narrow integers or bools returns int64/uint64",
    "match": r"out\.dtype=", "example": fixed(0, 0),
}

ROWS = [
    Row("dimshuffle", lambda x, order: x.dimshuffle(*order), dimshuffles, dtypes.ALL,
        compose=DIMSHUFFLES, grid=(ANY,)),
    Row("reshape", lambda x, shp, ndim: pt.reshape(x, shp, ndim=ndim), reshapes, dtypes.ALL,
        compose=RESHAPES, grid=(ANY,))
    .xfail(backends=ORT_BACKENDS, blame=Blame.CONVERTER,
           reason="semantic gap: PyTensor raises on -1 with a size-0 input, ONNX cannot raise",
           match="but pytensor-py raised ValueError: cannot reshape", when=_ambiguous_reshape,
           example=_reshape_zeros_by_minus_one)
    .xfail(backends=NUMBA_BACKENDS, blame=Blame.PYTENSOR, cause="numba-reshape-infers-empty",
           reason="Numba's Reshape infers -1 for a size-0 input (as 0) where numpy refuses",
           match="but pytensor-py raised ValueError: cannot reshape", when=_ambiguous_reshape,
           example=_reshape_zeros_by_minus_one),
    Row("reshape_constant", lambda x, target: pt.reshape(x, target), constant_reshapes,
        dtypes.ALL, compose=FLATTENS, grid=(ANY,)),
    Row("shape", pt.shape, ranks(), dtypes.ALL, compose=SHAPES)
    .xfail(**dtype_differs(lambda d: Case((np.zeros((), d),), ((),)), dtypes.ALL,
                           cause="jax-shape-0d",
                           reason="JAX gives the shape of a 0-d tensor as jnp.shape's empty "
                                  "tuple, which becomes a float64 array (the graph: int64)"),
           when=lambda case: case.values[0].ndim == 0),
    Row("shape_i", lambda x, i: Shape_i(i)(x), shape_entries, dtypes.ALL, compose=SHAPE_ENTRIES),
    Row("specify_shape", _specify_shape, specified_shapes, dtypes.ALL, compose=SPECIFIES,
        grid=(ANY,)),
    Row("join", lambda *xs, axis: pt.join(axis, *xs), joins, dtypes.ALL, compose=JOINS,
        grid=(ANY, ANY)),
    Row("split", lambda x, sizes, axis, n: pt.split(x, sizes, n_splits=n, axis=axis), splits,
        dtypes.ALL, grid=(ANY,))
    .xfail(backends=("pytensor-numba",), blame=Blame.PYTENSOR, cause="numba-split-one",
           reason="Numba's Split into one part returns the input with a new leading axis",
           match=r"out\.shape=\(1, ", when=lambda case: dict(case.params)["n"] == 1,
           versions="pytensor<3.3",
           example=lambda d: Case((np.zeros((0, 0), d), _i64([0])), ((None, None), (None,)),
                                  (("axis", -1), ("n", 1))))
    .xfail(backends=("pytensor-numba",), blame=Blame.PYTENSOR, cause="numba-split-one",
           reason="Numba's Split into one part returns a 1-tuple of arrays, which the "
                  "output's DeepCopyOp cannot type (TypingError: numba_deepcopy(UniTuple))",
           match="pytensor-numba raised TypingError",
           when=lambda case: dict(case.params)["n"] == 1, versions="pytensor>=3.3",
           example=lambda d: Case((np.zeros((0, 0), d), _i64([0])), ((None, None), (None,)),
                                  (("axis", -1), ("n", 1))))
    .xfail(**JAX_SPLIT_ONE, when=lambda case: dict(case.params)["n"] == 1,
           example=lambda d: Case((np.zeros((0, 0), d), _i64([0])), ((None, None), (None,)),
                                  (("axis", -1), ("n", 1)))),
    Row("split_constant", lambda x, axis, sizes: pt.split(x, sizes, n_splits=len(sizes), axis=axis),
        constant_splits, dtypes.ALL, grid=(ANY,))
    .xfail(backends=("pytensor-numba",), blame=Blame.PYTENSOR, cause="numba-split-one",
           reason="Numba's Split into one part returns the input with a new leading axis",
           match=r"out\.shape=\(1, ", when=lambda case: len(dict(case.params)["sizes"]) == 1,
           versions="pytensor<3.3", example=lambda d: Case(
               (np.zeros((0, 0), d),), ((None, None),), (("axis", -1), ("sizes", (0,)))))
    # 3.3: the one part comes back as a 1-tuple, which the output's copy cannot type
    .xfail(backends=("pytensor-numba",), blame=Blame.PYTENSOR, cause="numba-split-one",
           reason="Numba's Split into one part returns a 1-tuple of arrays, which the "
                  "output's DeepCopyOp cannot type (TypingError: numba_deepcopy(UniTuple))",
           match="pytensor-numba raised TypingError",
           when=lambda case: len(dict(case.params)["sizes"]) == 1,
           versions="pytensor>=3.3", example=lambda d: Case(
               (np.zeros((3, 2), d),), ((None, None),), (("axis", 0), ("sizes", (3,)))))
    .xfail(**JAX_SPLIT_ONE, when=lambda case: len(dict(case.params)["sizes"]) == 1,
           example=lambda d: Case((np.zeros((0, 0), d),), ((None, None),),
                                  (("axis", -1), ("sizes", (0,))))),
    Row("make_vector", _make_vector, scalars(2, companions=MAKE_VECTOR_COMPANIONS),
        dtypes.ALL, compose=VECTORS_OF_TWO, grid=(ANY, ANY)),
    Row("scalar_from_tensor", lambda x: pt.tensor_from_scalar(pt.scalar_from_tensor(x)),
        scalars(1), dtypes.ALL, compose=SCALARS, grid=(ANY,)),
    Row("scalar_add", _scalar_add, scalars(2), dtypes.ALL, compose=SCALAR_PAIRS, grid=(ANY, ANY))
    # the C backends add float16 scalars in Python, as the reference does
    .xfail_apart(dict(backends=without_jax(NOT_REFERENCE), dtypes=dtypes.FLOATS,
                      blame=Blame.PYTENSOR, reason="Python scalar Add is sum(inputs), which "
                                                   "starts at int 0: -0.0 + -0.0 = 0.0",
                      match=r"=-0\.0 but pytensor-py=0\.0 \(sign of zero",
                      example=fixed(-0.0, -0.0),
                      when=lambda case: all(v == 0 and np.signbit(v) for v in case.values)),
                 backends=C_BACKENDS, before=None, dtypes=("float16",), shared=True)
    .xfail(**NUMBA_SCALAR_ADD_WIDENS, dtypes=dtypes.BOOL)
    .xfail(**fixed_in(NUMBA_SCALAR_ADD_WIDENS, "3.3", (*dtypes.INTS[:3], *dtypes.UNSIGNED[:3])))
    .xfail(**elemwise_dtype(True, True, dtypes=("bool",),
                            what="add and mul of 0-d bools (Python's sum and * from an int)")),
]
