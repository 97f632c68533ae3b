"""Shape-manipulating ops: DimShuffle, Reshape, Shape, Shape_i, SpecifyShape, Join, Split,
MakeVector and the tensor/scalar boundary (TensorFromScalar, ScalarFromTensor, ScalarOp)."""

from __future__ import annotations

import numpy as np
from pytensor.graph.basic import Constant
from pytensor.scalar.basic import ScalarOp
from pytensor.tensor.basic import Join, MakeVector, ScalarFromTensor, Split, TensorFromScalar
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape

from converter import compat
from converter._core import Context, convert_op
from converter.errors import UnsupportedOpError, warn_check_dropped
from converter.ops.elemwise import scalar_rule


def _axes(ctx: Context, axes) -> str:
    return ctx.constant(np.asarray(list(axes), dtype=np.int64), hint="axes")


def _int64(ctx: Context, var) -> str:
    return ctx.cast(ctx.name_of(var), var.type.dtype, "int64")


def shape_vector(ctx: Context, scalars, dtype="int64") -> str:
    """A 1-D tensor of ``dtype`` made of the 0-d variables ``scalars`` (each cast first)."""
    if not scalars:
        return ctx.constant(np.zeros(0, dtype=dtype), hint="empty")
    axis0 = _axes(ctx, [0])
    parts = [ctx.add("Unsqueeze", [ctx.cast(ctx.name_of(s), s.type.dtype, dtype), axis0])
             for s in scalars]
    return parts[0] if len(parts) == 1 else ctx.add("Concat", parts, axis=0)


def _constant_axis(op, node, var, ndim: int) -> int:
    """ONNX takes the axis as an attribute, so PyTensor's axis input must be a constant."""
    if not isinstance(var, Constant):
        raise UnsupportedOpError(op, [i.type for i in node.inputs],
                                 "the axis must be a constant, not a symbolic input")
    return int(np.asarray(var.data)) % ndim


@convert_op.register(DimShuffle)
def _dimshuffle(op, ctx: Context, node):
    """Squeeze the dropped (length-1) axes, Transpose the kept ones, Unsqueeze the new ones."""
    x = ctx.name_of(node.inputs[0])
    order = list(op.new_order)
    kept = [a for a in order if a != "x"]
    dropped = [a for a in range(op.input_ndim) if a not in kept]
    if dropped:
        x = ctx.add("Squeeze", [x, _axes(ctx, dropped)])
    perm = [sorted(kept).index(a) for a in kept]
    if perm != sorted(perm):
        x = ctx.add("Transpose", [x], perm=perm)
    new = [i for i, a in enumerate(order) if a == "x"]
    if new:
        x = ctx.add("Unsqueeze", [x, _axes(ctx, new)])
    if x == ctx.name_of(node.inputs[0]):
        x = ctx.add("Identity", [x])
    return [x]


@convert_op.register(Reshape)
def _reshape(op, ctx: Context, node):
    """PyTensor (numpy) reads a 0 in the target shape as a length-0 axis, ONNX as "copy the
    input's length" unless ``allowzero=1``; -1 means "the rest" in both."""
    x, shp = node.inputs
    return [ctx.add("Reshape", [ctx.name_of(x), _int64(ctx, shp)], allowzero=1)]


@convert_op.register(Shape)
def _shape(op, ctx: Context, node):
    return [ctx.add("Shape", [ctx.name_of(node.inputs[0])])]


@convert_op.register(Shape_i)
def _shape_i(op, ctx: Context, node):
    """One entry of the shape as a 0-d int64: slice the Shape, then drop the axis."""
    whole = ctx.add("Shape", [ctx.name_of(node.inputs[0])], start=op.i, end=op.i + 1)
    return [ctx.add("Squeeze", [whole, _axes(ctx, [0])])]


@convert_op.register(SpecifyShape)
def _specify_shape(op, ctx: Context, node):
    """Identity: ONNX cannot raise, so PyTensor's runtime shape check is dropped (a graph
    whose input violates the specified shape runs where PyTensor would raise), with a
    ``RuntimeCheckDropped`` warning once per conversion."""
    warn_check_dropped(ctx, op, "its input's shape")
    return [ctx.add("Identity", [ctx.name_of(node.inputs[0])])]


@convert_op.register(Join)
def _join(op, ctx: Context, node):
    """Concat. Before PyTensor 3.3 the axis is the first input, which must then be a
    constant; 3.3 keeps it on the op. PyTensor joins pieces of mixed dtypes in their upcast
    dtype, Concat only pieces of one type: each is cast."""
    if compat.builds("join_axis_property"):
        tensors, axis = node.inputs, op.axis
    else:
        axis_var, *tensors = node.inputs
        axis = _constant_axis(op, node, axis_var, tensors[0].type.ndim)
    out_dtype = node.outputs[0].type.dtype
    names = [ctx.cast(ctx.name_of(t), t.type.dtype, out_dtype) for t in tensors]
    if len(names) == 1:
        return [ctx.add("Identity", names)]
    return [ctx.add("Concat", names, axis=axis)]


@convert_op.register(Split)
def _split(op, ctx: Context, node):
    """Split with the sizes as an int64 input (constant or computed); the axis must be a
    constant (PyTensor 3.3 keeps it on the op). PyTensor raises when the sizes do not sum to
    the axis length, ONNX cannot."""
    if compat.builds("split_axis_property"):
        (x, splits), axis = node.inputs, op.axis
    else:
        x, axis_var, splits = node.inputs
        axis = _constant_axis(op, node, axis_var, x.type.ndim)
    outs = ctx.add("Split", [ctx.name_of(x), _int64(ctx, splits)], n_out=op.len_splits,
                   axis=axis)
    return [outs] if op.len_splits == 1 else outs


@convert_op.register(MakeVector)
def _make_vector(op, ctx: Context, node):
    """Concat of the 0-d inputs, each unsqueezed and cast to the op's dtype."""
    return [shape_vector(ctx, node.inputs, op.dtype)]


@convert_op.register(TensorFromScalar)
@convert_op.register(ScalarFromTensor)
def _scalar_boundary(op, ctx: Context, node):
    """ONNX has only tensors: a PyTensor scalar is a 0-d tensor, so crossing is Identity."""
    return [ctx.add("Identity", [ctx.name_of(node.inputs[0])])]


@convert_op.register(ScalarOp)
def _scalar_op(op, ctx: Context, node):
    """A scalar op applied to ScalarType variables (between ScalarFromTensor and
    TensorFromScalar): the same rules as inside Elemwise, on 0-d tensors."""
    ins = [ctx.name_of(v) for v in node.inputs]
    return scalar_rule(op, ctx, ins, [v.type.dtype for v in node.inputs],
                       [v.type.dtype for v in node.outputs])
