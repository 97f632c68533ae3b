"""Softmax, LogSoftmax, SoftmaxGrad and sorting (SortOp, ArgSortOp).

PyTensor 3 builds Softmax and LogSoftmax as symbolic ops over an axis tuple (or None);
PyTensor 2 has C ops over one axis (or None) and a SoftmaxGrad op. The rules accept both.
"""

from __future__ import annotations

import numpy as np
from pytensor.graph.basic import Constant
from pytensor.tensor.sort import ArgSortOp, SortOp
from pytensor.tensor.special import LogSoftmax, Softmax

from converter import compat
from converter._core import Context, convert_op
from converter.errors import UnsupportedOpError
from converter.ops.reduce import reduce_in

# PyTensor < 3 only; PyTensor 3 differentiates Softmax symbolically
SoftmaxGrad = compat.lookup("SoftmaxGrad")

_ACC = {"float16": "float32", "float32": "float64"}


def _axes(op, ndim: int) -> list[int]:
    if op.axis is None:
        return list(range(ndim))
    axes = (op.axis,) if isinstance(op.axis, int) else op.axis
    return sorted({a % ndim for a in axes})


def _shifted(ctx: Context, x: str, dtype, axes) -> str:
    """x - max(x) over ``axes`` in x's dtype; integers wrap as in PyTensor (done in
    int64, whose low bits are those of the narrow difference)."""
    m = reduce_in(ctx, "ReduceMax", x, dtype, dtype, dtype, axes, keepdims=1)
    if np.dtype(dtype).kind == "f":
        return ctx.add("Sub", [x, m])
    d = ctx.add("Sub", [ctx.cast(x, dtype, "int64"), ctx.cast(m, dtype, "int64")])
    return ctx.cast(d, "int64", dtype)


def _softmax_family(op, ctx: Context, node, onnx_op: str):
    """One axis of a float input is ONNX's Softmax/LogSoftmax (same max-shifted formula).
    Other cases (several axes, 0-d, integer input) follow PyTensor's inner graph: shift
    by the max in the input dtype, exp in the output dtype, sum in PyTensor's
    accumulator dtype (float64 for float32)."""
    (var,) = node.inputs
    dtype, out = var.type.dtype, node.outputs[0].type.dtype
    if dtype == "bool":
        raise UnsupportedOpError(op, [var.type], "PyTensor cannot subtract bools")
    if np.dtype(out).kind != "f":
        raise UnsupportedOpError(op, [var.type], f"PyTensor < 3 types this softmax's output as "
                                 f"{out} but computes floats; cast the input to a float first")
    axes = _axes(op, var.type.ndim)
    x = ctx.name_of(var)
    if len(axes) == 1 and dtype == out:
        return [ctx.add(onnx_op, [x], axis=axes[0])]
    shifted = ctx.cast(_shifted(ctx, x, dtype, axes), dtype, out)
    e = ctx.add("Exp", [shifted])
    acc = _ACC.get(out, out)
    total = reduce_in(ctx, "ReduceSum", e, out, acc, out, axes, keepdims=1)
    if onnx_op == "Softmax":
        return [ctx.add("Div", [e, total])]
    return [ctx.add("Sub", [shifted, ctx.add("Log", [total])])]


@convert_op.register(Softmax)
def _softmax(op, ctx: Context, node):
    return _softmax_family(op, ctx, node, "Softmax")


@convert_op.register(LogSoftmax)
def _log_softmax(op, ctx: Context, node):
    return _softmax_family(op, ctx, node, "LogSoftmax")


if SoftmaxGrad is not None:  # pragma: no cover - PyTensor < 3

    @convert_op.register(SoftmaxGrad)
    def _softmax_grad(op, ctx: Context, node):
        """dx = dy*sm - sum(dy*sm, axis)*sm, summed in the output dtype like the C code."""
        dy_var, sm_var = node.inputs
        out = node.outputs[0].type.dtype
        dy = ctx.cast(ctx.name_of(dy_var), dy_var.type.dtype, out)
        sm = ctx.cast(ctx.name_of(sm_var), sm_var.type.dtype, out)
        prod = ctx.add("Mul", [dy, sm])
        total = reduce_in(ctx, "ReduceSum", prod, out, out, out,
                          _axes(op, sm_var.type.ndim), keepdims=1)
        return [ctx.add("Sub", [prod, ctx.add("Mul", [total, sm])])]


def _sort_axis(op, node) -> int:
    """The sorted axis: an input before PyTensor 3.3 (a constant, or None to flatten), a
    property of the op from 3.3 on (``sort(x, axis=None)`` then flattens in the graph)."""
    if compat.builds("sort_axis_property"):
        return op.axis
    var, axis = node.inputs
    if not isinstance(axis, Constant):
        raise UnsupportedOpError(op, [v.type for v in node.inputs], "axis must be a constant")
    if var.type.ndim == 0:
        raise UnsupportedOpError(op, [var.type], "sorting a 0-d tensor (PyTensor raises too)")
    return int(axis.data) % var.type.ndim


def _argsort(ctx: Context, x: str, dtype, axis: int) -> str:
    """Stable ascending order along ``axis`` with nan last, as numpy's stable argsort.

    ONNX TopK breaks ties by the lower index but leaves nan open, so floats sort twice:
    by value with nan read as +inf, then (stably) by is-nan. Unsigned keys ONNX Runtime
    cannot sort go through ``Context.to_kernel``'s order-preserving map."""
    k = ctx.add("Shape", [x], start=axis, end=axis + 1)

    def order(key, key_dtype):
        _, idx = ctx.add_typed("TopK", [key, k], key_dtype, results=(), n_out=2, axis=axis,
                               largest=0, sorted=1)
        return idx

    if np.dtype(dtype).kind != "f":
        if dtype == "bool":
            return order(ctx.cast(x, dtype, "uint8"), "uint8")
        return order(x, dtype)
    nan = ctx.add("IsNaN", [x])
    first = order(ctx.add("Where", [nan, ctx.constant(np.inf, dtype), x]), dtype)
    nan_sorted = ctx.add("GatherElements", [ctx.cast(nan, "bool", "uint8"), first], axis=axis)
    second = order(nan_sorted, "uint8")
    return ctx.add("GatherElements", [first, second], axis=axis)


@convert_op.register(ArgSortOp)
def _argsort_op(op, ctx: Context, node):
    """Always stable: for kind='stable'/'mergesort' this is PyTensor's order; for
    'quicksort'/'heapsort' numpy's tie order is implementation-defined (see registry)."""
    var = node.inputs[0]
    return [_argsort(ctx, ctx.name_of(var), var.type.dtype, _sort_axis(op, node))]


@convert_op.register(SortOp)
def _sort_op(op, ctx: Context, node):
    """Values gathered from the input by the stable order (exact, -0.0 kept, nan last)."""
    var = node.inputs[0]
    axis = _sort_axis(op, node)
    x = ctx.name_of(var)
    return [ctx.add("GatherElements", [x, _argsort(ctx, x, var.type.dtype, axis)], axis=axis)]
