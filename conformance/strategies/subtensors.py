"""Index structures and the case factories of the indexing rows (``registries/indexing.py``).

An index *structure* is a short string with one comma-separated item per indexed axis:

=========  ======================================================================
``i``      a symbolic integer (a 0-d integer input); ``0``, ``-1``: a literal one
``a:b:c``  a slice; each part empty (missing), ``s`` (a 0-d integer input) or a literal
``I1``     an integer index array of rank 1 (``I2``: rank 2); arrays broadcast together
``B1``     a boolean mask over the next axis (``B2``: the next two axes)
=========  ======================================================================

An item may end in ``@dtype`` to give its inputs that integer dtype (default int64). The
structure fixes the Op (its ``idx_list``). Basic rows draw it (``basic_indices``: every
combination of omitted, positive and negative slice parts, integers, literal or input parts)
and try the plain slices first; advanced rows draw theirs (``advanced_structures``). The
index *values* vary freely, repeated and negative indices included.
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

from conformance.registry import Case, Composes
from conformance.strategies import ANY, array_shapes, arrays, dtypes, layouts
from converter import compat


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


def static_shapes(values) -> tuple:
    """No static length on any axis of any value (each input may take any shape)."""
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
    return _case(draw, dtype, x, structure, idx, form)


def _case(draw, dtype: str, x, structure: str, idx, form: str | None) -> Case:
    params = (("index", structure),)
    if form is None:
        return Case((x, *idx), static_shapes((x, *idx)), params)
    selected = np.empty(x.shape)[index_tuple(structure, idx)].shape
    y_shape, y_static = _y_layout(form, selected)
    y = draw(arrays(dtype, y_shape, ANY))
    return Case((x, y, *idx), ((None,) * x.ndim, y_static, *static_shapes(idx)), params)


# An input's dtype shrinks toward int64; uint8 only holds a part that is never negative.
INDEX_DTYPES = ("int64", "int32", "int16", "int8")


def _part(draw, value: int, inputs: bool, fed: list) -> str:
    """A literal part, or (``inputs``: three times in four) an input holding ``value``."""
    if inputs and draw(st.integers(0, 3)) < 3:
        fed.append(value)
        return "s"
    return str(value)


@st.composite
def basic_indices(draw, shape: tuple, *, inputs: bool):
    """A basic index of leading axes of ``shape`` and its inputs' values: per axis an integer
    in [-n, n) or a slice whose start, stop and step are each omitted, positive or negative
    (``layouts.slices``); with ``inputs``, most parts are inputs of a drawn integer dtype,
    the others literal. Shrinks toward one axis, a slice, omitted parts and int64."""
    items, values = [], []
    for n in shape[:draw(st.integers(1, len(shape)))]:
        fed: list[int] = []
        if n and draw(st.booleans()):
            text = _part(draw, draw(layouts.indices(n)), inputs, fed).replace("s", "i")
        else:
            sl = draw(layouts.slices(n))
            text = ":".join("" if p is None else _part(draw, p, inputs, fed)
                            for p in _parts(sl))
        if fed:
            dtype = draw(st.sampled_from(INDEX_DTYPES + (("uint8",) if min(fed) >= 0 else ())))
            text += "" if dtype == "int64" else f"@{dtype}"
            values += [np.asarray(v, dtype=dtype) for v in fed]
        items.append(text)
    return ", ".join(items), values


def basics(*, inputs: bool, setter: bool = False):
    """Cases for ``x[index]`` (or, ``setter``, ``x[index] = y`` with a y form drawn) with a
    drawn basic index (``basic_indices``) of an x of rank 1 to 3; the plain slices of
    ``layouts.PLAIN_SLICES`` come first."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            x = draw(arrays(dtype, draw(array_shapes(min_rank=1, max_rank=3)), ANY))
            structure, idx = draw(basic_indices(x.shape, inputs=inputs))
            form = None
            if setter:
                selected = np.empty(x.shape)[index_tuple(structure, idx)].shape
                forms = ("full", "row", "bcast", "scalar") if selected else ("full", "scalar")
                form = draw(st.sampled_from(forms))
            return _case(draw, dtype, x, structure, idx, form)

        return cases()

    return layouts.firsts(factory, functools.partial(plain_cases, inputs=inputs, setter=setter))


def _parts(sl: slice) -> tuple:
    """A slice's parts as written: ``1:``, not ``1::``."""
    return (sl.start, sl.stop) if sl.step is None else (sl.start, sl.stop, sl.step)


def _distinct(n: int, dtype: str, start: int = 0) -> np.ndarray:
    """``n`` values of ``dtype`` in which neighbours differ (bools alternate)."""
    values = np.arange(start, start + n)
    return (values % 2 == 1) if dtype == "bool" else values.astype(dtype)


def plain_cases(dtype: str, *, size: int, inputs: bool, setter: bool = False) -> list[Case]:
    """``x[::-1]``, ``x[::2]``, ``x[1:]`` and ``x[:-1]`` on a vector of ``size`` distinct
    values (a wrong reversal or stride cannot agree by luck from two on); parts are inputs
    where ``inputs``."""
    cases = []
    for sl in layouts.PLAIN_SLICES:
        parts = _parts(sl)
        text = ":".join("" if p is None else "s" if inputs else str(p) for p in parts)
        idx = [np.asarray(p, np.int64) for p in parts if p is not None] if inputs else []
        x = _distinct(size, dtype)
        values = [x] if not setter else [x, _distinct(len(x[sl]), dtype, start=5)]
        cases.append(Case((*values, *idx), static_shapes((*values, *idx)), (("index", text),)))
    return cases


ARRAY_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "uint16")
FORMS = ("full", "row", "bcast", "scalar")


def _typed(kind: str, dtype: str) -> str:
    return kind if dtype == "int64" else f"{kind}@{dtype}"


def array1_structures(shape: tuple):
    """The index of AdvancedSubtensor1 (one integer vector on axis 0) of a drawn dtype."""
    return st.sampled_from(ARRAY_DTYPES).map(lambda dtype: _typed("I1", dtype))


def _like_array1(items: list[str]) -> bool:
    """``x[I1, :, ...]``: PyTensor's rewrites make it an AdvancedSubtensor1, another row."""
    return items[0].startswith("I1") and all(item == ":" for item in items[1:])


@st.composite
def advanced_structures(draw, shape: tuple):
    """An advanced index of leading axes of ``shape`` (lengths, or None where not drawn yet):
    integer arrays of rank 1 or 2 (on non-empty axes) of drawn dtypes, or one boolean mask
    over one or two axes, mixed with slices whose parts are omitted or inputs. Shrinks toward
    few items, integer arrays before masks and slices, int64 arrays first."""
    masks = draw(st.booleans())
    items, axis, arrays = [], 0, 0
    while axis < len(shape) and (not arrays or draw(st.booleans())):
        n = shape[axis]
        if draw(st.booleans()) or (masks and arrays) or (not masks and n == 0):
            parts = draw(st.lists(st.sampled_from(("", "s")), min_size=2, max_size=3))
            items.append(":".join(parts))
            axis += 1
        elif masks:
            k = draw(st.integers(1, min(2, len(shape) - axis)))
            items.append(f"B{k}")
            axis, arrays = axis + k, 1
        else:
            kind = f"I{draw(st.integers(1, 2))}"
            items.append(_typed(kind, draw(st.sampled_from(ARRAY_DTYPES))))
            axis, arrays = axis + 1, arrays + 1
    assume(arrays and not _like_array1(items))
    return ", ".join(items)


def getters(structures, *, forms=None):
    """Cases for ``x[structure]`` (``forms``: ``x[structure] = y``, with a y form drawn from
    them) for an x of rank 1 to 3; ``structures(shape)`` draws a structure for x's shape,
    given as None per axis (x's lengths are drawn after, to suit the structure)."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            rank = draw(st.integers(1, 3))
            structure = draw(structures((None,) * rank))
            form = None if forms is None else draw(st.sampled_from(forms))
            return draw(operands(dtype, rank, structure, form))

        return cases()

    return factory


def input_axes(structure: str) -> list[tuple[int, Item]]:
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
            inputs = input_axes(structure)
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


# A release without the dedicated AdvancedSubtensor1 ops (3.3) deprecates their helpers,
# which build the general ops: build those directly, as the helpers would, without the warning.
_ONE_INDEX_OPS = compat.lookup("AdvancedSubtensor1") is not None


def get1(x, *idx, index, values=None):
    if _ONE_INDEX_OPS:
        return ts.advanced_subtensor1(x, *_fed(idx, values))
    return ts.advanced_subtensor(x, *_fed(idx, values))


def set1(x, y, *idx, index, values=None):
    if _ONE_INDEX_OPS:
        return ts.advanced_set_subtensor1(x, y, *_fed(idx, values))
    return ts.advanced_inc_subtensor(x, y, *_fed(idx, values), set_instead_of_inc=True)


def inc1(x, y, *idx, index, values=None):
    if _ONE_INDEX_OPS:
        return ts.advanced_inc_subtensor1(x, y, *_fed(idx, values))
    return ts.advanced_inc_subtensor(x, y, *_fed(idx, values))


def any_op(*inputs, op, index):
    return BUILDERS[op](*inputs, index=index)


# -- random graphs ----------------------------------------------------------------------------
def frozen(values) -> tuple:
    """Index values as graph params, which must hash and print: (dtype, shape, flat values)
    each (a nested list would lose the shape of an empty array)."""
    return tuple((v.dtype.name, v.shape, tuple(v.ravel().tolist())) for v in values)


def thawed(values) -> list[np.ndarray]:
    return [np.asarray(flat, dtype=dtype).reshape(shape) for dtype, shape, flat in values]


def _selected(shapes, params) -> tuple:
    """numpy's selection shape, which PyTensor follows (advanced indices included)."""
    index, values = params["index"], params.get("values")
    inputs = () if values is None else thawed(values)
    return np.broadcast_to(np.int8(0), shapes[0])[index_tuple(index, inputs)].shape


def graph_getters(structures, *, accepts, dtypes=None) -> Composes:
    """Random-graph params for an index ``structures(shape)`` draws for the operand's shape,
    with values drawn as the rows' cases draw them."""

    def params(shape):
        return structures(shape).flatmap(lambda s: index_values(s, shape).map(
            lambda v: (("index", s), ("values", frozen(v)))))

    return Composes(domains=(ANY,), params=params, shape=_selected, dtypes=dtypes,
                    accepts=accepts)


def basic_params(*, inputs: bool):
    """Random-graph params for a basic index of an operand's leading axes (``basic_indices``;
    its inputs become constants there)."""
    return lambda shape: basic_indices(shape, inputs=inputs).map(
        lambda drawn: (("index", drawn[0]), ("values", frozen(drawn[1]))))


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
ADVANCED_GETS = graph_getters(advanced_structures, accepts=lambda shape: len(shape) > 0,
                              dtypes=dtypes.ALL)
ARRAY1_GETS = graph_getters(array1_structures, accepts=lambda shape: bool(shape and shape[0]))
ARRAY1_CASES = getters(array1_structures)
ARRAY1_SET_CASES = getters(array1_structures, forms=FORMS)
ADVANCED_CASES = getters(advanced_structures)
ADVANCED_SET_CASES = getters(advanced_structures, forms=FORMS)
BASIC_GETS = Composes(domains=(ANY,), params=basic_params(inputs=True), shape=_selected,
                      accepts=lambda shape: len(shape) > 0)
BASIC_CONST_GETS = Composes(domains=(ANY,), params=basic_params(inputs=False), shape=_selected,
                            accepts=lambda shape: len(shape) > 0)
BASIC_SETS = graph_setters(covering_slices)
ARRAY1_SETS = graph_setters(functools.partial(covering_arrays, pair=False), dtypes=dtypes.ALL)
ADVANCED_SETS = graph_setters(covering_arrays)

OUT_OF_BOUNDS = [("get", 1, "i", None), ("get1", 2, "I1@int32", None), ("get", 2, "I1, I1", None),
                 ("set1", 1, "I1", "full"), ("inc", 2, ":, I2@int8", "scalar"),
                 ("set", 2, "i, :", "row")]
BUILDERS = {"get": get, "get1": get1, "set": set_, "inc": inc, "set1": set1, "inc1": inc1}
