"""Reductions and scans: CAReduce (Sum, Prod, Max, Min, All, Any, fused Composite
reductions), ProdWithoutZeros, Argmax and CumOp.

PyTensor accumulates in ``acc_dtype`` (float64 for a float32 sum, int64 for an int32 sum)
and then casts to the output dtype; the rules do the same so results agree bit for bit
where the arithmetic allows.
"""

from __future__ import annotations

import numpy as np
import pytensor.scalar.basic as ps
from onnx import helper, numpy_helper
from pytensor.tensor.elemwise import CAReduce
from pytensor.tensor.extra_ops import CumOp
from pytensor.tensor.math import Argmax, ProdWithoutZeros

from converter._core import Context, convert_op, onnx_dtype
from converter.errors import UnsupportedOpError
from converter.ops.elemwise import scalar_rule

REDUCERS = {
    ps.Add: "ReduceSum",
    ps.Mul: "ReduceProd",
    ps.ScalarMaximum: "ReduceMax",
    ps.Maximum: "ReduceMax",
    ps.ScalarMinimum: "ReduceMin",
    ps.Minimum: "ReduceMin",
}
#: bitwise reductions, which ONNX lacks: done bit by bit on integers and XOR on bools (see
#: ``_bitwise_reduce``); AND and OR of bools (pt.all, pt.any) are Min and Max of 0/1
BITWISE = {ps.AND: "ReduceMin", ps.OR: "ReduceMax", ps.XOR: "ReduceSum"}

# ONNX's Reduce* type lists skip 8/16-bit integers (ReduceSum/Prod) or 16-bit ones
# (ReduceMax/Min): int32 keeps their order and, cast back, the low bits of a sum or product.
_WIDEN = {"int8": "int32", "int16": "int32", "uint8": "int32", "uint16": "int32"}

# CumSum/CumProd have no 8/16-bit kernels in the spec; the low bits of a 32-bit
# sum or product are those of the narrow one, so casting back wraps as PyTensor's C does.
_SCAN_WIDEN = {"bool": "int32", "int8": "int32", "int16": "int32", "uint8": "int32",
               "uint16": "int32"}


def reducer_for(scalar_op) -> str | None:
    return next((REDUCERS[c] for c in type(scalar_op).__mro__ if c in REDUCERS), None)


def reduced_axes(op, ndim: int) -> list[int]:
    """The op's ``axis`` as sorted non-negative ints (``axis=None`` means all)."""
    if op.axis is None:
        return list(range(ndim))
    axes = (op.axis,) if isinstance(op.axis, int) else op.axis
    return sorted(a % ndim for a in axes) if ndim else []


def reduce_axes(ctx: Context, onnx_op: str, x: str, dtype, axes: list[int],
                keepdims: int = 0) -> str:
    """``onnx_op`` over ``axes`` of ``x`` (of ``dtype``); an empty axis list is a no-op, not
    'all'. uint32/uint64, which ONNX Runtime cannot reduce, run in int64 (see
    ``Context.add_typed``): sums and products wrap alike in both (the same bits modulo
    2**64), max/min compare alike after the order-preserving map."""
    axes_name = ctx.constant(np.asarray(axes, dtype=np.int64), hint="axes")
    return ctx.add_typed(onnx_op, [x, axes_name], dtype, keepdims=keepdims,
                         noop_with_empty_axes=1)


def reduce_in(ctx: Context, onnx_op: str, x: str, in_dtype, work, out_dtype, axes,
              keepdims: int = 0) -> str:
    """Reduce ``x`` over ``axes`` in dtype ``work`` and cast to ``out_dtype``. A bool
    accumulator runs on 0/1 (uint8 for max/min, so an empty 'any' is 0; int32 for
    sum/prod) and is read back as ``!= 0``: a bool sum is 'any', as numpy's."""
    acc = np.dtype(work).name
    if acc == "bool":
        x, held = ctx.cast(ctx.cast(x, in_dtype, "bool"), "bool", "uint8"), "uint8"
        run = "uint8" if onnx_op in ("ReduceMax", "ReduceMin") else "int32"
    else:
        x, held, run = ctx.cast(x, in_dtype, acc), acc, _WIDEN.get(acc, acc)
    y = reduce_axes(ctx, onnx_op, ctx.cast(x, held, run), run, axes, keepdims)
    if onnx_op == "ReduceSum" and np.dtype(run).kind == "f" and _may_be_negative_zero(ctx, x):
        # numpy adds into its identity +0.0, so a sum of -0.0s (or of one 0-d -0.0) is
        # +0.0; ONNX leaves the start open and ONNX Runtime returns -0.0. (Its optimizer
        # drops an Add of 0.0 as a no-op, so zeros are replaced by +0.0 instead.)
        zero = ctx.constant(np.zeros((), run))
        y = ctx.add("Where", [ctx.add("Equal", [y, zero]), zero, y])
    return ctx.cast(ctx.cast(y, run, acc), acc, out_dtype)


def _may_be_negative_zero(ctx: Context, name: str, depth: int = 4) -> bool:
    """False when no element of ``name`` can be -0.0, so that neither can a sum of them
    (in IEEE arithmetic a + b is -0.0 only when both are; a - b only when a is -0.0 and b
    is +0.0; exp, abs and log never give -0.0): the sign fix above is then not needed.
    Looks a few producers up the graph; True when it cannot tell."""
    for tensor in reversed(ctx.initializers):
        if tensor.name == name:
            value = numpy_helper.to_array(tensor)
            return value.dtype.kind != "f" or bool(np.any((value == 0) & np.signbit(value)))
    producer = next((n for n in reversed(ctx.nodes) if name in n.output), None)
    if producer is None or depth == 0:
        return True
    ins = producer.input
    if producer.op_type in ("Exp", "Abs", "Log"):
        return False
    if producer.op_type == "Add":
        return all(_may_be_negative_zero(ctx, i, depth - 1) for i in ins)
    if producer.op_type == "Sub":
        return _may_be_negative_zero(ctx, ins[0], depth - 1)
    if producer.op_type == "Where":
        return any(_may_be_negative_zero(ctx, i, depth - 1) for i in ins[1:])
    return True


@convert_op.register(CAReduce)
def _careduce(op, ctx: Context, node):
    """Bool All/Any become Min/Max over uint8 (empty: All is True, Any is False, as in
    PyTensor); other reductions run in acc_dtype."""
    (var,) = node.inputs
    out_dtype = node.outputs[0].type.dtype
    work = getattr(op, "acc_dtype", None) or out_dtype
    axes = reduced_axes(op, var.type.ndim)
    bitwise = next((BITWISE[c] for c in type(op.scalar_op).__mro__ if c in BITWISE), None)
    if bitwise is not None and var.type.dtype == "bool" and bitwise != "ReduceSum":
        # in bools whatever acc_dtype says: in a wider accumulator an empty Max would be that
        # dtype's minimum, not OR's identity 0
        return [reduce_in(ctx, bitwise, ctx.name_of(var), "bool", "bool", out_dtype, axes)]
    if bitwise is not None:
        return [_bitwise_reduce(ctx, bitwise, ctx.name_of(var), var.type.dtype, axes,
                                out_dtype)]
    if isinstance(op.scalar_op, ps.Composite):
        onnx_op, x, in_dtype = _fused_elements(op, ctx, node)
    else:
        onnx_op, x, in_dtype = reducer_for(op.scalar_op), ctx.name_of(var), var.type.dtype
    if onnx_op is None:
        raise UnsupportedOpError(op, [var.type], "no ONNX reduction for this scalar op")
    return [reduce_in(ctx, onnx_op, x, in_dtype, work, out_dtype, axes)]


def _bitwise_reduce(ctx: Context, onnx_op: str, x: str, dtype, axes: list[int],
                    out_dtype) -> str:
    """AND, OR or XOR over ``axes``, which ONNX has only elementwise: each element's bits on a
    new last axis (``x & 2**k != 0``), reduced as bools (AND: all set, so Min; OR: any, Max;
    XOR: an odd count, Sum & 1) and put back together as one int64 MatMul with the bits'
    weights (2**63 is -2**63 there, the same bits), cast to the dtype with wrapping. Over no
    axes it is the operand."""
    if not axes:  # over no axis every reduction is its operand
        return ctx.cast(x, dtype, out_dtype)
    width = 1 if np.dtype(dtype) == np.bool_ else np.dtype(dtype).itemsize * 8
    bits = ctx.add("Unsqueeze", [x, ctx.constant(np.asarray([-1], dtype=np.int64))])
    if width > 1:
        masks = (np.uint64(1) << np.arange(width, dtype=np.uint64)).astype(dtype)
        masked = ctx.add("BitwiseAnd", [bits, ctx.constant(masks)])
        bits = ctx.add("Not", [ctx.add("Equal", [masked, ctx.constant(np.zeros((), dtype))])])
    if onnx_op == "ReduceSum":
        count = reduce_axes(ctx, "ReduceSum", ctx.cast(bits, "bool", "int32"), "int32", axes)
        held = ctx.add("BitwiseAnd", [count, ctx.constant(np.ones((), np.int32))])
        held_dtype = "int32"
    else:  # an empty Min is uint8's largest value: read back as a bool, it is all bits set
        held = reduce_axes(ctx, onnx_op, ctx.cast(bits, "bool", "uint8"), "uint8", axes)
        held, held_dtype = ctx.cast(held, "uint8", "bool"), "bool"
    # a (width, 1) matrix, not a vector: ONNX Runtime 1.31's MatMul of an empty batch by a
    # vector fails to broadcast (measured), by a one-column matrix it does not
    weights = (np.uint64(1) << np.arange(width, dtype=np.uint64)).astype(np.int64)[:, None]
    column = ctx.add("MatMul", [ctx.cast(held, held_dtype, "int64"), ctx.constant(weights)])
    value = ctx.add("Squeeze", [column, ctx.constant(np.asarray([-1], dtype=np.int64))])
    if np.dtype(out_dtype) == np.bool_:
        return ctx.cast(value, "int64", "bool")
    return ctx.cast(value, "int64", out_dtype)


def _fused_elements(op, ctx: Context, node):
    """A Composite made by ``local_careduce_fusion`` is ``[cast](r(acc, g(x)))`` with ``r``
    a reducing op and ``acc`` used nowhere else: emit ``g`` elementwise and reduce with
    ``r`` (the Python ``perform`` skips ``g`` on the first element; the C code does not)."""
    fg = op.scalar_op.fgraph
    (var,) = node.inputs
    acc, elem_in = fg.inputs
    top = fg.outputs[0].owner
    if top is not None and isinstance(top.op, ps.Cast):
        top = top.inputs[0].owner
    if top is None or len(top.inputs) != 2 or top.inputs.count(acc) != 1:
        raise UnsupportedOpError(op, [var.type], "Composite is not reducer(acc, f(x))")
    elem = top.inputs[1 - top.inputs.index(acc)]
    x = ctx.name_of(var)
    names = {elem_in: x}
    for v in fg.variables:
        if v.owner is None and v not in names and v is not acc:
            names[v] = ctx.constant(np.asarray(v.data, dtype=v.type.dtype))
    for inner in fg.toposort():
        if inner is top or any(v not in names for v in inner.inputs):
            continue  # the reduction itself, or downstream of the accumulator
        outs = scalar_rule(inner.op, ctx, [names[v] for v in inner.inputs],
                           [v.type.dtype for v in inner.inputs],
                           [v.type.dtype for v in inner.outputs])
        names.update(zip(inner.outputs, outs, strict=True))
    if elem not in names:
        raise UnsupportedOpError(op, [var.type], "reduced value depends on the accumulator")
    e = names[elem]
    if e != x and ctx.is_initializer(e):
        e = ctx.add("Expand", [e, ctx.add("Shape", [x])])
    return reducer_for(top.op), e, elem.type.dtype


@convert_op.register(ProdWithoutZeros)
def _prod_without_zeros(op, ctx: Context, node):
    """PyTensor multiplies the nonzero elements and yields 0 when there are none (its
    identity is 0, so an empty product is 0 too); ONNX multiplies zeros in. Zeros become
    ones (x + (x == 0)) and the product is multiplied by "any nonzero" (Add/Mul rather
    than Where, which ONNX Runtime lacks for some of the accumulator dtypes). A float slice
    of zeros keeps its last zero, sign included, as PyTensor's fold does."""
    (var,) = node.inputs
    in_dtype, acc, out_dtype = var.type.dtype, op.acc_dtype, node.outputs[0].type.dtype
    axes = reduced_axes(op, var.type.ndim)
    x = ctx.cast(ctx.name_of(var), in_dtype, acc)
    nonzero = ctx.cast(x, acc, "bool")
    ones = ctx.add("Add", [x, ctx.cast(ctx.add("Not", [nonzero]), "bool", acc)])
    prod = reduce_in(ctx, "ReduceProd", ones, acc, acc, out_dtype, axes)
    some = reduce_in(ctx, "ReduceMax", nonzero, "bool", "bool", "uint8", axes)
    if np.dtype(acc).kind == "f":  # all zeros: the last one, with its sign
        last = ctx.cast(_last_or_zero(ctx, x, acc, var.type.ndim, axes), acc, out_dtype)
        # not Cast to bool: ONNX Runtime's optimizer swaps the slots of a Where over Not,
        # and its Where turns a -0.0 taken from the first slot into +0.0
        found = ctx.add("Greater", [some, ctx.constant(np.zeros((), np.uint8))])
        return [ctx.add("Where", [found, prod, last])]
    return [ctx.add("Mul", [prod, ctx.cast(some, "uint8", out_dtype)])]


def _last_or_zero(ctx: Context, x: str, dtype, ndim: int, axes: list[int]) -> str:
    """The last element (in C order) of each slice of ``x`` over ``axes``, +0.0 for an
    empty slice: what PyTensor's ``x == 0 ? y : ...`` fold leaves when all are zero."""
    if not axes:
        return x
    x = _move_axes_last(ctx, x, ndim, axes)
    last = ctx.constant(np.asarray([-1], np.int64))
    slab = ctx.add("Concat", [ctx.add("Shape", [x], end=-1),
                              ctx.constant(np.asarray([1], np.int64))], axis=0)
    x = ctx.add("Concat", [ctx.add("Expand", [ctx.constant(np.zeros((), dtype)), slab]), x],
                axis=-1)
    x = ctx.add("Slice", [x, last, ctx.constant(np.asarray([2**62], np.int64)), last])
    return ctx.add("Squeeze", [x, last])


def _move_axes_last(ctx: Context, x: str, ndim: int, axes: list[int]) -> str:
    """``x`` with ``axes`` flattened into one trailing axis (kept axes first, in order)."""
    keep = [a for a in range(ndim) if a not in axes]
    if keep + axes != list(range(ndim)):
        x = ctx.add("Transpose", [x], perm=keep + axes)
    if len(axes) == 1:
        return x
    merged = ctx.add("ReduceProd", [ctx.add("Shape", [x], start=len(keep))], keepdims=1)
    if keep:
        merged = ctx.add("Concat", [ctx.add("Shape", [x], end=len(keep)), merged], axis=0)
    return ctx.add("Reshape", [x, merged], allowzero=1)


@convert_op.register(Argmax)
def _argmax(op, ctx: Context, node):
    """PyTensor takes the first maximum over the reduced axes flattened in C order (any
    axis set), like numpy, and a nan counts as the maximum. ONNX ArgMax takes one axis
    and leaves nan open: several axes are moved last and merged, and the first nan
    (found by an ArgMax over IsNaN) wins wherever one exists. Bool runs as uint8, and
    integers ONNX Runtime lacks a kernel for through ``Context.to_kernel`` (exact and
    order-preserving, so the first maximum keeps its index)."""
    (var,) = node.inputs
    dtype, ndim = var.type.dtype, var.type.ndim
    x = ctx.name_of(var)
    if ndim == 0:
        x, ndim, axes = ctx.add("Reshape", [x, ctx.constant([1], np.int64)]), 1, [0]
    else:
        axes = reduced_axes(op, ndim)
    x = _move_axes_last(ctx, x, ndim, axes)
    axis = ndim - len(axes)
    if dtype == "bool":
        x = ctx.cast(x, "bool", "uint8")
    idx = ctx.add_typed("ArgMax", [x], "uint8" if dtype == "bool" else dtype, results=(),
                        axis=axis, keepdims=0, select_last_index=0)
    if np.dtype(dtype).kind == "f":
        nan = ctx.cast(ctx.add("IsNaN", [x]), "bool", "uint8")
        has_nan = ctx.cast(reduce_axes(ctx, "ReduceMax", nan, "uint8", [axis]), "uint8", "bool")
        first_nan = ctx.add("ArgMax", [nan], axis=axis, keepdims=0, select_last_index=0)
        idx = ctx.add("Where", [has_nan, first_nan, idx])
    return [idx]


@convert_op.register(CumOp)
def _cumop(op, ctx: Context, node):
    """Cumulative sum/product in the input dtype, wrapping like PyTensor's C code (its
    Python ``perform`` returns numpy's int64 for narrower integers instead). 8/16-bit
    integers and bool scan in int32 and are cast back (bool as ``!= 0``: a running 'or'
    for cumsum, 'and' for cumprod, as numpy's bool accumulate in the C code).
    ``axis=None`` (PyTensor < 3) flattens. CumProd exists from opset 26; before, a Scan
    multiplies step by step. uint32/uint64 CumSum runs in int64 (ONNX Runtime has no
    kernel): the low bits of a two's-complement sum are those of the unsigned one."""
    (var,) = node.inputs
    dtype = var.type.dtype
    x = ctx.name_of(var)
    axis = op.axis
    if axis is None:
        x, axis = ctx.add("Reshape", [x, ctx.constant([-1], np.int64)]), 0
    work = _SCAN_WIDEN.get(dtype, dtype)
    x = ctx.cast(x, dtype, work)
    if op.mode == "add":
        y = ctx.add_typed("CumSum", [x, ctx.constant(axis, np.int64)], work)
    elif ctx.opset >= 26 and work != "float16":  # ORT's float16 CumProd runs in float32
        y = ctx.add("CumProd", [x, ctx.constant(axis, np.int64)])
    else:
        y = _cumprod_by_scan(ctx, x, work, axis, node.outputs[0].type.ndim)
    return [ctx.cast(y, work, dtype)]


def _cumprod_by_scan(ctx: Context, x: str, work, axis: int, ndim: int) -> str:
    """A Scan along ``axis`` carrying the running product: one Mul per step, in order
    (ReduceProd-based tricks would inherit ONNX Runtime's inexact int64 ReduceProd).
    ONNX Runtime 1.31 dies with SIGFPE on a Scan over an empty tensor, so an If returns
    empty inputs unchanged and runs the Scan only on the others."""
    elem = onnx_dtype(work)
    perm = [axis, *(a for a in range(ndim) if a != axis)]  # the reference scans axis 0 only
    if axis:
        x = ctx.add("Transpose", [x], perm=perm)
    rest = [None] * (ndim - 1)
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc_in", "x_i"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["y_i"])],
        "cumprod_step",
        [helper.make_tensor_value_info("acc_in", elem, rest),
         helper.make_tensor_value_info("x_i", elem, rest)],
        [helper.make_tensor_value_info("acc_out", elem, rest),
         helper.make_tensor_value_info("y_i", elem, rest)],
    )
    empty = ctx.add("Equal", [ctx.add("Size", [x]), ctx.constant(0, np.int64)])
    mark = len(ctx.nodes)
    one = helper.make_tensor("one", elem, [1], np.ones(1, work).tolist())
    init = ctx.add("ConstantOfShape", [ctx.add("Shape", [x], start=1)], value=one)
    _, scanned = ctx.add("Scan", [init, x], n_out=2, body=body, num_scan_inputs=1)
    steps, ctx.nodes[mark:] = ctx.nodes[mark:], []
    unchanged = ctx.fresh("unchanged")
    branch = [None] * ndim

    def graph(name, nodes, out):
        return helper.make_graph(nodes, name, [],
                                 [helper.make_tensor_value_info(out, elem, branch)])

    y = ctx.add("If", [empty],
                then_branch=graph("empty", [helper.make_node("Identity", [x], [unchanged])],
                                  unchanged),
                else_branch=graph("scan", steps, scanned))
    if axis:
        y = ctx.add("Transpose", [y], perm=[int(p) for p in np.argsort(perm)])
    return y
