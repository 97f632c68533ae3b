"""Indexing: basic and advanced subtensors and their set/increment forms.

An index *structure* is a short string with one comma-separated item per indexed axis:

=========  ======================================================================
``i``      a symbolic integer (a 0-d integer input); ``0``, ``-1``: a literal one
``a:b:c``  a slice; each part empty (missing), ``s`` (a 0-d integer input) or a literal
``I1``     an integer index array of rank 1 (``I2``: rank 2); arrays broadcast together
``B1``     a boolean mask over the next axis (``B2``: the next two axes)
=========  ======================================================================

An item may end in ``@dtype`` to give its inputs that integer dtype (default int64). The
structure fixes the Op (its ``idx_list``), so rows draw it from a short list; the index
*values* are inputs and vary freely, repeated and negative indices included.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from pytensor.tensor import subtensor as ts

from conformance.registry import (
    C_BACKENDS,
    NOT_REFERENCE,
    NUMBA_BACKENDS,
    ORT_BACKENDS,
    Blame,
    Case,
    Composes,
    Row,
)
from conformance.strategies import ANY, arrays, dtypes


@dataclass(frozen=True)
class Item:
    kind: str  # "int", "slice", "array" or "mask"
    parts: tuple = ()  # int: (bound,), slice: (start, stop, step); "s" marks an input
    ndim: int = 1
    dtype: str = "int64"

    @property
    def axes(self) -> int:
        return self.ndim if self.kind == "mask" else 1


def _bound(text: str):
    return None if text == "" else "s" if text in ("s", "i") else int(text)


@functools.cache
def parse(structure: str) -> tuple[Item, ...]:
    items = []
    for token in structure.replace(" ", "").split(","):
        body, _, dtype = token.partition("@")
        dtype = dtype or "int64"
        if ":" in body:
            parts = body.split(":")
            parts += [""] * (3 - len(parts))
            items.append(Item("slice", tuple(_bound(p) for p in parts), dtype=dtype))
        elif body[0] in "IB":
            kind = "array" if body[0] == "I" else "mask"
            items.append(Item(kind, ndim=int(body[1:]), dtype="bool" if kind == "mask" else dtype))
        else:
            items.append(Item("int", (_bound(body),), dtype=dtype))
    return tuple(items)


def index_tuple(structure: str, inputs) -> tuple:
    """The index for ``x[...]``, taking the structure's inputs (symbolic or numpy) in order."""
    feed = iter(inputs)
    out = []
    for item in parse(structure):
        if item.kind in ("array", "mask"):
            out.append(next(feed))
            continue
        parts = [next(feed) if p == "s" else p for p in item.parts]
        out.append(slice(*parts) if item.kind == "slice" else parts[0])
    return tuple(out)


# -- strategies -------------------------------------------------------------------------------
def _ints(dtype: str, lo: int, hi: int, *, nonzero: bool = False):
    info = np.iinfo(dtype)
    lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
    values = st.integers(lo, hi)
    return values.filter(bool) if nonzero else values


@st.composite
def index_values(draw, structure: str, shape: tuple[int, ...]):
    """Values for the structure's inputs, in bounds for ``shape``: integers in [-n, n),
    slice bounds up to two past either end (numpy clips them), steps in [-3, 3] but 0."""
    values = []
    axis = 0
    common = None
    for item in parse(structure):
        n = shape[axis]
        if item.kind == "slice":
            for k, part in enumerate(item.parts):
                if part == "s":
                    bounds = _ints(item.dtype, -3, 3, nonzero=True) if k == 2 else \
                        _ints(item.dtype, -n - 2, n + 2)
                    values.append(np.asarray(draw(bounds), dtype=item.dtype))
        elif item.kind == "int" and item.parts[0] == "s":
            values.append(np.asarray(draw(_ints(item.dtype, -n, n - 1)), dtype=item.dtype))
        elif item.kind == "array":
            if common is None:
                common = draw(st.lists(st.integers(0, 3), min_size=2, max_size=2))
            # a length-1 axis broadcasts against the other arrays at run time
            idx_shape = tuple(draw(st.sampled_from([d, 1])) for d in common[2 - item.ndim:])
            values.append(draw(hnp.arrays(item.dtype, idx_shape,
                                          elements=_ints(item.dtype, -n, n - 1))))
        elif item.kind == "mask":
            values.append(draw(hnp.arrays(np.bool_, shape[axis:axis + item.ndim])))
        axis += item.axes
    return values


def _x_shape(structure: str, rank: int):
    """Sides 0-4, but at least 1 where an integer or an index array must point somewhere."""
    mins = []
    for item in parse(structure):
        mins += [1 if item.kind in ("int", "array") else 0] * item.axes
    mins += [0] * (rank - len(mins))
    return st.tuples(*[st.integers(m, 4) for m in mins])


def _static(values) -> tuple:
    return tuple((None,) * v.ndim for v in values)


def _y_layout(form: str, shape: tuple[int, ...]) -> tuple[tuple, tuple]:
    """The shape and static shape of a value broadcast onto a selection of ``shape``."""
    if form == "scalar":
        return (), ()
    if form == "row":  # one rank less: broadcast along the leading axis
        return shape[1:], (None,) * (len(shape) - 1)
    if form == "bcast":  # a declared length-1 leading axis
        return (1, *shape[1:]), (1, *(None,) * (len(shape) - 1))
    return shape, (None,) * len(shape)


@st.composite
def operands(draw, dtype: str, rank: int, structure: str, form: str | None = None):
    """A Case for ``x[structure]`` or, given a y form, for ``x[structure] = y``: the form is
    "full", "row" (one rank less), "bcast" (leading length 1) or "scalar"."""
    x = draw(arrays(dtype, draw(_x_shape(structure, rank)), ANY))
    idx = draw(index_values(structure, x.shape))
    params = (("index", structure),)
    if form is None:
        return Case((x, *idx), _static((x, *idx)), params)
    selected = np.empty(x.shape)[index_tuple(structure, idx)].shape
    y_shape, y_static = _y_layout(form, selected)
    y = draw(arrays(dtype, y_shape, ANY))
    return Case((x, y, *idx), ((None,) * x.ndim, y_static, *_static(idx)), params)


def getters(layouts):
    """Cases for ``x[structure]``: ``layouts`` lists (x rank, structure) pairs."""
    return lambda dtype: st.sampled_from(layouts).flatmap(lambda lay: operands(dtype, *lay))


def setters(layouts):
    """Cases for ``x[structure] = y``: ``layouts`` lists (x rank, structure, y form)."""
    return getters(layouts)


def _input_axes(structure: str) -> list[tuple[int, Item]]:
    """The axis and the item each input of the structure indexes."""
    out, axis = [], 0
    for item in parse(structure):
        count = item.parts.count("s") if item.kind in ("int", "slice") else 1
        out += [(axis, item)] * count
        axis += item.axes
    return out


def out_of_bounds(layouts):
    """Cases with one integer index out of bounds (PyTensor raises): ``layouts`` lists
    (op, x rank, structure, y form or None); the first integer or array input is spoiled."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            op, rank, structure, form = draw(st.sampled_from(layouts))
            case = draw(operands(dtype, rank, structure, form))
            inputs = _input_axes(structure)
            first = len(case.values) - len(inputs)
            k, axis = next((k, a) for k, (a, item) in enumerate(inputs)
                           if item.kind in ("int", "array"))
            values = list(case.values)
            spoiled = values[first + k].copy()
            assume(spoiled.size > 0)
            n = values[0].shape[axis]
            bad = [n, n + 2] + ([-n - 1, -n - 3] if spoiled.dtype.kind == "i" else [])
            spoiled.flat[draw(st.integers(0, spoiled.size - 1))] = draw(st.sampled_from(bad))
            values[first + k] = spoiled
            return Case(tuple(values), case.static, (("op", op), *case.params))

        return cases()

    return factory


# -- graph builders ---------------------------------------------------------------------------
# ``idx`` holds the structure's symbolic inputs; in random graphs ``values`` gives them as
# constants instead (see ``frozen``).
def _fed(idx, values) -> tuple:
    return idx if values is None else tuple(pt.constant(v) for v in thawed(values))


def get(x, *idx, index, values=None):
    return x[index_tuple(index, _fed(idx, values))]


def set_(x, y, *idx, index, values=None):
    return pt.set_subtensor(get(x, *idx, index=index, values=values), y)


def inc(x, y, *idx, index, values=None):
    return pt.inc_subtensor(get(x, *idx, index=index, values=values), y)


def inc_last(x, y, *idx, index, values=None):
    return pt.inc_subtensor(get(x, *idx, index=index, values=values), y,
                            ignore_duplicates=True)


def get1(x, *idx, index, values=None):
    return ts.advanced_subtensor1(x, *_fed(idx, values))


def set1(x, y, *idx, index, values=None):
    return ts.advanced_set_subtensor1(x, y, *_fed(idx, values))


def inc1(x, y, *idx, index, values=None):
    return ts.advanced_inc_subtensor1(x, y, *_fed(idx, values))


def any_op(*inputs, op, index):
    return BUILDERS[op](*inputs, index=index)


BASIC = [(1, "s:s:s"), (2, "i, s:"), (3, "::s@int8, i@int32, :s"), (1, "i@uint8"),
         (2, "s:s@int16")]
BASIC_CONST = [(1, "1:-1"), (2, "::-1, -1"), (3, ":, -9:9:2, 0"), (2, "5:, -6::-1"), (1, ":-7:-1")]
ARRAY1 = [(1, "I1"), (2, "I1@int32"), (3, "I1@uint8"), (1, "I1@int8")]
ADVANCED = [(1, "I2"), (2, "I1, I2@int32"), (3, "I1@int8, s:, I1"), (3, ":, I2, I1@uint16"),
            (2, "B2"), (3, "s:s, B2")]
BASIC_SET = [(1, "s:s:s", "full"), (2, "i, s:", "scalar"), (3, "::s@int8, i@int32, :s", "row"),
             (2, "s:s@int16, ::-1", "bcast"), (2, "-1", "full")]
ARRAY1_SET = [(1, "I1", "full"), (2, "I1@int32", "row"), (2, "I1", "scalar"),
              (3, "I1@uint8", "bcast")]
ADVANCED_SET = [(1, "I2", "full"), (2, "I1, I2@int32", "scalar"), (3, "I1@int8, s:, I1", "row"),
                (2, "B2", "full"), (3, "s:s, B2", "bcast")]


# -- random graphs ----------------------------------------------------------------------------
def frozen(values) -> tuple:
    """Index values as graph params, which must hash and print: (dtype, shape, flat values)
    each (a nested list would lose the shape of an empty array)."""
    return tuple((v.dtype.name, v.shape, tuple(v.ravel().tolist())) for v in values)


def thawed(values) -> list[np.ndarray]:
    return [np.asarray(flat, dtype=dtype).reshape(shape) for dtype, shape, flat in values]


def _indexable(structure: str, shape: tuple) -> bool:
    """Whether ``structure`` indexes an operand of ``shape``: enough axes, and something for
    each integer and index array to point at."""
    axis = 0
    for item in parse(structure):
        if axis + item.axes > len(shape) or (item.kind in ("int", "array") and not shape[axis]):
            return False
        axis += item.axes
    return True


def _selected(shapes, params) -> tuple:
    """numpy's selection shape, which PyTensor follows (advanced indices included)."""
    index, values = params["index"], params.get("values")
    inputs = () if values is None else thawed(values)
    return np.broadcast_to(np.int8(0), shapes[0])[index_tuple(index, inputs)].shape


def graph_getters(layouts, *, dtypes=None) -> Composes:
    """A row's own structures that fit the operand, with values drawn as its cases draw them."""
    structures = tuple(dict.fromkeys(structure for _, structure in layouts))

    def params(shape):
        fits = [s for s in structures if _indexable(s, shape)]
        return st.sampled_from(fits).flatmap(lambda s: index_values(s, shape).map(
            lambda v: (("index", s), ("values", frozen(v)))))

    return Composes(domains=(ANY,), params=params, shape=_selected, dtypes=dtypes,
                    accepts=lambda shape: any(_indexable(s, shape) for s in structures))


@st.composite
def literal_indices(draw, shape: tuple):
    """A constant basic index of leading axes: an integer in [-n, n) or a slice whose parts
    are omitted or literal (bounds up to two past either end, steps +-1..3)."""
    items = []
    for n in shape[:draw(st.integers(1, len(shape)))]:
        if n and draw(st.booleans()):
            items.append(str(draw(st.integers(-n, n - 1))))
            continue
        bound = st.one_of(st.just(""), st.integers(-n - 2, n + 2).map(str))
        step = st.one_of(st.just(""), st.sampled_from(("1", "2", "3", "-1", "-2", "-3")))
        items.append(f"{draw(bound)}:{draw(bound)}:{draw(step)}")
    return (("index", ", ".join(items)),)


# The value set or added in a graph is the operand itself, so the index selects all of it
# (in another order, or repeatedly). Another pool value would do, but its dtype may differ,
# and PyTensor casts such a y inconsistently: Python's inc raises on float into int, C casts.
@st.composite
def covering_slices(draw, shape: tuple):
    """Slices over leading axes that select all of each: step +-1 (any step on an axis of
    length <= 1), bounds omitted or at or past the ends."""
    items, values = [], []
    for n in shape[:draw(st.integers(1, len(shape)))]:
        step = draw(st.sampled_from((None, 1, -1, *((2, -3) if n <= 1 else ()))))
        if step is not None and step < 0:
            start, stop = st.integers(n - 1, n + 2) | st.just(-1), st.integers(-n - 3, -n - 1)
        else:
            start, stop = st.integers(-n - 2, -n) | st.just(0), st.integers(n, n + 2)
        parts = [draw(st.none() | start), draw(st.none() | stop), step]
        items.append(":".join("" if p is None else "s" for p in parts))
        values += [np.int64(p) for p in parts if p is not None]
    return (("index", ", ".join(items)), ("values", frozen(values)))


def _spread(dtype: str, shape: tuple, n: int):
    """Indices in [-n, n) of ``shape`` (repeats likely), or none for an empty axis."""
    if not n:
        return st.just(np.zeros(shape, dtype))
    return hnp.arrays(dtype, shape, elements=_ints(dtype, -n, n - 1))


@st.composite
def covering_arrays(draw, shape: tuple, *, pair: bool = True):
    """Index arrays whose selection has the operand's shape: one vector as long as its axis,
    or (``pair``, rank >= 2) "I1, I2" whose broadcast shape is that of the first two axes."""
    if pair and len(shape) > 1 and all(shape[:2]) and draw(st.booleans()):
        a0, a1 = shape[:2]
        i2 = (a0, draw(st.sampled_from((a1, 1))))
        i1 = (draw(st.sampled_from((a1, 1))) if i2[1] == a1 else a1,)
        values = [draw(_spread("int64", i1, a0)), draw(_spread("int32", i2, a1))]
        return (("index", "I1, I2@int32"), ("values", frozen(values)))
    axis = draw(st.integers(0, len(shape) - 1)) if pair else 0
    dtype = draw(st.sampled_from(("int64", "int32", "uint8", "int8")))
    index = ":, " * axis + f"I1@{dtype}"
    return (("index", index), ("values", frozen([draw(_spread(dtype, (shape[axis],),
                                                                shape[axis]))])))


def graph_setters(params, *, dtypes=None) -> Composes:
    """y is the first operand again: no other operand pairs with it."""
    return Composes(domains=(ANY, ANY), params=params, shape=lambda shapes, p: shapes[0],
                    accepts=lambda shape: len(shape) > 0, pairs=lambda a, b: False,
                    dtypes=dtypes)


# The records cannot show: masks are drawn shaped as the axes they index, and y is x itself
# (its first axis as long as the index, its axes x's), which PyTensor's check lets through.
ADVANCED_GETS = graph_getters(ADVANCED, dtypes=dtypes.ALL)
BASIC_SETS = graph_setters(covering_slices)
ARRAY1_SETS = graph_setters(functools.partial(covering_arrays, pair=False), dtypes=dtypes.ALL)
ADVANCED_SETS = graph_setters(covering_arrays)

OUT_OF_BOUNDS = [("get", 1, "i", None), ("get1", 2, "I1@int32", None), ("get", 2, "I1, I1", None),
                 ("set1", 1, "I1", "full"), ("inc", 2, ":, I2@int8", "scalar"),
                 ("set", 2, "i, :", "row")]
BUILDERS = {"get": get, "get1": get1, "set": set_, "inc": inc, "set1": set1, "inc1": inc1}

ALL = dtypes.ALL
ONNX_BACKENDS = (*ORT_BACKENDS, "onnx-reference")


def example(x, *indices, index: str, y=None, op: str | None = None):
    """A dtype -> Case function: ``x`` and ``y`` (setters only) take the test's dtype, the
    index inputs keep their own; ``op`` is for the out-of-bounds row."""

    def make(dtype: str) -> Case:
        data = [x] if y is None else [x, y]
        values = [np.asarray(v, dtype=dtype) for v in data] + [np.asarray(i) for i in indices]
        params = (("index", index),) if op is None else (("op", op), ("index", index))
        return Case(tuple(values), _static(values), params)

    return make


def pytensor_broadcast_check_raises(case: Case) -> bool:
    """AdvancedIncSubtensor1's runtime-broadcasting check as PyTensor's ``perform`` does it:
    y's first axis against the index length and y's axes against x's from the right, even
    where y's first axis is really one of x's trailing axes or x's indexed axis."""
    (x, y, idx), y_static = case.values, case.static[1]
    if y.ndim == 0:
        return False
    if y_static[0] != 1 and y.shape[0] == 1 and idx.shape[0] != 1:
        return True
    pairs = zip(reversed(y_static), reversed(y.shape), reversed(x.shape), strict=False)
    return any(s != 1 and yd == 1 and yd != xd for s, yd, xd in pairs)


# Only valid y are drawn, so whenever PyTensor's check raises, the error is spurious. The C
# code of the 1-D case checks correctly; other cases fall back to ``perform``.
SPURIOUS_BROADCAST_ERROR = {
    "backends": NOT_REFERENCE, "blame": Blame.PYTENSOR, "cause": "advinc1-perform-broadcast-check",
    "reason": "AdvancedIncSubtensor1.perform misaligns y against x and the index and raises a "
              "spurious runtime-broadcasting error on a valid y",
    "match": "pytensor-py raised ValueError: Runtime broadcasting not allowed",
    "when": pytensor_broadcast_check_raises,
}


# The default rewrites make a one-array-index set/inc an AdvancedIncSubtensor1, whose float16
# version has no C code and runs perform, with the check above.
C_OPT_FLOAT16_BROADCAST = {
    "backends": ("pytensor-c-opt",), "dtypes": ("float16",), "blame": Blame.PYTENSOR,
    "cause": "advinc1-perform-broadcast-check",
    "reason": "the default rewrites make it an AdvancedIncSubtensor1, whose float16 perform "
              "raises a spurious runtime-broadcasting error on a valid y",
    "match": "pytensor-c-opt raised ValueError: Runtime broadcasting not allowed",
    "example": example([0.0, 0.0], [[0.0]], np.zeros((1, 1), np.int64), index="I2"),
}


def mask_mismatch(case: Case) -> bool:
    """A boolean mask whose shape differs from the axes of x it indexes."""
    x, *inputs = case.values
    axes = _input_axes(dict(case.params)["index"])
    return any(item.kind == "mask" and v.shape != x.shape[axis:axis + v.ndim]
               for v, (axis, item) in zip(inputs, axes, strict=True))



ROWS = [
    Row("subtensor", get, getters(BASIC), ALL, compose=graph_getters(BASIC)),
    Row("subtensor_const", get, getters(BASIC_CONST), ALL,
        compose=Composes(domains=(ANY,), params=literal_indices, shape=_selected,
                         accepts=lambda shape: len(shape) > 0)),
    Row("advanced_subtensor1", get1, getters(ARRAY1), ALL, compose=graph_getters(ARRAY1)),
    Row("advanced_subtensor", get, getters(ADVANCED), ALL, compose=ADVANCED_GETS)
    .xfail(backends=ONNX_BACKENDS, blame=Blame.CONVERTER,
           reason="semantic gap: PyTensor raises on a mask shaped unlike the axes it indexes; "
                  "ONNX cannot raise, so the model returns a selection",
           match="pytensor-py raised IndexError: boolean index did not match", when=mask_mismatch,
           example=example([1, 2, 3], [True, False], index="B1")),
    Row("set_subtensor", set_, setters(BASIC_SET), ALL, compose=BASIC_SETS),
    Row("inc_subtensor", inc, setters(BASIC_SET), ALL, compose=BASIC_SETS),
    Row("advanced_set_subtensor1", set1, setters(ARRAY1_SET), ALL, compose=ARRAY1_SETS)
    .xfail(**SPURIOUS_BROADCAST_ERROR, example=example([[0], [1]], [0, 1], y=[1], index="I1")),
    Row("advanced_inc_subtensor1", inc1, setters(ARRAY1_SET), ALL, compose=ARRAY1_SETS)
    .xfail(**SPURIOUS_BROADCAST_ERROR, example=example([[0], [1]], [0, 1], y=[1], index="I1"))
    .xfail(backends=C_BACKENDS, dtypes=("bool",), blame=Blame.PYTENSOR,
           reason="C AdvancedIncSubtensor1 adds a repeated index's bools as bytes, so "
                  "True + True is stored as the byte 2",
           match=r"holds the byte \d+, not a bool",
           example=example([False], [True, True], [0, 0], index="I1")),
    Row("advanced_set_subtensor", set_, setters(ADVANCED_SET), ALL, compose=ADVANCED_SETS)
    .xfail(**C_OPT_FLOAT16_BROADCAST),
    Row("advanced_inc_subtensor", inc, setters(ADVANCED_SET), ALL, compose=ADVANCED_SETS)
    .xfail(backends=("pytensor-c-opt",), dtypes=("bool",), blame=Blame.PYTENSOR,
           reason="the inplace C AdvancedIncSubtensor adds a repeated index's bools as bytes, "
                  "so True + True is stored as the byte 2",
           match=r"holds the byte \d+, not a bool",
           example=example([False], [[True, True]], [[0, 0]], index="I2"))
    .xfail(**C_OPT_FLOAT16_BROADCAST),
    Row("advanced_inc_subtensor_last", inc_last, setters(ADVANCED_SET), ALL,
        compose=ADVANCED_SETS),
    Row("index_out_of_bounds", any_op, out_of_bounds(OUT_OF_BOUNDS), ALL)
    .xfail(backends=("onnx-reference",), blame=Blame.ONNX_REFERENCE,
           reason="the reference Gather (numpy.take) checks no index when the result is empty; "
                  "the ONNX spec makes any out-of-bounds index an error",
           match="onnx-reference returned .* but pytensor-py raised IndexError",
           when=lambda case: case.values[0].size == 0,
           example=example(np.zeros((0, 1)), np.array([[1]], dtype=np.int8), y=0, op="inc",
                           index=":, I2@int8"), cause="reference-gather-empty")
    .xfail(backends=NUMBA_BACKENDS, blame=Blame.PYTENSOR, cause="numba-index-unchecked",
           reason="Numba's advanced indexing checks no bounds: it reads (or writes) past the "
                  "buffer, or crashes the process, where PyTensor's Python and C raise",
           match="(returned .*|crashed the process .*) but pytensor-py raised IndexError",
           example=example(np.zeros((1, 1)), np.array([1]), np.array([0]), op="get",
                           index="I1, I1")),
]
