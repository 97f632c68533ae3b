"""Indexing: basic and advanced subtensors and their set/increment forms, and their records.

The index structures, their values and the case factories are in
``conformance/strategies/subtensors.py``.
"""

from __future__ import annotations

import numpy as np

from conformance.jax_records import without_jax
from conformance.registry import (
    C_BACKENDS,
    JAX_BACKENDS,
    NOT_REFERENCE,
    NUMBA_BACKENDS,
    ORT_BACKENDS,
    Blame,
    Case,
    Row,
)
from conformance.strategies import ANY, dtypes
from conformance.strategies.subtensors import (
    ADVANCED_CASES,
    ADVANCED_GETS,
    ADVANCED_SET_CASES,
    ADVANCED_SETS,
    ARRAY1_CASES,
    ARRAY1_GETS,
    ARRAY1_SET_CASES,
    ARRAY1_SETS,
    BASIC_CONST_GETS,
    BASIC_GETS,
    BASIC_SETS,
    OUT_OF_BOUNDS,
    any_op,
    basics,
    get,
    get1,
    inc,
    inc1,
    inc_last,
    index_tuple,
    input_axes,
    out_of_bounds,
    parse,
    set1,
    set_,
    static_shapes,
)

ALL = dtypes.ALL
ONNX_BACKENDS = (*ORT_BACKENDS, "onnx-reference")


def example(x, *indices, index: str, y=None, op: str | None = None):
    """A dtype -> Case function: ``x`` and ``y`` (setters only) take the test's dtype, the
    index inputs keep their own; ``op`` is for the out-of-bounds row."""

    def make(dtype: str) -> Case:
        data = [x] if y is None else [x, y]
        values = [np.asarray(v, dtype=dtype) for v in data] + [np.asarray(i) for i in indices]
        params = (("index", index),) if op is None else (("op", op), ("index", index))
        return Case(tuple(values), static_shapes(values), params)

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
# code of the 1-D case checks correctly; other cases fall back to ``perform``, so where the
# check raises, both C backends raise with the reference (measured on 2.38 and 3.0.7): they
# share its fault.
SPURIOUS_BROADCAST_ERROR = {  # PyTensor's JAX dispatch runs the same check: not JAX's
    "backends": without_jax(NOT_REFERENCE), "blame": Blame.PYTENSOR,
    "cause": "advinc1-perform-broadcast-check", "versions": "pytensor<3.3",
    "reason": "AdvancedIncSubtensor1.perform misaligns y against x and the index and raises a "
              "spurious runtime-broadcasting error on a valid y",
    "match": "pytensor-py raised ValueError: Runtime broadcasting not allowed",
    "when": pytensor_broadcast_check_raises,
}


# The default rewrites make a one-array-index set/inc an AdvancedIncSubtensor1, whose float16
# version has no C code and runs perform, with the check above.
C_OPT_FLOAT16_BROADCAST = {
    "backends": ("pytensor-c-opt",), "dtypes": ("float16",), "blame": Blame.PYTENSOR,
    "cause": "advinc1-perform-broadcast-check", "versions": "pytensor<3.3",
    "reason": "the default rewrites make it an AdvancedIncSubtensor1, whose float16 perform "
              "raises a spurious runtime-broadcasting error on a valid y",
    "match": "pytensor-c-opt raised ValueError: Runtime broadcasting not allowed",
    "example": example([0.0, 0.0], [[0.0]], np.zeros((1, 1), np.int64), index="I2"),
}


# The JAX mode makes a one-array-index set/inc an AdvancedIncSubtensor1 as well, and its JAX
# dispatch runs the same check, for every dtype.
JAX_OPT_BROADCAST = {
    **C_OPT_FLOAT16_BROADCAST, "backends": ("pytensor-jax-opt",), "dtypes": None,
    "versions": None,
    "reason": "the JAX mode makes it an AdvancedIncSubtensor1, whose JAX dispatch runs "
              "perform's check and raises a spurious runtime-broadcasting error on a valid y",
    "match": "pytensor-jax-opt raised ValueError: Runtime broadcasting not allowed. "
             "AdvancedIncSubtensor1",
}
# PyTensor's JAX rewrite of a boolean-mask set/inc (jax_boolean_indexing_set_or_inc) makes
# it a switch, whose runtime-broadcast check refuses a y that numpy broadcasts.
JAX_MASK_SET = {
    "backends": JAX_BACKENDS, "blame": Blame.PYTENSOR, "cause": "jax-boolean-set-switch",
    "reason": "JAX's boolean-mask set/inc is rewritten to a switch, whose runtime-broadcast "
              "check refuses a y that numpy broadcasts",
    "match": "Runtime broadcasting not allowed. At least one input has a distinct dimension|"
             "Incompatible shapes for broadcasting",
    "when": lambda case: "B" in dict(case.params)["index"],
}
# jnp's .at[].add refuses bools, which PyTensor increments with an or.
JAX_INC_BOOL = {
    "backends": JAX_BACKENDS, "dtypes": ("bool",), "blame": Blame.PYTENSOR,
    "cause": "jax-inc-subtensor-bool",
    "reason": "JAX's inc_subtensor of bools raises (jax.numpy's add does not take bool); "
              "PyTensor increments bools with an or",
    "match": "raised TypeError: add does not accept dtype bool",
}


def duplicates_counted_once(case: Case) -> bool:
    """An index that names one element twice: ``x[idx] += y`` (ignore_duplicates) adds y
    once there, ``np.add.at`` as often as it is named."""
    x, y, *indices = case.values
    try:
        idx = index_tuple(dict(case.params)["index"], indices)
        once, each = x.copy(), x.copy()
        with np.errstate(all="ignore"):
            once[idx] += y
            np.add.at(each, idx, y)
    except (IndexError, ValueError, TypeError):
        return False
    return not np.array_equal(once, each, equal_nan=True)


def one_index_onto_rows(case: Case) -> bool:
    """``x[a] = y`` (or ``x[:, a] = y``, the indexed axis moved first) for an x of rank 2 or
    more, the indexed axis not of length 1, and an index array ``a`` of one element beside
    ``:``s only: rewritten, y becomes ``(1, *other axes)``, whose leading 1 PyTensor's check
    aligns against the indexed axis."""
    x, items = case.values[0], parse(dict(case.params)["index"])
    arrays = [k for k, i in enumerate(items) if i.kind == "array"]
    return (x.ndim >= 2 and len(arrays) == 1 and x.shape[arrays[0]] != 1
            and case.values[2].size == 1
            and all(i.parts == (None, None, None) for k, i in enumerate(items) if k != arrays[0]))


# The same AdvancedIncSubtensor1 for an x of rank 2 or more, whose C code it leaves to perform.
C_OPT_ROWS_BROADCAST = {
    "backends": ("pytensor-c-opt",), "blame": Blame.PYTENSOR,
    "cause": "advinc1-perform-broadcast-check", "versions": "pytensor<3.3",
    "reason": "the default rewrites make it an AdvancedIncSubtensor1 with y reshaped to "
              "(index size, *x.shape[1:]); for an x of rank 2 or more it runs perform, which "
              "raises a spurious runtime-broadcasting error where the index has one element",
    "match": "pytensor-c-opt raised ValueError: Runtime broadcasting not allowed",
    "when": one_index_onto_rows,
    "example": example(np.zeros((2, 0)), np.zeros((1, 1), np.int64), y=np.zeros((1, 1, 0)),
                       index="I2"),
}


def add_at_misreads_y(case: Case) -> bool:
    """numpy's ``add.at`` (AdvancedIncSubtensor.perform's) gives another result for this
    case's y than for y broadcast beforehand (numpy 2.4 reads a y that broadcasts over a 2-d
    index array past its buffer)."""
    x, y, *indices = case.values
    try:
        idx = index_tuple(dict(case.params)["index"], indices)
        target = x[idx].shape
        with np.errstate(all="ignore"):
            as_given, broadcast = x.copy(), x.copy()
            np.add.at(as_given, idx, y)
            np.add.at(broadcast, idx, np.broadcast_to(y, target))
    except (IndexError, ValueError, TypeError):
        return False
    return not np.array_equal(as_given, broadcast, equal_nan=x.dtype.kind in "fc")


def adds_float16_twice(case: Case) -> bool:
    """A float16 inc that adds to some element more than once (a repeated index)."""
    return case.values[0].dtype == np.float16 and any(
        i.dtype.kind in "iu" and i.size > np.unique(i).size for i in case.values[2:])


# ONNX Runtime has no float16 scatter-add: the converter adds in float32 (exactly cast) and
# rounds once, where PyTensor rounds each addition to float16 (ONNX Runtime's own float16
# chains do the same, its declared ``widens``; the reference evaluator runs the model)
FLOAT16_ADDED_IN_FLOAT32 = {
    "backends": ("onnx-reference",), "dtypes": ("float16",), "blame": Blame.CONVERTER,
    "reason": "semantic choice: the model adds float16 updates in float32 and rounds once (ONNX "
              "Runtime has no float16 scatter-add), so a repeated index's sum is rounded once",
    "match": "abs err", "when": adds_float16_twice,
    "example": example(np.zeros((1, 1, 2)), np.array([0, 0, 0]),
                       y=[[[65504.0, 1.0], [1.0, 1.0], [-65504.0, 1.0]]], index=":, I1"),
}


# The reference's own fault: every backend that adds y as broadcast disagrees with it (the C
# ones run the same perform)
NUMPY_ADD_AT_BROADCAST = {
    "backends": (*ONNX_BACKENDS, *NUMBA_BACKENDS, *JAX_BACKENDS),
    "dtypes": tuple(d for d in ALL if d != "bool"), "blame": Blame.PYTENSOR,
    "cause": "numpy-add-at-broadcast-values",
    "reason": "perform's numpy.add.at (numpy 2.4) reads a y that broadcasts over a 2-d index "
              "array past its buffer: additions go missing or add garbage",
    "when": add_at_misreads_y,
    "example": example([0, 0, 0, 0], [[0, 0], [3, 0], [0, 0]], y=[1, 2], index="I2"),
}


def mask_mismatch(case: Case) -> bool:
    """A boolean mask whose shape differs from the axes of x it indexes."""
    x, *inputs = case.values
    axes = input_axes(dict(case.params)["index"])
    return any(item.kind == "mask" and v.shape != x.shape[axis:axis + v.ndim]
               for v, (axis, item) in zip(inputs, axes, strict=True))



ROWS = [
    Row("subtensor", get, basics(inputs=True), ALL, compose=BASIC_GETS, grid=(ANY,)),
    Row("subtensor_const", get, basics(inputs=False), ALL, compose=BASIC_CONST_GETS, grid=(ANY,)),
    Row("advanced_subtensor1", get1, ARRAY1_CASES, ALL, compose=ARRAY1_GETS, grid=(ANY,)),
    Row("advanced_subtensor", get, ADVANCED_CASES, ALL, compose=ADVANCED_GETS, grid=(ANY,))
    .xfail(backends=ONNX_BACKENDS, blame=Blame.CONVERTER,
           reason="semantic gap: PyTensor raises on a mask shaped unlike the axes it indexes; "
                  "ONNX cannot raise, so the model returns a selection",
           match="pytensor-py raised IndexError: boolean index did not match", when=mask_mismatch,
           example=example([1, 2, 3], [True, False], index="B1"))
    # shows where a drawn layout is the example's (``B1`` on a vector), which Numba compiles
    .xfail(backends=NUMBA_BACKENDS, blame=Blame.PYTENSOR, cause="numba-index-unchecked",
           reason="Numba's boolean-mask indexing checks no mask shape: it returns a selection "
                  "where PyTensor's Python and C raise",
           match="returned .* but pytensor-py raised IndexError: boolean index did not match",
           when=mask_mismatch, example=example([1, 2, 3], [True, False], index="B1")),
    Row("set_subtensor", set_, basics(inputs=True, setter=True), ALL, compose=BASIC_SETS,
        grid=(ANY, ANY)),
    Row("inc_subtensor", inc, basics(inputs=True, setter=True), ALL, compose=BASIC_SETS,
        grid=(ANY, ANY))
    .xfail(**JAX_INC_BOOL, example=example([False], np.int64(0), y=True, index="i")),
    Row("advanced_set_subtensor1", set1, ARRAY1_SET_CASES, ALL, compose=ARRAY1_SETS,
        grid=(ANY, ANY))
    .xfail_apart({**SPURIOUS_BROADCAST_ERROR,
                  "example": example([[0], [1]], [0, 1], y=[1], index="I1")},
                 backends=C_BACKENDS, before=None, shared=True),
    Row("advanced_inc_subtensor1", inc1, ARRAY1_SET_CASES, ALL, compose=ARRAY1_SETS,
        grid=(ANY, ANY))
    .xfail_apart({**SPURIOUS_BROADCAST_ERROR,
                  "example": example([[0], [1]], [0, 1], y=[1], index="I1")},
                 backends=C_BACKENDS, before=None, shared=True)
    .xfail(backends=C_BACKENDS, dtypes=("bool",), blame=Blame.PYTENSOR,
           reason="C AdvancedIncSubtensor1 adds a repeated index's bools as bytes, so "
                  "True + True is stored as the byte 2",
           match=r"holds the byte \d+, not a bool",
           example=example([False], [True, True], [0, 0], index="I1"))
    .xfail(**JAX_INC_BOOL, example=example([False], [0], y=[True], index="I1")),
    Row("advanced_set_subtensor", set_, ADVANCED_SET_CASES, ALL, compose=ADVANCED_SETS,
        grid=(ANY, ANY))
    .xfail(**C_OPT_FLOAT16_BROADCAST)
    .xfail(**C_OPT_ROWS_BROADCAST)
    .xfail(**JAX_OPT_BROADCAST)
    .xfail(**JAX_MASK_SET, example=example(np.zeros((0, 0, 1)), np.zeros(0, bool), y=0,
                                           index="B1, :")),
    Row("advanced_inc_subtensor", inc, ADVANCED_SET_CASES, ALL, compose=ADVANCED_SETS,
        grid=(ANY, ANY))
    .xfail(backends=("pytensor-c-opt",), dtypes=("bool",), blame=Blame.PYTENSOR,
           reason="the inplace C AdvancedIncSubtensor adds a repeated index's bools as bytes, "
                  "so True + True is stored as the byte 2",
           match=r"holds the byte \d+, not a bool",
           example=example([False], [[True, True]], [[0, 0]], index="I2"))
    .xfail(**C_OPT_FLOAT16_BROADCAST)
    .xfail(**C_OPT_ROWS_BROADCAST)
    .xfail(**JAX_OPT_BROADCAST)
    .xfail(**JAX_MASK_SET, example=example(np.zeros((0, 0, 1)), np.zeros((0, 0), bool), y=0,
                                           index="B2, :"))
    .xfail(**JAX_INC_BOOL, example=example([False], [[0]], y=[[True]], index="I2"))
    .xfail(**NUMPY_ADD_AT_BROADCAST).xfail(**FLOAT16_ADDED_IN_FLOAT32),
    Row("advanced_inc_subtensor_last", inc_last, ADVANCED_SET_CASES, ALL,
        compose=ADVANCED_SETS, grid=(ANY, ANY))
    .xfail(**JAX_MASK_SET, example=example(np.zeros((0, 0, 1)), np.zeros((0, 0), bool), y=0,
                                           index="B2, :"))
    .xfail(**JAX_INC_BOOL, example=example([False], [[0]], y=[[True]], index="I2"))
    .xfail(backends=JAX_BACKENDS, dtypes=tuple(d for d in ALL if d != "bool"),
           blame=Blame.PYTENSOR, cause="jax-inc-ignore-duplicates",
           reason="JAX's inc_subtensor ignores ignore_duplicates=True: a twice-named element "
                  "gets y twice (.at[].add), where x[idx] += y adds it once",
           match="exact match required|abs err", when=duplicates_counted_once,
           example=example([0], [[0, 0]], y=[[1, 1]], index="I2")),
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
                           index="I1, I1"))
    # Python raises the spurious broadcasting error before it looks at the index
    .xfail(**{**SPURIOUS_BROADCAST_ERROR, "backends": NUMBA_BACKENDS,
              "when": lambda case: dict(case.params)["op"] in ("set1", "inc1")
              and pytensor_broadcast_check_raises(case)},
           example=example(np.zeros(2), np.array([2]), y=np.zeros(1), op="set1", index="I1"))
    .xfail(backends=JAX_BACKENDS, blame=Blame.PYTENSOR, cause="jax-index-unchecked",
           reason="JAX clamps an out-of-range index (reads the nearest element, drops the "
                  "write) where PyTensor's Python and C raise IndexError",
           match="returned .* but pytensor-py raised IndexError",
           example=example(np.zeros(1), np.int64(1), op="get", index="i")),
]
