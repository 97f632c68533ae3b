"""Miscellaneous ops: identity-like wrappers of compiled graphs, runtime checks, wrapped
graphs (OpFromGraph, Pad), Repeat, Unique, Nonzero, FillDiagonal(Offset), Searchsorted.
"""

from __future__ import annotations

import numpy as np
import pytensor.scalar.basic as ps
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.ops import DeepCopyOp, ViewOp
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.basic import Nonzero
from pytensor.tensor.extra_ops import (
    FillDiagonal,
    FillDiagonalOffset,
    Repeat,
    SearchsortedOp,
    Unique,
)

from converter import compat
from converter._core import Context, convert_op
from converter.errors import UnsupportedOpError, warn_check_dropped

# ViewOp's base class (also of SpecifyAssumptions), where the release has one
TypeCastingOp = compat.lookup("TypeCastingOp") or ViewOp
Pad = compat.lookup("Pad")


def _ints(ctx: Context, values) -> str:
    return ctx.constant(np.asarray(values, dtype=np.int64), hint="i64")


def _dim(ctx: Context, x: str, axis: int) -> str:
    """Length of ``x`` along ``axis`` as a 1-element int64 vector."""
    return ctx.add("Shape", [x], start=axis, end=axis + 1)


def _scalar(ctx: Context, vec1: str) -> str:
    return ctx.add("Squeeze", [vec1, _ints(ctx, [0])])


def _count_true(ctx: Context, flags: str) -> str:
    """Per-row count of True in a [m, n] bool matrix, as int64 [m]. The axis is given as
    1, not -1: ONNX Runtime's ReduceSum hands back an empty input unchanged for a
    negative axis."""
    ones = ctx.cast(flags, "bool", "int64")
    return ctx.add("ReduceSum", [ones, _ints(ctx, [1])], keepdims=0)


def _range(ctx: Context, start: str, stop: str) -> str:
    """int64 ``arange(start, stop)`` from 0-d int64 bounds."""
    return ctx.add("Range", [start, stop, ctx.constant(np.int64(1))])


# -- identity-like ops -------------------------------------------------------------


def _identity(op, ctx: Context, node):
    """Copies, views (ViewOp subclasses such as the gradient markers and debug mode's
    OutputGuard) and graph-level type casts change no value: Identity."""
    (x,), (out,) = node.inputs[:1], node.outputs
    if np.dtype(x.type.dtype) != np.dtype(out.type.dtype):
        raise UnsupportedOpError(op, [x.type], f"changes dtype to {out.type.dtype}")
    return [ctx.add("Identity", [ctx.name_of(x)])]


for _cls in {DeepCopyOp, ViewOp, TypeCastingOp}:
    convert_op.register(_cls)(_identity)


@convert_op.register(CheckAndRaise)
def _check_and_raise(op, ctx: Context, node):
    """Assert / CheckAndRaise return their first input or raise when a condition is false.
    ONNX cannot raise, so the value passes through unchecked (a recorded semantic gap), with a
    ``RuntimeCheckDropped`` warning once per conversion."""
    warn_check_dropped(ctx, op, "that its conditions hold")
    return [ctx.add("Identity", [ctx.name_of(node.inputs[0])])]


@convert_op.register(OpFromGraph)
def _op_from_graph(op, ctx: Context, node):
    """The wrapped graph is inlined: its inputs are bound to the node's input values and
    each inner node is converted by its own rule."""
    inner = op.fgraph
    for var, outer in zip(inner.inputs, node.inputs, strict=True):
        ctx.bind(var, ctx.name_of(outer))
    for inner_node in inner.toposort():
        outs = convert_op(inner_node.op, ctx, inner_node)
        for var, name in zip(inner_node.outputs, outs, strict=True):
            ctx.bind(var, name)
    return [ctx.name_of(v) for v in inner.outputs]


# -- Repeat ------------------------------------------------------------------------


@convert_op.register(Repeat)
def _repeat(op, ctx: Context, node):
    """numpy.repeat with one count per element along ``axis`` (a single count applies to
    every element). ONNX has no repeat: output position p copies input index
    #{j : cumsum(counts)[j] <= p}, which Gather then picks. Negative counts, on which
    numpy raises, are not detected."""
    x, reps = node.inputs
    data, axis = ctx.name_of(x), op.axis
    if axis is None:  # older PyTensor: flatten first
        data, axis = ctx.add("Reshape", [data, _ints(ctx, [-1])]), 0
    counts = ctx.cast(ctx.name_of(reps), reps.type.dtype, "int64")
    counts = ctx.add("Expand", [counts, _dim(ctx, data, axis)])
    ends = ctx.add("CumSum", [counts, ctx.constant(np.int64(0))])
    total = ctx.add("ReduceSum", [counts], keepdims=0)
    positions = ctx.add("Unsqueeze", [_range(ctx, ctx.constant(np.int64(0)), total),
                                      _ints(ctx, [1])])
    passed = ctx.add("LessOrEqual", [ctx.add("Unsqueeze", [ends, _ints(ctx, [0])]), positions])
    return [ctx.add("Gather", [data, _count_true(ctx, passed)], axis=axis)]


# -- Pad ---------------------------------------------------------------------------


def _pad_index(ctx: Context, mode: str, size: str, before: str, after: str) -> str:
    """Source index of every output position along one axis, numpy.pad's rules for any
    pad width: reflect has period 2(n-1), symmetric 2n, wrap n, edge clamps. Periods are
    kept >= 1 so an empty axis gives an out-of-range Gather (an error) instead of a
    division by zero."""
    one = ctx.constant(np.int64(1))
    positions = _range(ctx, ctx.add("Neg", [before]), ctx.add("Add", [size, after]))
    if mode == "edge":
        return ctx.add("Clip", [positions, ctx.constant(np.int64(0)), ctx.add("Sub", [size, one])])
    period = {"wrap": size, "symmetric": ctx.add("Add", [size, size]),
              "reflect": ctx.add("Mul", [ctx.constant(np.int64(2)), ctx.add("Sub", [size, one])])}
    period = ctx.add("Max", [period[mode], one])
    folded = ctx.add("Mod", [positions, period], fmod=0)
    if mode == "wrap":
        return folded
    mirrored = ctx.add("Sub", [period, folded])
    if mode == "symmetric":
        mirrored = ctx.add("Sub", [mirrored, one])
    inside = ctx.add("Less", [folded, size])
    return ctx.add("Where", [inside, folded, mirrored])


def _entry(ctx: Context, table: str, axis: int, side: int) -> str:
    """``table[axis, side]`` of an [ndim, 2] table (pad widths or fill values), 0-d."""
    row = ctx.add("Gather", [table, ctx.constant(np.int64(axis))], axis=0)
    return ctx.add("Gather", [row, ctx.constant(np.int64(side))], axis=0)


def _pad_constant(ctx: Context, data: str, widths: str, values, ndim: int, dtype) -> str:
    """One ONNX Pad when the fill value is one scalar; otherwise one Pad per axis side in
    PyTensor's order (later axes overwrite the corners, as numpy does)."""
    fill = ctx.cast(ctx.name_of(values), values.type.dtype, dtype)
    const = getattr(values, "data", None)
    if values.type.ndim == 0 or (const is not None and np.all(const == np.ravel(const)[0])):
        if values.type.ndim:
            fill = ctx.add("Gather", [ctx.add("Reshape", [fill, _ints(ctx, [-1])]),
                                      ctx.constant(np.int64(0))], axis=0)
        pads = ctx.add("Reshape", [ctx.add("Transpose", [widths], perm=[1, 0]), _ints(ctx, [-1])])
        return ctx.add("Pad", [data, pads, fill], mode="constant")
    fill = ctx.add("Expand", [fill, _ints(ctx, [ndim, 2])])
    zero = _ints(ctx, [0])
    for axis in range(ndim):
        for side in (0, 1):
            width = ctx.add("Unsqueeze", [_entry(ctx, widths, axis, side), zero])
            pads = ctx.add("Concat", [width, zero] if side == 0 else [zero, width], axis=0)
            value = _entry(ctx, fill, axis, side)
            data = ctx.add("Pad", [data, pads, value, _ints(ctx, [axis])], mode="constant")
    return data


def _pad(op, ctx: Context, node):
    """numpy.pad for constant, edge, reflect, symmetric and wrap. PyTensor builds edge
    and constant padding in zeros of floatX, so their output dtype can be wider than the
    input's; the others keep it. ONNX Pad's reflect needs widths below the axis length
    and it has no symmetric mode (and wrap only from opset 19), so every mode but
    constant gathers along each axis with numpy's index rules. Other modes are inlined.
    Negative widths, on which numpy raises, are not detected."""
    mode = op.pad_mode
    if mode not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        return _op_from_graph(op, ctx, node)
    x, width_var, *extra = node.inputs
    out_dtype, ndim = node.outputs[0].type.dtype, x.type.ndim
    data = ctx.cast(ctx.name_of(x), x.type.dtype, out_dtype)
    if ndim == 0:
        return [ctx.add("Identity", [data])]
    widths = ctx.cast(ctx.name_of(width_var), width_var.type.dtype, "int64")
    widths = ctx.add("Expand", [widths, _ints(ctx, [ndim, 2])])
    if mode == "constant":
        return [_pad_constant(ctx, data, widths, extra[0], ndim, out_dtype)]
    for axis in range(ndim):
        before, after = _entry(ctx, widths, axis, 0), _entry(ctx, widths, axis, 1)
        index = _pad_index(ctx, mode, _scalar(ctx, _dim(ctx, data, axis)), before, after)
        data = ctx.add("Gather", [data, index], axis=axis)
    return [data]


if Pad is not None:
    convert_op.register(Pad)(_pad)


# -- Unique, Nonzero ---------------------------------------------------------------

@convert_op.register(Unique)
def _unique(op, ctx: Context, node):
    """ONNX Unique (sorted=1) has numpy.unique's outputs, always all four and in a fixed
    order (values, first indices, inverse, counts); PyTensor returns the requested ones.
    Without an axis both flatten the input. ONNX Runtime's Unique has int8/int64/float
    kernels only: other integers are mapped into int64 (uint64 by ``Context.to_kernel``'s
    order-preserving ``x xor 2**63``), which keeps equality and sorted order."""
    (x,) = node.inputs
    dtype = x.type.dtype
    data = ctx.to_kernel("Unique", ctx.name_of(x), dtype)
    if op.axis is None:
        data = ctx.add("Reshape", [data, _ints(ctx, [-1])])
        values, first, inverse, counts = ctx.add("Unique", [data], n_out=4, sorted=1)
    else:
        values, first, inverse, counts = _unique_slices(ctx, data, op.axis, x.type.ndim)
    wanted = (True, op.return_index, op.return_inverse, op.return_counts)
    every = (values, first, inverse, counts)
    outs = [name for name, keep in zip(every, wanted, strict=True) if keep]
    outs[0] = ctx.from_kernel("Unique", values, dtype)
    return outs


def _unique_slices(ctx: Context, data: str, axis: int, ndim: int) -> list[str]:
    """Unique along ``axis``. ONNX Runtime aborts the process when the slices are empty,
    so every other axis gets one trailing zero first (the same in every slice, so order
    and equality are unchanged) and the values are sliced back afterwards."""
    others = [a for a in range(ndim) if a != axis]
    if not others:
        return ctx.add("Unique", [data], n_out=4, sorted=1, axis=axis)
    sizes = ctx.add("Gather", [ctx.add("Shape", [data]), _ints(ctx, others)], axis=0)
    pads = np.zeros(2 * ndim, dtype=np.int64)
    pads[[ndim + a for a in others]] = 1
    padded = ctx.add("Pad", [data, _ints(ctx, pads)], mode="constant")
    values, *rest = ctx.add("Unique", [padded], n_out=4, sorted=1, axis=axis)
    values = ctx.add("Slice", [values, _ints(ctx, [0] * len(others)), sizes, _ints(ctx, others)])
    return [values, *rest]


@convert_op.register(Nonzero)
def _nonzero(op, ctx: Context, node):
    """ONNX NonZero returns one [ndim, k] matrix; PyTensor returns one vector per axis.
    The test is ``x != 0`` (nan counts as nonzero), computed on bool for kernel coverage."""
    (x,) = node.inputs
    flags = ctx.cast(ctx.name_of(x), x.type.dtype, "bool")
    coords = ctx.add("NonZero", [flags])
    return [ctx.add("Gather", [coords, ctx.constant(np.int64(i))], axis=0)
            for i in range(x.type.ndim)]


# -- FillDiagonal, FillDiagonalOffset ----------------------------------------------


def _scatter_diagonal(ctx: Context, data: str, value: str, coords: str) -> str:
    """ScatterND of ``value`` at ``coords`` ([k, ndim] int64); ScatterND has kernels for
    every dtype, unlike Where."""
    updates = ctx.add("Expand", [value, _dim(ctx, coords, 0)])
    return ctx.add("ScatterND", [data, coords, updates])


@convert_op.register(FillDiagonal)
def _fill_diagonal(op, ctx: Context, node):
    """Sets a[i, i, ..., i] for i < min(shape). numpy raises for an N-d (N > 2) input whose
    sides differ; ONNX cannot raise, so that error is not reproduced."""
    a, val = node.inputs
    data = ctx.name_of(a)
    length = ctx.add("ReduceMin", [ctx.add("Shape", [data])], keepdims=0)
    diag = _range(ctx, ctx.constant(np.int64(0)), length)
    coords = ctx.add("Expand", [ctx.add("Unsqueeze", [diag, _ints(ctx, [1])]),
                                _ints(ctx, [1, a.type.ndim])])
    return [_scatter_diagonal(ctx, data, ctx.name_of(val), coords)]


@convert_op.register(FillDiagonalOffset)
def _fill_diagonal_offset(op, ctx: Context, node):
    """Sets every in-bounds (r, r + offset) of a matrix: rows start at max(0, -offset),
    columns at max(0, offset), for min(rows left, columns left) steps."""
    a, val, offset = node.inputs
    data = ctx.name_of(a)
    off = ctx.cast(ctx.name_of(offset), offset.type.dtype, "int64")
    zero = ctx.constant(np.int64(0))
    starts = [ctx.add("Max", [zero, ctx.add("Neg", [off])]), ctx.add("Max", [zero, off])]
    left = [ctx.add("Sub", [_scalar(ctx, _dim(ctx, data, i)), s]) for i, s in enumerate(starts)]
    steps = _range(ctx, zero, ctx.add("Max", [zero, ctx.add("Min", left)]))
    coords = ctx.add("Concat", [
        ctx.add("Unsqueeze", [ctx.add("Add", [steps, s]), _ints(ctx, [1])]) for s in starts
    ], axis=1)
    return [_scatter_diagonal(ctx, data, ctx.name_of(val), coords)]


# -- Searchsorted ------------------------------------------------------------------


def _sorts_before(ctx: Context, a: str, b: str, is_float: bool) -> str:
    """numpy's sort order ``a < b``, in which nan sorts after every number."""
    less = ctx.add("Less", [a, b])
    if not is_float:
        return less
    nan_b = ctx.add("IsNaN", [b])
    return ctx.add("Or", [less, ctx.add("And", [nan_b, ctx.add("Not", [ctx.add("IsNaN", [a])])])])


@convert_op.register(SearchsortedOp)
def _searchsorted(op, ctx: Context, node):
    """ONNX has no binary search. For a sorted ``x`` (which numpy.searchsorted requires)
    the insertion index is a count: side='left' counts the x sorting before v, 'right'
    the x that v does not sort before, in numpy's order (nan last). O(len(x) * v.size)."""
    x, v, *sorter = node.inputs
    common = ps.upcast(x.type.dtype, v.type.dtype)
    work = "uint8" if common == "bool" else common
    xs = ctx.cast(ctx.cast(ctx.name_of(x), x.type.dtype, common), common, work)
    vs = ctx.cast(ctx.cast(ctx.name_of(v), v.type.dtype, common), common, work)
    if sorter:
        order = ctx.cast(ctx.name_of(sorter[0]), sorter[0].type.dtype, "int64")
        xs = ctx.add("Gather", [xs, order], axis=0)
    column = ctx.add("Reshape", [vs, _ints(ctx, [-1, 1])])
    is_float = np.dtype(work).kind == "f"
    if op.side == "left":
        counted = _sorts_before(ctx, xs, column, is_float)
    else:
        counted = ctx.add("Not", [_sorts_before(ctx, column, xs, is_float)])
    shape = ctx.add("Shape", [vs])
    return [ctx.add("Reshape", [_count_true(ctx, counted), shape], allowzero=1)]
