"""Tensor-creation ops: Alloc, AllocEmpty, ARange, Eye.

The helpers need no rules of their own: zeros_like/ones_like/full_like build Elemwise
Second (``fill``), empty_like builds AllocEmpty, and tri/tril/triu are compositions of
ARange, DimShuffle, Elemwise and (tril/triu) Subtensor of Shape."""

from __future__ import annotations

import functools

import numpy as np
from onnx import numpy_helper
from pytensor.tensor.basic import Alloc, AllocEmpty, ARange, Eye

from converter._core import Context, convert_op
from converter.ops.shape import shape_vector


@convert_op.register(Alloc)
def _alloc(op, ctx: Context, node):
    """Expand the value to the shape. PyTensor raises when a value axis not declared
    broadcastable would have to broadcast; ONNX Expand broadcasts it (cannot raise)."""
    value, *shape = node.inputs
    return [ctx.add("Expand", [ctx.name_of(value), shape_vector(ctx, shape)])]


@convert_op.register(AllocEmpty)
def _alloc_empty(op, ctx: Context, node):
    """PyTensor leaves the memory uninitialised; zeros are one valid filling."""
    zero = numpy_helper.from_array(np.zeros(1, dtype=op.dtype))
    return [ctx.add("ConstantOfShape", [shape_vector(ctx, node.inputs)], value=zero)]


def _widened(ctx: Context, inputs) -> tuple[list[str], str]:
    """start, stop, step in the dtype numpy's arange does its length arithmetic in: Python
    ints (int64, or uint64 when all are unsigned 64-bit) or else Python floats (float64)."""
    kinds = [np.dtype(v.type.dtype) for v in inputs]
    wides = ["float64" if d.kind == "f" else "uint64" if d == np.uint64 else "int64"
             for d in kinds]
    wide = np.result_type(*wides).name
    wide = wide if wide in ("int64", "uint64") else "float64"
    return [ctx.cast(ctx.name_of(v), d, wide) for v, d in zip(inputs, kinds, strict=True)], wide


def _arange_length(ctx: Context, start, stop, step, wide) -> str:
    """``max(ceil((stop - start) / step), 0)`` as int64, the quotient rounded once to double
    as Python divides its numbers (see ``_integer_ratio``)."""
    zero = ctx.constant(np.zeros((), np.float64))
    if wide == "float64":
        ratio = ctx.add("Div", [ctx.add("Sub", [stop, start]), step])
    else:
        ratio = _integer_ratio(ctx, start, stop, step, wide)
    return ctx.cast(ctx.add("Max", [ctx.add("Ceil", [ratio]), zero]), "float64", "int64")


def _integer_ratio(ctx: Context, start, stop, step, wide) -> str:
    """(stop - start) / step for 64-bit integers, as Python's int true division gives it: the
    truncated quotient and the remainder are exact, so ``q + r / step`` rounds only once
    (dividing the doubles of a difference above 2**53 can land just past an integer, one
    element too many). An int64 difference that would overflow is taken in doubles."""
    to_double = functools.partial(ctx.cast, from_dtype=wide, to_dtype="float64")
    if wide == "uint64":  # stop < start would wrap around instead of going negative
        stop = ctx.add("Max", [stop, start])
    diff = ctx.add("Sub", [stop, start])
    # an integer Div by zero traps; a zero step is PyTensor's error, any length will do
    # (no Where: ONNX Runtime has none for uint64)
    is_zero = ctx.add("Equal", [step, ctx.constant(np.zeros((), wide))])
    safe = ctx.add("Add", [step, ctx.cast(is_zero, "bool", wide)])
    quotient = ctx.add("Div", [diff, safe])
    remainder = ctx.add("Sub", [diff, ctx.add("Mul", [quotient, safe])])
    ratio = ctx.add("Add", [to_double(quotient),
                            ctx.add("Div", [to_double(remainder), to_double(step)])])
    if wide == "int64":
        rough = ctx.add("Sub", [to_double(stop), to_double(start)])
        exact = ctx.add("Less", [ctx.add("Abs", [rough]), ctx.constant(np.float64(2.0**62))])
        ratio = ctx.add("Where", [exact, ratio, ctx.add("Div", [rough, to_double(step)])])
    return ratio


@convert_op.register(ARange)
def _arange(op, ctx: Context, node):
    """numpy's arange, which PyTensor runs, is not ONNX Range (start + i * step in the
    inputs' type): its length comes from Python numbers (see ``_arange_length``) and its
    values are ``first, second, first + i * (second - first)...`` in the output dtype T, where
    ``first = T(start)`` and ``second = T(start + step)`` (integers wrap around; float16
    works in float32). ONNX Range only makes the indices ``0..n-1``.
    A zero step or a non-finite bound makes PyTensor raise; ONNX cannot."""
    (start, stop, step), wide = _widened(ctx, node.inputs)
    count = _arange_length(ctx, start, stop, step, wide)
    zero, one = ctx.constant(np.zeros((), np.int64)), ctx.constant(np.ones((), np.int64))
    index = ctx.add("Range", [zero, count, one])
    out = op.dtype
    work = {"f": "float32" if out == "float16" else out}.get(np.dtype(out).kind, "int64")
    first = ctx.cast(ctx.cast(start, wide, out), out, work)
    second = ctx.cast(ctx.cast(ctx.add("Add", [start, step]), wide, out), out, work)
    delta = ctx.add("Sub", [second, first])
    values = ctx.add("Add", [first, ctx.add("Mul", [ctx.cast(index, "int64", work), delta])])
    # numpy stores the first two directly (an overflowing second must not spoil the first)
    values = ctx.add("Where", [ctx.add("Equal", [index, one]), second, values])
    # first in Where's second slot: ONNX Runtime's Where loses a -0.0 taken from its first
    values = ctx.add("Where", [ctx.add("Greater", [index, zero]), values, first])
    return [ctx.cast(values, work, out)]


@convert_op.register(Eye)
def _eye(op, ctx: Context, node):
    """ONNX EyeLike needs a static shape and a static k; PyTensor's n, m, k are inputs, so
    build ``(col - row) == k`` from two Ranges and cast it."""
    n, m, k = (ctx.cast(ctx.name_of(v), v.type.dtype, "int64") for v in node.inputs)
    zero, one = ctx.constant(np.zeros((), np.int64)), ctx.constant(np.ones((), np.int64))

    def positions(length, axis):
        axes = ctx.constant(np.array([axis], np.int64))
        return ctx.add("Unsqueeze", [ctx.add("Range", [zero, length, one]), axes])

    rows, cols = positions(n, 1), positions(m, 0)
    diagonal = ctx.add("Equal", [ctx.add("Sub", [cols, rows]), k])
    return [ctx.cast(diagonal, "bool", op.dtype)]
