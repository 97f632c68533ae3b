"""Linear algebra: Dot and the BLAS ops PyTensor's rewrites produce (Dot22, Dot22Scalar,
Gemm, Gemv, Ger, BatchedDot), Blockwise over a core op (matmul), Einsum, ExtractDiag
and AllocDiag.

Products follow ``np.matmul``: the output dtype is PyTensor's upcast of the inputs and
integers wrap. ONNX MatMul has no bool or 8/16-bit integer kernels, so those multiply in
int32 and are cast back: exact, since integer arithmetic wraps modulo 2**bits either way
(and a bool product is True exactly when the int32 count of true terms is nonzero).
Factorisations, solvers and determinants are in ``linalg_solve``.
"""

from __future__ import annotations

import functools

import numpy as np
from pytensor.tensor.basic import AllocDiag, ExtractDiag
from pytensor.tensor.blas import BatchedDot, Dot22, Dot22Scalar, Gemm, Gemv
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.math import Dot

from converter import compat
from converter._core import Context, convert_op
from converter.errors import UnsupportedOpError

Einsum = compat.lookup("Einsum")

_MATMUL_TYPES = {"int32", "int64", "uint32", "uint64", "float16", "float32", "float64"}

def work_dtype(dtype: str) -> str:
    """The dtype a product of ``dtype`` values is computed in (see the module docstring)."""
    return dtype if dtype in _MATMUL_TYPES else "int32"


def _i64(ctx: Context, value) -> str:
    return ctx.constant(np.asarray(value, dtype=np.int64), hint="i64")


def _in(ctx: Context, var, dtype: str) -> str:
    return ctx.cast(ctx.name_of(var), var.type.dtype, dtype)


def _matmul(ctx: Context, a, b, work: str) -> str:
    """MatMul in ``work``. A 1-d operand is made a row/column matrix and the axis dropped
    after, as PyTensor 3's ``dot`` does: ONNX Runtime's 1-d MatMul returns stale memory for
    an empty contraction and rejects a matrix with 0 rows."""
    names = [_in(ctx, a, work), _in(ctx, b, work)]
    vectors = [v.type.ndim == 1 for v in (a, b)]
    for i, axis in enumerate((0, 1)):
        if vectors[i]:
            names[i] = ctx.add("Unsqueeze", [names[i], _i64(ctx, [axis])])
    out = ctx.add("MatMul", names)
    drop = [axis for axis, vec in zip((-2, -1), vectors, strict=True) if vec]
    return ctx.add("Squeeze", [out, _i64(ctx, drop)]) if drop else out


def _plus_scaled(ctx: Context, term: str, scale: str, y: str, work: str) -> str:
    """``term + scale * y``, but ``term`` itself when ``scale == 0``: BLAS (and PyTensor's
    perform) never read ``y`` then, so nan/inf in ``y`` must not propagate, and a -0.0
    ``term`` stays -0.0 (adding a +0.0 would give +0.0). Built as ``term - Where(scale == 0,
    +0.0, -scale * y)``, ``x - (+0.0)`` being ``x`` for every x: -0.0 cannot come from the
    Where, as ONNX Runtime's Where turns a -0.0 from its first slot, or from a broadcast
    scalar, into +0.0. Integers need no guard."""
    if np.dtype(work).kind != "f":
        return ctx.add("Add", [term, ctx.add("Mul", [scale, y])])
    zero = ctx.constant(np.zeros((), dtype=work))
    scaled = ctx.add("Mul", [ctx.add("Neg", [scale]), y])
    return ctx.add("Sub", [term, ctx.add("Where", [ctx.add("Equal", [scale, zero]), zero,
                                                   scaled])])


def _unless_zero(ctx: Context, scale: str, term: str, work: str) -> str:
    """``term``, but -0.0 where ``scale == 0`` (floats). Built as -Where(.., +0.0, -term):
    ONNX Runtime's Where turns a -0.0 taken from its first slot into +0.0."""
    if np.dtype(work).kind != "f":
        return term
    zero = ctx.constant(np.zeros((), dtype=work))
    kept = ctx.add("Where", [ctx.add("Equal", [scale, zero]), zero, ctx.add("Neg", [term])])
    return ctx.add("Neg", [kept])


@convert_op.register(Dot)
@convert_op.register(Dot22)
@convert_op.register(BatchedDot)
def _dot(op, ctx: Context, node):
    """``np.matmul`` on 1-/2-d (Dot, Dot22) or equal-batch 3-d (BatchedDot) operands."""
    out = node.outputs[0].type.dtype
    work = work_dtype(out)
    return [ctx.cast(_matmul(ctx, *node.inputs, work), work, out)]


@convert_op.register(Dot22Scalar)
def _dot22scalar(op, ctx: Context, node):
    """``a * dot(x, y)`` as PyTensor's perform computes it (no zero-``a`` shortcut)."""
    x, y, a = node.inputs
    out = node.outputs[0].type.dtype
    return [ctx.add("Mul", [_in(ctx, a, out), _matmul(ctx, x, y, out)])]


@convert_op.register(Gemm)
def _gemm(op, ctx: Context, node):
    """``b*z + a*dot(x, y)`` with ``z`` ignored when ``b == 0``; ONNX Gemm takes alpha and
    beta as attributes, PyTensor as tensors, so MatMul/Mul/Add are used instead."""
    z, a, x, y, b = node.inputs
    out = node.outputs[0].type.dtype
    prod = ctx.add("Mul", [_in(ctx, a, out), _matmul(ctx, x, y, out)])
    return [_plus_scaled(ctx, prod, _in(ctx, b, out), _in(ctx, z, out), out)]


@convert_op.register(Gemv)
def _gemv(op, ctx: Context, node):
    """``alpha*dot(A, x) + beta*y`` with ``y`` ignored when ``beta == 0``. Gemv accepts any
    dtype (integers wrap); alpha and beta are taken in the output's working dtype."""
    y, alpha, A, x, beta = node.inputs
    out = node.outputs[0].type.dtype
    work = work_dtype(out)
    prod = ctx.add("Mul", [_matmul(ctx, A, x, work), _in(ctx, alpha, work)])
    res = _plus_scaled(ctx, prod, _in(ctx, beta, work), _in(ctx, y, work), work)
    return [ctx.cast(res, work, out)]


def _ger(op, ctx: Context, node):
    """``A + alpha * outer(x, y)``, except that ``alpha == 0`` returns ``A`` untouched (BLAS
    GER returns early, so nan/inf in x or y do not propagate)."""
    A, alpha, x, y = node.inputs
    dtype = node.outputs[0].type.dtype
    a = ctx.name_of(alpha)
    col = ctx.add("Unsqueeze", [ctx.add("Mul", [a, ctx.name_of(x)]), _i64(ctx, [1])])
    update = _unless_zero(ctx, a, ctx.add("Mul", [col, ctx.name_of(y)]), dtype)
    return [ctx.add("Add", [ctx.name_of(A), update])]


for _cls in compat.present("Ger"):  # PyTensor < 3.3
    convert_op.register(_cls)(_ger)


@functools.singledispatch
def blockwise_rule(core_op, ctx: Context, node):
    """Convert ``node``, a Blockwise applying ``core_op`` over leading batch axes."""
    raise UnsupportedOpError(node.op, [i.type for i in node.inputs],
                             f"no rule for Blockwise over {type(core_op).__name__}")


@convert_op.register(Blockwise)
def _blockwise(op, ctx: Context, node):
    return blockwise_rule(op.core_op, ctx, node)


# MatMul broadcasts over leading axes exactly as Blockwise does.
blockwise_rule.register(Dot)(_dot)


def inline_inner_graph(ctx: Context, node) -> list[str]:
    """Convert an OpFromGraph's inner graph in place, its inputs bound to ``node``'s."""
    fgraph = node.op.fgraph
    for inner, outer in zip(fgraph.inputs, node.inputs, strict=True):
        ctx.bind(inner, ctx.name_of(outer))
    for inner_node in fgraph.toposort():
        names = list(convert_op(inner_node.op, ctx, inner_node))
        for var, name in zip(inner_node.outputs, names, strict=True):
            ctx.bind(var, name)
    return [ctx.name_of(v) for v in fgraph.outputs]


if Einsum is not None:

    @convert_op.register(Einsum)
    def _einsum(op, ctx: Context, node):
        """Float einsum is ONNX Einsum with the same subscripts (numpy's syntax, implicit
        output included). Integer and bool einsum keep PyTensor's inner graph, whose dtypes
        are not one contraction's: pairwise products wrap in the input dtype while single-
        operand sums (``ii->i``, ``ij->``) go through Sum and come out int64."""
        dtypes = {v.type.dtype for v in (*node.inputs, *node.outputs)}
        if len(dtypes) == 1 and np.dtype(dtypes.pop()).kind == "f":
            names = [ctx.name_of(v) for v in node.inputs]
            return [ctx.add("Einsum", names, equation=op.subscripts)]
        return inline_inner_graph(ctx, node)



def _dim(ctx: Context, shape: str, axis: int) -> str:
    """Dimension ``axis`` of the 1-D ``shape`` as a 0-d int64."""
    return ctx.add("Gather", [shape, _i64(ctx, axis)], axis=0)


@convert_op.register(ExtractDiag)
def _extract_diag(op, ctx: Context, node):
    """``numpy.diagonal``: ONNX has no diagonal operator, so the two axes are moved last,
    flattened into one, and the diagonal's flat indices ``start + i*(m+1)`` gathered."""
    (var,) = node.inputs
    nd, k = var.type.ndim, op.offset
    perm = [a for a in range(nd) if a not in (op.axis1, op.axis2)] + [op.axis1, op.axis2]
    x = ctx.name_of(var)
    if perm != list(range(nd)):
        x = ctx.add("Transpose", [x], perm=perm)
    shape = ctx.add("Shape", [x])
    n, m = _dim(ctx, shape, nd - 2), _dim(ctx, shape, nd - 1)
    if k >= 0:
        length = ctx.add("Min", [n, ctx.add("Sub", [m, _i64(ctx, k)])])
        start = _i64(ctx, k)
    else:
        length = ctx.add("Min", [ctx.add("Sub", [n, _i64(ctx, -k)]), m])
        start = ctx.add("Mul", [m, _i64(ctx, -k)])
    length = ctx.add("Max", [length, _i64(ctx, 0)])
    steps = ctx.add("Range", [_i64(ctx, 0), length, _i64(ctx, 1)])
    stride = ctx.add("Add", [m, _i64(ctx, 1)])
    flat_idx = ctx.add("Add", [ctx.add("Mul", [steps, stride]), start])
    batch = ctx.add("Slice", [shape, _i64(ctx, [0]), _i64(ctx, [nd - 2])])
    nm = ctx.add("Unsqueeze", [ctx.add("Mul", [n, m]), _i64(ctx, [0])])
    flat = ctx.add("Reshape", [x, ctx.add("Concat", [batch, nm], axis=0)], allowzero=1)
    return [ctx.add("Gather", [flat, flat_idx], axis=nd - 2)]


def _zero_where(ctx: Context, off: str, x: str, dtype: str) -> str:
    """0 where ``off``, else ``x`` (in Where's second slot: ONNX Runtime's Where turns a
    -0.0 taken from its first slot into +0.0). ONNX Runtime's Where lacks bool and
    16-bit/uint64 kernels: bool uses And, the others select on an exact reinterpreting cast."""
    if dtype == "bool":
        return ctx.add("And", [ctx.add("Not", [off]), x])
    wide = {"int16": "int32", "uint16": "int32", "uint64": "int64"}.get(dtype, dtype)
    zero = ctx.constant(np.zeros((), dtype=wide))
    picked = ctx.add("Where", [off, zero, ctx.cast(x, dtype, wide)])
    return ctx.cast(picked, wide, dtype)


@convert_op.register(AllocDiag)
def _alloc_diag(op, ctx: Context, node):
    """``v`` on diagonal ``offset`` of zero matrices (new axes at axis1/axis2). PyTensor's
    inner graph uses set_subtensor; here ``v`` is zero-padded to the side N = n + |offset|,
    row r taking padded[r] where column - row == offset."""
    (var,) = node.inputs
    dtype, k, nd = var.type.dtype, op.offset, var.type.ndim
    v = ctx.name_of(var)
    shape = ctx.add("Shape", [v])
    batch = ctx.add("Slice", [shape, _i64(ctx, [0]), _i64(ctx, [nd - 1])])
    zero = ctx.constant(np.zeros((), dtype=dtype))
    parts = [v]
    if k < 0:
        parts.insert(0, ctx.add("Expand", [zero, ctx.add("Concat", [batch, _i64(ctx, [-k])],
                                                          axis=0)]))
    if k > 0:
        parts.append(ctx.add("Expand", [zero, ctx.add("Concat", [batch, _i64(ctx, [k])], axis=0)]))
    padded = parts[0] if len(parts) == 1 else ctx.add("Concat", parts, axis=-1)
    side = ctx.add("Add", [_dim(ctx, shape, nd - 1), _i64(ctx, abs(k))])
    idx = ctx.add("Range", [_i64(ctx, 0), side, _i64(ctx, 1)])
    diff = ctx.add("Sub", [ctx.add("Unsqueeze", [idx, _i64(ctx, [0])]),
                           ctx.add("Unsqueeze", [idx, _i64(ctx, [1])])])
    # no Not: ONNX Runtime's optimizer swaps the slots of a Where over Not
    off_diag = ctx.add("Or", [ctx.add("Less", [diff, _i64(ctx, k)]),
                              ctx.add("Greater", [diff, _i64(ctx, k)])])
    rows = ctx.add("Unsqueeze", [padded, _i64(ctx, [-1])])
    out = _zero_where(ctx, off_diag, rows, dtype)
    perm = list(range(nd - 1))
    perm.insert(op.axis1, nd - 1)
    perm.insert(op.axis2, nd)
    if perm != list(range(nd + 1)):
        out = ctx.add("Transpose", [out], perm=perm)
    return [out]
