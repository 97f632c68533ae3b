"""Indexing: basic and advanced subtensors and their set/increment counterparts.

Every getter lowers onto :func:`_select`, which applies a numpy index tuple to an ONNX value.
Every setter reuses it on a tensor of flat positions (``arange(x.size)`` shaped like ``x``):
selecting from that tensor gives the flat position of each selected element, so the update
becomes a 1-D scatter whatever the index structure (slices, integers, arrays, masks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pytensor.graph.basic import Constant
from pytensor.tensor.subtensor import (
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    IncSubtensor,
    Subtensor,
    indices_from_subtensor,
)
from pytensor.tensor.type_other import MakeSlice, NoneTypeT, SliceType

from converter import compat
from converter._core import Context, convert_op

INT64_MAX, INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


@convert_op.register(MakeSlice)
def _make_slice(op, ctx: Context, node):
    """A slice object (PyTensor < 3 passes these to advanced indexing); it has no ONNX value:
    the indexing rules read its inputs, so only a placeholder name is bound."""
    return [ctx.fresh("slice")]


# -- index entries ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Slice:
    start: object  # None, a Python int, or a 0-d int64 ONNX name
    stop: object
    step: object


@dataclass(frozen=True)
class _Int:
    """A basic integer index: removes its axis."""

    name: str


@dataclass(frozen=True)
class _Array:
    """An advanced (integer array) index of rank ``ndim``."""

    name: str
    ndim: int


_NEWAXIS = object()


def _int64(ctx: Context, var):
    """A slice bound as a Python int (constants) or a 0-d int64 ONNX name; None stays None."""
    if var is None or isinstance(var, int | np.integer):
        return None if var is None else int(var)
    if isinstance(var.type, NoneTypeT):
        return None
    if isinstance(var, Constant):
        return int(var.data)
    return ctx.cast(ctx.name_of(var), var.type.dtype, "int64")


def _slice_of(ctx: Context, var) -> _Slice:
    if isinstance(var, slice):
        parts = (var.start, var.stop, var.step)
    elif isinstance(var, Constant):
        parts = (var.data.start, var.data.stop, var.data.step)
    else:
        parts = var.owner.inputs
    return _Slice(*(_int64(ctx, p) for p in parts))


def _entries(ctx: Context, op, index_inputs, advanced: bool) -> list:
    """The op's index tuple as entries; boolean masks become their nonzero() coordinates."""
    idx_list = getattr(op, "idx_list", None)
    # PyTensor < 3 gives advanced ops their indices directly, without an idx_list.
    indices = indices_from_subtensor(index_inputs, idx_list) if idx_list else tuple(index_inputs)
    entries = []
    for idx in indices:
        if isinstance(idx, slice) or isinstance(getattr(idx, "type", None), SliceType):
            entries.append(_slice_of(ctx, idx))
        elif isinstance(idx.type, NoneTypeT):
            entries.append(_NEWAXIS)
        elif idx.type.dtype == "bool":
            nonzero = ctx.add("NonZero", [ctx.name_of(idx)])
            entries.extend(
                _Array(ctx.add("Gather", [nonzero, ctx.constant(j, np.int64)], axis=0), 1)
                for j in range(idx.type.ndim)
            )
        else:
            name = ctx.cast(ctx.name_of(idx), idx.type.dtype, "int64")
            entries.append(_Array(name, idx.type.ndim) if advanced else _Int(name))
    return entries


# -- selection --------------------------------------------------------------------------------
def _vector(ctx: Context, items) -> str:
    """A 1-D int64 tensor from Python ints and 0-d int64 names."""
    if all(isinstance(i, int) for i in items):
        return ctx.constant(np.asarray(items, dtype=np.int64))
    one = ctx.constant(np.asarray([1], dtype=np.int64))
    parts = [ctx.constant(np.asarray([i], dtype=np.int64)) if isinstance(i, int)
             else ctx.add("Reshape", [i, one]) for i in items]
    return ctx.add("Concat", parts, axis=0)


def _by_step_sign(ctx: Context, step, if_pos: int, if_neg: int):
    """A default slice bound, which numpy picks by the sign of the step."""
    if step is None or isinstance(step, int):
        return if_neg if step is not None and step < 0 else if_pos
    negative = ctx.add("Less", [step, ctx.constant(0, np.int64)])
    return ctx.add("Where", [negative, ctx.constant(if_neg, np.int64),
                             ctx.constant(if_pos, np.int64)])


def _stop_before_start(ctx: Context, x: str, axis: int, e: _Slice, stop):
    """With a negative step, numpy makes a start below ``-n`` select nothing, while ONNX Slice
    clamps it to 0 and selects element 0: a stop of 0 then empties the ONNX slice too."""
    if e.step is None or (isinstance(e.step, int) and e.step > 0):
        return stop
    if e.start is None or (isinstance(e.start, int) and e.start >= 0):
        return stop
    n = ctx.add("Gather", [ctx.add("Shape", [x]), ctx.constant(axis, np.int64)], axis=0)
    start = e.start if isinstance(e.start, str) else ctx.constant(e.start, np.int64)
    zero = ctx.constant(0, np.int64)
    before = ctx.add("Less", [ctx.add("Add", [start, n]), zero])
    if isinstance(e.step, str):
        before = ctx.add("And", [before, ctx.add("Less", [e.step, zero])])
    stop = stop if isinstance(stop, str) else ctx.constant(stop, np.int64)
    return ctx.add("Where", [before, zero, stop])


def _apply_slices(ctx: Context, x: str, entries) -> str:
    """One ONNX Slice for every non-trivial slice entry. ONNX Slice clamps out-of-range bounds
    as numpy does but for a start below ``-n`` with a negative step (see
    :func:`_stop_before_start`); missing bounds become INT64_MAX/INT64_MIN by the step's sign."""
    axes, starts, stops, steps = [], [], [], []
    for axis, e in enumerate(entries):
        if not isinstance(e, _Slice) or (e.start, e.stop, e.step) == (None, None, None):
            continue
        axes.append(axis)
        starts.append(e.start if e.start is not None
                      else _by_step_sign(ctx, e.step, 0, INT64_MAX))
        stop = e.stop if e.stop is not None else _by_step_sign(ctx, e.step, INT64_MAX, INT64_MIN)
        stops.append(_stop_before_start(ctx, x, axis, e, stop))
        steps.append(1 if e.step is None else e.step)
    if not axes:
        return x
    return ctx.add("Slice", [x, _vector(ctx, starts), _vector(ctx, stops),
                             ctx.constant(np.asarray(axes, dtype=np.int64)), _vector(ctx, steps)])


def _gather_arrays(ctx: Context, x: str, rank: int, entries) -> str:
    """numpy advanced indexing: the index arrays broadcast to a shape B and pick elements with
    GatherND from ``x`` transposed to put their axes first. B lands first, or where the arrays
    stand when they are adjacent in the index tuple (numpy's rule). One array is a Gather."""
    adv = [a for a, e in enumerate(entries) if isinstance(e, _Array)]
    if len(adv) == 1:
        return ctx.add("Gather", [x, entries[adv[0]].name], axis=adv[0])
    arrays = [entries[a].name for a in adv]
    rest = [a for a in range(rank) if a not in adv]
    if adv != list(range(len(adv))):
        x = ctx.add("Transpose", [x], perm=adv + rest)
    common = arrays[0]
    for name in arrays[1:]:
        common = ctx.add("Expand", [common, ctx.add("Shape", [name])])
    shape_b = ctx.add("Shape", [common])
    minus_one = ctx.constant(np.asarray([-1], dtype=np.int64))
    coords = [ctx.add("Unsqueeze", [ctx.add("Expand", [a, shape_b]), minus_one]) for a in arrays]
    stacked = coords[0] if len(coords) == 1 else ctx.add("Concat", coords, axis=-1)
    out = ctx.add("GatherND", [x, stacked])
    nb, first = max(entries[a].ndim for a in adv), adv[0]
    adjacent = adv == list(range(first, first + len(adv)))
    if adjacent and first > 0 and nb > 0:
        perm = [*range(nb, nb + first), *range(nb), *range(nb + first, nb + len(rest))]
        out = ctx.add("Transpose", [out], perm=perm)
    return out


def _select(ctx: Context, x: str, rank: int, entries) -> str:
    """``x[entries]`` with numpy semantics, for ``x`` of rank ``rank``."""
    if any(e is _NEWAXIS for e in entries):
        new = [i for i, e in enumerate(entries) if e is _NEWAXIS]
        x = ctx.add("Unsqueeze", [x, ctx.constant(np.asarray(new, dtype=np.int64))])
        entries = [_Slice(None, None, None) if e is _NEWAXIS else e for e in entries]
        rank += len(new)
    entries = list(entries) + [_Slice(None, None, None)] * (rank - len(entries))
    x = _apply_slices(ctx, x, entries)
    for axis in reversed(range(rank)):
        if isinstance(entries[axis], _Int):
            x = ctx.add("Gather", [x, entries[axis].name], axis=axis)
    if any(isinstance(e, _Array) for e in entries):
        x = _gather_arrays(ctx, x, rank, entries)
    return x


# -- getters ----------------------------------------------------------------------------------
@convert_op.register(Subtensor)
@convert_op.register(AdvancedSubtensor)
def _subtensor(op, ctx: Context, node):
    """numpy indexing. Out-of-range slice bounds clamp in both; integer and array indices out
    of bounds raise in PyTensor and are errors in ONNX (Gather, GatherND)."""
    x, *index_inputs = node.inputs
    advanced = not isinstance(op, Subtensor)
    entries = _entries(ctx, op, index_inputs, advanced)
    out = _select(ctx, ctx.name_of(x), x.type.ndim, entries)
    return [out if out != ctx.name_of(x) else ctx.add("Identity", [out])]


# -- setters ----------------------------------------------------------------------------------
@convert_op.register(IncSubtensor)
@convert_op.register(AdvancedIncSubtensor)
def _inc_subtensor(op, ctx: Context, node):
    """``x[idx] = y`` or ``x[idx] += y`` on a copy of x.

    Flat positions of the selected elements come from :func:`_select` on ``arange`` and y is
    broadcast to the selection. Increments accumulate every repeated position (``np.add.at``,
    what PyTensor does) with ScatterElements(reduction="add"); on bool, ``+`` is logical or.
    ONNX leaves the winner among repeated positions undefined for a plain scatter, so a set
    picks it explicitly: the last one, as PyTensor (numpy) does. ScatterElements with
    reduction="max" of ``n + update ordinal`` onto ``arange(n)`` gives, per element, either
    its own position or ``n +`` the last update's ordinal: a Gather from ``concat(x, y)``.
    ``ignore_duplicates`` increments are sets of ``x[idx] + y`` (numpy's ``x[idx] += y``).
    """
    x, y, *index_inputs = node.inputs
    dtype = x.type.dtype
    ignore_duplicates = getattr(op, "ignore_duplicates", False)  # absent from old PyTensor
    accumulate = not op.set_instead_of_inc and not ignore_duplicates
    if accumulate and dtype != "bool" and x.type.ndim == 1 and _vector_index(op, index_inputs):
        return [_inc_vector(ctx, x, y, index_inputs[0])]
    entries = _entries(ctx, op, index_inputs, not isinstance(op, IncSubtensor))
    shape = ctx.add("Shape", [ctx.name_of(x)])
    flat = ctx.constant(np.asarray([-1], dtype=np.int64))
    zero, one = ctx.constant(0, np.int64), ctx.constant(1, np.int64)
    n = ctx.add("Size", [ctx.name_of(x)])
    arange = ctx.add("Range", [zero, n, one])
    positions = _select(ctx, ctx.add("Reshape", [arange, shape], allowzero=1), x.type.ndim, entries)
    y_name = ctx.cast(ctx.name_of(y), y.type.dtype, dtype)
    updates = ctx.add("Reshape", [ctx.add("Expand", [y_name, ctx.add("Shape", [positions])]), flat])
    positions = ctx.add("Reshape", [positions, flat])
    x_flat = ctx.add("Reshape", [ctx.name_of(x), flat])

    if ignore_duplicates and not op.set_instead_of_inc:
        current = ctx.add("Gather", [x_flat, positions], axis=0)
        updates = ctx.add("Or" if dtype == "bool" else "Add", [current, updates])
    if accumulate and dtype != "bool":
        out = ctx.add_typed("ScatterElements", [x_flat, positions, updates], dtype,
                            data=(0, 2), axis=0, reduction="add")
        return [ctx.add("Reshape", [out, shape], allowzero=1)]

    ordinals = ctx.add("Add", [ctx.add("Range", [zero, ctx.add("Size", [positions]), one]), n])
    if accumulate:
        # bool or-accumulation: only true updates win, and each of them writes True.
        ordinals = ctx.add("Where", [updates, ordinals, ctx.constant(-1, np.int64)])
    winner = ctx.add("ScatterElements", [arange, positions, ordinals], axis=0, reduction="max")
    out = ctx.add("Gather", [ctx.add("Concat", [x_flat, updates], axis=0), winner], axis=0)
    return [ctx.add("Reshape", [out, shape], allowzero=1)]


def _vector_index(op, index_inputs) -> bool:
    """Whether the op indexes axis 0 with one integer vector and nothing else: PyTensor < 3.3
    has AdvancedIncSubtensor1 for it, 3.3 an AdvancedIncSubtensor whose idx_list is ``(0,)``."""
    if isinstance(op, _INC_VECTOR_OPS):
        return True
    if getattr(op, "idx_list", None) != (0,) or len(index_inputs) != 1:
        return False
    idx = index_inputs[0]
    return idx.type.ndim == 1 and idx.type.dtype.startswith(("int", "uint"))


def _inc_vector(ctx: Context, x, y, index) -> str:
    """``x[idx] += y`` on a vector (a gather's gradient): one ScatterElements, which takes
    negative indices as numpy does and adds every repeated position; only a broadcast y
    needs expanding to the indices' length first."""
    idx = ctx.cast(ctx.name_of(index), index.type.dtype, "int64")
    updates = ctx.cast(ctx.name_of(y), y.type.dtype, x.type.dtype)
    if y.type.ndim == 0 or y.type.shape[0] == 1:
        updates = ctx.add("Expand", [updates, ctx.add("Shape", [idx])])
    return ctx.add_typed("ScatterElements", [ctx.name_of(x), idx, updates], x.type.dtype,
                         data=(0, 2), axis=0, reduction="add")


# PyTensor < 3.3 has ops of their own for indexing axis 0 with one integer vector
for _cls in compat.present("AdvancedSubtensor1"):
    convert_op.register(_cls)(_subtensor)
for _cls in compat.present("AdvancedIncSubtensor1"):
    convert_op.register(_cls)(_inc_subtensor)
_INC_VECTOR_OPS = compat.present("AdvancedIncSubtensor1")
