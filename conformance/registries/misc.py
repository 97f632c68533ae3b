"""Miscellaneous ops: identity-like ops, runtime checks, OpFromGraph, pad, broadcast_to and
fill_diagonal (repeat, unique, nonzero and searchsorted are in ``sets``)."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytensor.tensor as pt
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.ops import DeepCopyOp, ViewOp
from pytensor.raise_op import Assert, CheckAndRaise
from pytensor.tensor.extra_ops import fill_diagonal, fill_diagonal_offset

from conformance.jax_records import elemwise_dtype
from conformance.registries.creation import ALLOC_NEGATIVE_ZERO
from conformance.registry import (
    C_BACKENDS,
    JAX_BACKENDS,
    NUMBA_BACKENDS,
    ONNX_BACKENDS,
    Blame,
    Case,
    Composes,
    Row,
    fixed_in,
)
from conformance.strategies import ANY, array_shapes, arrays, dtypes, elemwise

ALL = dtypes.ALL
WRAP_DTYPES = tuple(d for d in ALL if d != "uint64")


def case_of(values, static=None, params=()) -> Case:
    values = tuple(np.asarray(v) for v in values)
    static = static or tuple((None,) * v.ndim for v in values)
    return Case(values, tuple(tuple(s) for s in static), tuple(params))


def example(*values, dtypes_=None, static=None, params=()):
    """A dtype -> Case function: ``values[i]`` gets the test's dtype unless ``dtypes_[i]``
    names another (index, count and condition operands keep their own dtypes)."""

    def make(dtype: str) -> Case:
        kinds = dtypes_ or (None,) * len(values)
        arrays_ = [np.asarray(v, dtype=k or dtype) for v, k in zip(values, kinds, strict=True)]
        return case_of(arrays_, static, params)

    return make


# -- identity-like ops and runtime checks -------------------------------------------


def checked(n_conds: int):
    """A value of any rank and ``n_conds`` 0-d bool conditions (false about half the time)."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            shape = draw(array_shapes(max_rank=2))
            value = draw(arrays(dtype, shape))
            conds = [np.asarray(draw(st.booleans())) for _ in range(n_conds)]
            return case_of([value, *conds])

        return cases()

    return factory


def condition_false(case) -> bool:
    return not all(bool(c) for c in case.values[1:])


def cannot_raise(exc: str) -> dict:
    """xfail arguments for a check ONNX cannot make: the value passes through unchecked."""
    return {"backends": ONNX_BACKENDS, "blame": Blame.CONVERTER, "when": condition_false,
            "reason": f"semantic gap: PyTensor raises {exc} on a false condition, ONNX cannot "
                      "raise and passes the value through",
            "match": f"pytensor-py raised {exc}"}


def jax_drops_check(exc: str) -> dict:
    """xfail arguments for PyTensor's JAX backend, which drops the check (with a warning)."""
    return {"backends": JAX_BACKENDS, "blame": Blame.PYTENSOR, "when": condition_false,
            "cause": "jax-check-dropped",
            "reason": f"PyTensor's JAX backend drops CheckAndRaise: no {exc} on a false "
                      "condition, the value passes through",
            "match": f"returned .* but pytensor-py raised {exc}"}


# -- pad ----------------------------------------------------------------------------


def pads(*, constant_values=None):
    """x of rank 1-2 and int64 pad widths (rank, 2) in 0..4, often wider than the axis
    (a 0-d x would leave the widths input unused, which pytensor.function refuses)."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            shape = draw(array_shapes(min_rank=1, max_rank=2))
            x = draw(arrays(dtype, shape))
            widths = draw(hnp.arrays(np.int64, (len(shape), 2), elements=st.integers(0, 4)))
            params = []
            if constant_values is not None:
                params.append(("constant_values", draw(st.sampled_from(constant_values))))
            return case_of([x, widths], params=params)

        return cases()

    return factory


def pad(mode: str):
    return lambda x, widths, **kw: pt.pad(x, widths, mode=mode, **kw)


def pads_empty_axis(case) -> bool:
    """True when some length-0 axis gets a nonzero pad width (numpy.pad raises)."""
    x, widths = case.values
    return any(x.shape[a] == 0 and widths[a].any() for a in range(x.ndim))


def pads_unit_axis(case) -> bool:
    return 1 in case.values[0].shape


def pads_empty_array(case) -> bool:
    return case.values[0].size == 0


PAD_EDGE_EMPTY = {
    "backends": ONNX_BACKENDS, "blame": Blame.PYTENSOR, "when": pads_empty_axis,
    "reason": "PyTensor's edge padding of a length-0 axis returns a result; numpy.pad raises, "
              "as ONNX does",
    "match": "raised .* but pytensor-py returned",
    "example": example([], [[1, 1]], dtypes_=(None, "int64")),
}


def keeps_empty_axis(case) -> bool:
    """Some length-0 axis gets no padding on either side (numpy.pad returns it as it is)."""
    x, widths = case.values
    return any(x.shape[a] == 0 and not widths[a].any() for a in range(x.ndim))


# 3.3 builds the edge pad with a SpecifyShape that the edge slice of each axis is one long
PAD_EDGE_EMPTY_CHECKED = {
    "backends": ONNX_BACKENDS, "blame": Blame.PYTENSOR, "versions": "pytensor>=3.3",
    "when": keeps_empty_axis, "cause": "pad-edge-empty-axis-check",
    "reason": "PyTensor 3.3's edge pad asserts (SpecifyShape) that each axis's edge slice has "
              "length 1, so a length-0 axis raises even with zero widths; numpy.pad returns it",
    "match": "returned .* but pytensor-py raised AssertionError: SpecifyShape",
    "example": example([], [[0, 0]], dtypes_=(None, "int64")),
}
PAD_EMPTY_ARRAY = {
    "backends": (*ONNX_BACKENDS, *NUMBA_BACKENDS), "blame": Blame.PYTENSOR,
    "when": pads_empty_array,
    "reason": "PyTensor's padding of a size-0 array has the wrong shape or divides by zero "
              "(numpy.pad keeps and pads the non-empty axes, raises on extending an empty one)",
    "match": r"out\.shape=|raised .* but pytensor-py returned|"
             r"pytensor-py raised (ZeroDivisionError|ValueError: cannot reshape)",
    "example": example(np.zeros((1, 0)), [[1, 0], [0, 0]], dtypes_=(None, "int64")),
}


def pad_empty_compiled(mode: str, backends, example_, dtypes_=dtypes.ALL) -> dict:
    """3.3's Python linker, running the pad's inner graph unrewritten, raises on extending a
    length-0 axis by reflecting (as numpy.pad does); compiled code returns a result: an
    empty one where the result is empty, else (Numba) values read from outside the array."""
    return {
        "backends": backends, "blame": Blame.PYTENSOR, "versions": "pytensor>=3.3",
        "when": pads_empty_axis, "dtypes": tuple(d for d in dtypes_ if d != "float16"),
        "reason": f"PyTensor 3.3's compiled {mode} pad of an array with a length-0 axis "
                  "returns a result (Numba: values read from outside the array) where its "
                  "Python linker raises IndexError (numpy.pad raises too)",
        "match": "returned .* but pytensor-py raised IndexError",
        "example": example_,
    }


EMPTY_1D = example(np.zeros(0), [[1, 2]], dtypes_=(None, "int64"))
PAD_REFLECT_UNIT = {
    "backends": ONNX_BACKENDS, "blame": Blame.PYTENSOR, "when": pads_unit_axis,
    "reason": "PyTensor's reflect leaves a length-1 axis unpadded or divides by zero; "
              "numpy.pad repeats it",
    "match": r"shape=\(|pytensor-py raised ZeroDivisionError",
    "example": example([7], [[2, 3]], dtypes_=(None, "int64")),
}


def pads_unit_axis_from_start(case) -> bool:
    """Some axis declared length 1 gets no padding before it."""
    widths = case.values[1]
    return any(s == 1 and widths[a][0] == 0 for a, s in enumerate(case.static[0]))


PAD_SYMMETRIC_STATIC_UNIT = {
    "backends": ("pytensor-c-opt",), "blame": Blame.PYTENSOR, "when": pads_unit_axis_from_start,
    "reason": "PyTensor's rewritten symmetric pad of an axis declared length 1 with no padding "
              "before it raises IndexError (the unrewritten graph pads it)",
    "match": "pytensor-c-opt raised IndexError: index out of bounds",
    "example": example([7], [[0, 2]], dtypes_=(None, "int64"), static=((1,), (None, None))),
}


def c_divides_by_zero(when, divisor: str, values) -> dict:
    """PyTensor's C backend raises on the padding's integer division by ``divisor`` (0
    here), where its Python linker's numpy division gives 0 and the result comes out right."""
    return {
        "backends": C_BACKENDS, "blame": Blame.PYTENSOR, "when": when,
        "reason": f"C integer division by {divisor} (0 here) raises ZeroDivisionError; "
                  "the Python linker gets 0 from numpy and pads correctly",
        "match": "raised ZeroDivisionError",
        "example": example(values, [[0, 0]], dtypes_=(None, "int64")),
    }


def reference_gather(widths) -> dict:
    """The converted pad raises through an out-of-range Gather; the reference evaluator
    skips that check when the Gather's output is empty."""
    return {
        "backends": ("onnx-reference",), "blame": Blame.ONNX_REFERENCE, "when": pads_empty_axis,
        "reason": "the ONNX reference's Gather accepts out-of-range indices when its output is "
                  "empty; the spec calls that an error (ONNX Runtime raises, as PyTensor does)",
        "cause": "reference-gather-empty",
        "match": "onnx-reference returned .* but pytensor-py raised",
        "example": example(np.zeros((0, 0)), widths, dtypes_=(None, "int64")),
    }


def pad_params(constant_values=None):
    """Widths 0..4 as the cases draw them, but 0 on a length-0 axis (numpy.pad raises)."""

    @st.composite
    def params(draw, shape):
        widths = tuple(tuple(draw(st.integers(0, 4 if n else 0)) for _ in range(2))
                       for n in shape)
        values = () if constant_values is None else (draw(st.sampled_from(constant_values)),)
        return (("widths", widths), *(("constant_values", v) for v in values))

    return params


def padded_shape(shapes, params) -> tuple:
    return tuple(n + sum(w) for n, w in zip(shapes[0], params["widths"], strict=True))


def pad_row(mode: str, dtypes_, *known: dict, accepts, constant_values=None) -> Row:
    """A ``pt.pad`` row with ``known`` (PyTensor bugs seen through its results); random
    graphs pad the operand shapes it ``accepts``, on which none of those can show."""
    compose = Composes(domains=(ANY,), params=pad_params(constant_values), shape=padded_shape,
                       accepts=accepts, dtypes=dtypes_ if known else None)
    row = Row(f"pad_{mode}", pad(mode), pads(constant_values=constant_values), dtypes_,
              compose=compose, grid=(ANY,))
    for k in known:
        row = row.xfail(**k)
    return row


# -- broadcast_to, fill_diagonal ----------------------------------------------------

BROADCAST_TARGETS = ((3,), (2, 3), (0, 3), (2, 1, 3))


@st.composite
def broadcasts(draw, dtype):
    """x broadcastable to one of a few target shapes (length-1 axes declared static)."""
    target = draw(st.sampled_from(BROADCAST_TARGETS))
    rank = draw(st.integers(0, len(target)))
    ones = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    static = tuple(1 if one else None for one in ones)
    shape = tuple(1 if one else t for one, t in zip(ones, target[len(target) - rank:], strict=True))
    x = draw(arrays(dtype, shape))
    return case_of([x], static=[static], params=[("shape", target)])


@st.composite
def diagonals(draw, dtype, *, offset=False):
    """A matrix (or for fill_diagonal sometimes a cube), a 0-d value of the same dtype and
    for fill_diagonal_offset an int64 offset in -5..5 (often past the edges)."""
    if not offset and draw(st.integers(0, 3)) == 0:
        shape = (draw(st.integers(0, 3)),) * 3
    else:
        shape = draw(array_shapes(min_rank=2, max_rank=2))
    values = [draw(arrays(dtype, shape)), draw(arrays(dtype, ()))]
    if offset:
        values.append(np.int64(draw(st.integers(-5, 5))))
    return case_of(values)


def _ofg_io(a, b):
    """A small wrapped graph with two outputs, x * y and x + y, on inputs typed like ``a``
    and ``b`` (the inner graph is compiled with rewrites, so it avoids expressions that
    rewrites could refactor, such as x * y + x into x * (y + 1), which overflows
    differently)."""
    x, y = a.type(), b.type()
    return [x, y], [x * y, x + y]


def offset_past_width(case) -> bool:
    a, _, offset = case.values
    return int(offset) > a.shape[1]


def unequal_sides(case) -> bool:
    a = case.values[0]
    return a.ndim > 2 and len(set(a.shape)) > 1


# -- random graphs ------------------------------------------------------------------
# What the cases give as inputs (conditions, widths, fill values) are constants here,
# drawn from the operand's shape so that no record of the row can show: conditions hold,
# widths are 0 on an empty axis, offsets stay within the columns.


def _holds(*names):
    """Conditions that hold, as True or as a nonzero number the op casts to bool."""
    return lambda shape: st.tuples(*[st.sampled_from((True, 1)) for _ in names]).map(
        lambda conds: tuple(zip(names, conds, strict=True)))


def _diagonal_params(offset: bool):
    """A fill value of 0 or 1 and an offset in -5..5 but not past the last column."""

    @st.composite
    def params(draw, shape):
        val = (("val", draw(st.integers(0, 1))),)
        return val + ((("offset", draw(st.integers(-5, min(5, shape[1])))),) if offset else ())

    return params


def cast_fill(fill):
    """``fill`` with its value cast to the array's dtype, which the op requires: the cases
    draw it so already, random graphs give a number."""
    return lambda a, val, *offset, **kw: fill(a, pt.cast(val, a.dtype), *offset, **kw)


def broadcast_targets(shape: tuple):
    """New leading axes; an operand's own axes stretch only where declared length 1."""
    return st.lists(st.integers(0, 3), max_size=2).map(lambda lead: (("shape", (*lead, *shape)),))


def _ofg(x, y, output=None):
    """Both outputs, or in random graphs the one ``output`` names."""
    outs = OpFromGraph(*_ofg_io(x, y))(x, y)
    return outs if output is None else outs[output]


def adds_negative_zeros(case) -> bool:
    """x + y is -0.0 somewhere: both operands are -0.0 there."""
    x, y = case.values
    with np.errstate(all="ignore"):
        total = x + y
    return bool((np.signbit(total) & (total == 0)).any())


def has_axes(shape: tuple) -> bool:
    return len(shape) > 0


def nonempty(shape: tuple) -> bool:
    """Some axis, and every axis with elements (PAD_EMPTY_ARRAY)."""
    return len(shape) > 0 and all(shape)


def reflectable(shape: tuple) -> bool:
    """Every axis at least 2 long: PAD_EMPTY_ARRAY and PAD_REFLECT_UNIT (and, for
    symmetric padding, PAD_SYMMETRIC_STATIC_UNIT)."""
    return len(shape) > 0 and min(shape) >= 2


def diagonal_fits(shape: tuple) -> bool:
    """A matrix, or equal sides (the record of unequal ones cannot show)."""
    return len(shape) == 2 or (len(shape) > 2 and len(set(shape)) == 1)


def _fills(offset: bool, accepts) -> Composes:
    return Composes(domains=(ANY,), params=_diagonal_params(offset), accepts=accepts,
                    dtypes=ALL)


ROWS = [
    Row("deep_copy", DeepCopyOp(), elemwise(ANY), ALL, compose=True),
    Row("view_op", ViewOp(), elemwise(ANY), ALL, compose=True),
    Row("assert_op", lambda x, c: Assert("x is not valid")(x, c), checked(1), ALL,
        grid=(ANY,), compose=Composes(domains=(ANY,), params=_holds("c"), dtypes=ALL))
    .xfail(**cannot_raise("AssertionError"), example=example([1], False, dtypes_=(None, "bool")))
    .xfail(**jax_drops_check("AssertionError"),
           example=example([1], False, dtypes_=(None, "bool"))),
    Row("check_and_raise", lambda x, c1, c2: CheckAndRaise(ValueError, "bad")(x, c1, c2),
        checked(2), ALL, grid=(ANY,),
        compose=Composes(domains=(ANY,), params=_holds("c1", "c2"), dtypes=ALL))
    .xfail(**cannot_raise("ValueError"),
           example=example([1], True, False, dtypes_=(None, "bool", "bool")))
    .xfail(**jax_drops_check("ValueError"),
           example=example([1], True, False, dtypes_=(None, "bool", "bool"))),
    Row("op_from_graph", _ofg, elemwise(ANY, ANY), ALL,
        compose=Composes(domains=(ANY, ANY), params=lambda shape: st.sampled_from(
            ((("output", 0),), (("output", 1),)))))
    .xfail(**elemwise_dtype(False, False, dtypes=("bool",),
                            what="add and mul of bools in an OpFromGraph (its inner graph "
                                 "rewritten by the JAX mode)"))
    .xfail(backends=("pytensor-c-opt",), dtypes=("float16",), blame=Blame.PYTENSOR,
           cause="scalar-add-impl-sum", versions="pytensor>=3",
           reason="PyTensor 3's rewrites fuse the inner x * y and x + y into a float16 "
                  "Composite (2.38 keeps them apart), which has no C code: its Python impl "
                  "sums from int 0, so -0.0 + -0.0 gives +0.0",
           match=r"out1(\[[\d, ]*\])?=0\.0 but pytensor-py=-0\.0 \(sign of zero differs\)",
           when=adds_negative_zeros, example=example([-0.0], [-0.0])),
    pad_row("constant", ALL, accepts=has_axes, constant_values=(0, (1, 2))),
    pad_row("edge", ALL, PAD_EDGE_EMPTY, PAD_EDGE_EMPTY_CHECKED,
            reference_gather([[0, 0], [1, 0]]), accepts=nonempty),
    pad_row("reflect", ALL, fixed_in(PAD_EMPTY_ARRAY, "3.3"),
            fixed_in(PAD_REFLECT_UNIT, "3.3"),
            pad_empty_compiled("reflect", (*C_BACKENDS, *NUMBA_BACKENDS), example(
                np.zeros((0, 0)), [[0, 0], [2, 2]], dtypes_=(None, "int64"))),
            reference_gather([[0, 0], [2, 2]]),
            fixed_in(c_divides_by_zero(pads_unit_axis, "the axis length - 1", [7]), "3.3"),
            accepts=reflectable),
    pad_row("symmetric", ALL, fixed_in(PAD_EMPTY_ARRAY, "3.3"),
            fixed_in(PAD_SYMMETRIC_STATIC_UNIT, "3.3"),
            pad_empty_compiled("symmetric", NUMBA_BACKENDS, EMPTY_1D),
            fixed_in(c_divides_by_zero(pads_empty_array, "the axis length", []), "3.3"),
            accepts=reflectable),
    # PyTensor's wrap padding repeats x, and repeat refuses uint64 when building the graph.
    pad_row("wrap", WRAP_DTYPES, fixed_in(PAD_EMPTY_ARRAY, "3.3"),
            fixed_in(c_divides_by_zero(pads_empty_array, "the axis length", []), "3.3"),
            pad_empty_compiled("wrap", NUMBA_BACKENDS, EMPTY_1D, WRAP_DTYPES),
            # its inner graph tiles a one-element x through Alloc
            fixed_in({**ALLOC_NEGATIVE_ZERO, "example": example(
                [-0.0], [[0, 0]], dtypes_=(None, "int64"))}, "3.3"),
            accepts=nonempty),
    # In random graphs no operand has one element, so ALLOC_NEGATIVE_ZERO cannot show.
    Row("broadcast_to", lambda x, shape: pt.broadcast_to(x, shape), broadcasts, ALL,
        grid=(ANY,), compose=Composes(domains=(ANY,), params=broadcast_targets, dtypes=ALL,
                         shape=lambda shapes, params: params["shape"],
                         accepts=lambda shape: math.prod(shape) != 1))
    .xfail(**ALLOC_NEGATIVE_ZERO, example=example(-0.0, params=[("shape", (3,))])),
    Row("fill_diagonal", cast_fill(fill_diagonal), diagonals, ALL, grid=(ANY, ANY),
        compose=_fills(False, diagonal_fits))
    .xfail(backends=ONNX_BACKENDS, blame=Blame.CONVERTER, when=unequal_sides,
           reason="semantic gap: numpy.fill_diagonal raises on an N-d input with unequal "
                  "sides, ONNX cannot raise", match="pytensor-py raised ValueError",
           example=example(np.zeros((1, 2, 2)), 1))
    .xfail(backends=JAX_BACKENDS, blame=Blame.PYTENSOR, cause="jax-fill-diagonal-nd",
           reason="PyTensor's JAX fill_diagonal of an N-d cube fills more than a[i, ..., i] "
                  "(numpy's diagonal)", match="exact match required|abs err",
           when=lambda case: case.values[0].ndim > 2, example=example(np.zeros((2, 2, 2)), 1)),
    Row("fill_diagonal_offset", cast_fill(fill_diagonal_offset),
        functools.partial(diagonals, offset=True), ALL, grid=(ANY, ANY),
        compose=_fills(True, lambda shape: len(shape) == 2))
    .xfail(backends=ONNX_BACKENDS, blame=Blame.PYTENSOR, when=offset_past_width,
           reason="PyTensor's fill_diagonal_offset with an offset past the last column writes "
                  "a stray element (its negative slice end wraps around)",
           match="but pytensor-py=",
           example=example(np.zeros((3, 3)), 1, 5, dtypes_=(None, None, "int64"))),
]
