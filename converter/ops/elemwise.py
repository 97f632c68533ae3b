"""Elemwise: one rule for the Op, a second dispatch on its scalar op.

Scalar ops that map one-to-one onto an ONNX operator are table rows; the rest are functions
whose docstrings say how PyTensor's semantics differ from ONNX's. Every scalar rule works on
whole tensors (ONNX broadcasting matches PyTensor's once DimShuffle has aligned ranks).
Rules needing longer compositions (division, rounding, log/exp variants) are in
``elemwise_math``; the trigonometric and hyperbolic functions ONNX Runtime has no float64 kernel
for are in ``elemwise_trig``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor.scalar.basic as ps
from pytensor.tensor.elemwise import Elemwise

from converter import compat
from converter._core import Context, convert_op
from converter.errors import UnsupportedOpError

# Computed in the output dtype: inputs are cast to it first (PyTensor's C code does the same).
ARITHMETIC = {
    ps.Sub: "Sub", ps.TrueDiv: "Div", ps.Sign: "Sign", ps.Reciprocal: "Reciprocal",
    ps.Exp: "Exp", ps.Log: "Log", ps.Sqrt: "Sqrt",
    ps.Sin: "Sin", ps.Cos: "Cos", ps.Tanh: "Tanh",
    ps.Floor: "Floor", ps.Ceil: "Ceil", ps.RoundHalfToEven: "Round",
    ps.Identity: "Identity",
}

# Folded left over any number of inputs: (operator for numbers, operator for bools).
# numpy's add/mul/maximum/minimum on bools are logical or/and.
VARIADIC = {
    ps.Add: ("Add", "Or"), ps.Mul: ("Mul", "And"),
    ps.Maximum: ("Max", "Or"), ps.Minimum: ("Min", "And"),
    ps.ScalarMaximum: ("Max", "Or"), ps.ScalarMinimum: ("Min", "And"),
}

# Computed in the inputs' common dtype; the output is bool.
COMPARISON = {
    ps.EQ: "Equal", ps.LT: "Less", ps.GT: "Greater", ps.LE: "LessOrEqual", ps.GE: "GreaterOrEqual",
}

# (operator for bools, operator for integers); computed in the output dtype.
BITWISE = {
    ps.AND: ("And", "BitwiseAnd"), ps.OR: ("Or", "BitwiseOr"), ps.XOR: ("Xor", "BitwiseXor"),
    ps.Invert: ("Not", "BitwiseNot"),
}


def scalar_table() -> dict[type, str]:
    """Every table-driven scalar op and the ONNX operator it becomes."""
    return {**ARITHMETIC, **COMPARISON,
            **{cls: ops[0] for cls, ops in VARIADIC.items()},
            **{cls: ops[1] for cls, ops in BITWISE.items()}}


def cast_all(ctx: Context, ins, in_dtypes, dtype) -> list[str]:
    return [ctx.cast(n, d, dtype) for n, d in zip(ins, in_dtypes, strict=True)]


def is_bool(dtype) -> bool:
    return np.dtype(dtype) == np.bool_


def full_like(ctx: Context, like: str, value, dtype) -> str:
    """A tensor of ``value`` shaped like ``like`` (a constant alone would lose the shape)."""
    return ctx.add("Expand", [ctx.constant(np.asarray(value, dtype)), ctx.add("Shape", [like])])


@functools.singledispatch
def scalar_rule(sop, ctx: Context, ins, in_dtypes, out_dtypes) -> list[str]:
    """Emit ``sop`` applied elementwise to the ONNX values ``ins``; return output names."""
    for cls in type(sop).__mro__:
        if cls in ARITHMETIC:
            return [ctx.add(ARITHMETIC[cls], cast_all(ctx, ins, in_dtypes, out_dtypes[0]))]
        if cls in VARIADIC:
            return [_fold(ctx, VARIADIC[cls], ins, in_dtypes, out_dtypes[0])]
        if cls in COMPARISON:
            return [_compare(ctx, COMPARISON[cls], ins, in_dtypes)]
        if cls in BITWISE:
            for_bool, for_int = BITWISE[cls]
            out = out_dtypes[0]
            onnx_op = for_bool if is_bool(out) else for_int
            return [ctx.add(onnx_op, cast_all(ctx, ins, in_dtypes, out))]
    raise UnsupportedOpError(sop, in_dtypes, "no scalar rule for this scalar op")


def _fold(ctx: Context, ops, ins, in_dtypes, out) -> str:
    """Left fold. Before PyTensor 3.3, numpy reduces 3+ float16 operands (np.sum, np.prod) in
    float32, and so does this (ONNX Runtime may too, having dropped the Casts between its
    float16 nodes); 3.3 rounds to float16 after each operand, as the plain fold does.
    int16/uint16 Max/Min run in int32 (no ONNX Runtime kernel): exact, same order."""
    op = ops[1] if is_bool(out) else ops[0]
    widen = (np.dtype(out) == np.float16 and len(ins) > 2
             and not compat.builds("float16_variadic_in_dtype"))
    work = "float32" if widen else out
    names = [ctx.to_kernel(op, n, work) for n in cast_all(ctx, ins, in_dtypes, work)]
    result = names[0]
    for name in names[1:]:
        result = ctx.add(op, [result, name])
    result = ctx.from_kernel(op, result, work)
    return ctx.cast(ctx.add("Identity", [result]) if len(names) == 1 else result, work, out)


def _compare(ctx: Context, onnx_op: str, ins, in_dtypes) -> str:
    """ONNX orders numbers only: bools are compared as uint8 (False < True, as numpy)."""
    common = ps.upcast(*in_dtypes)
    if is_bool(common) and onnx_op != "Equal":
        common = "uint8"
    return ctx.add(onnx_op, cast_all(ctx, ins, in_dtypes, common))


for _cls in scalar_table():
    # Registering the table classes makes them show in supported_ops(); the default
    # implementation above does the work.
    scalar_rule.register(_cls)(scalar_rule.dispatch(object))


@convert_op.register(Elemwise)
def _elemwise(op, ctx: Context, node):
    # Inputs keep the leading length-1 axes DimShuffle gave them although ONNX would
    # broadcast without: with rank-0 operands instead, ONNX Runtime 1.32 ran the linear
    # regression of benchmarks/models.py at 100,000 observations 1.6 times slower.
    ins = [ctx.name_of(v) for v in node.inputs]
    ranks = [v.type.ndim for v in node.inputs]
    outs = scalar_rule(
        op.scalar_op, ctx, ins,
        [v.type.dtype for v in node.inputs], [v.type.dtype for v in node.outputs],
    )
    return [_broadcast_to_inputs(ctx, name, ins, ranks, used, node)
            for name, used in zip(outs, _used_inputs(op.scalar_op, len(ins)), strict=True)]


def _used_inputs(sop, n_in: int) -> list[set[int]]:
    """Per output, the positions of the inputs it depends on (a Composite output may skip
    some; any other scalar op uses them all)."""
    if not isinstance(sop, ps.Composite):
        return [set(range(n_in)) for _ in range(sop.nout)]
    result = []
    for out in sop.fgraph.outputs:
        used = set(compat.lookup("ancestors")([out]))
        result.append({i for i, v in enumerate(sop.fgraph.inputs) if v in used})
    return result


def _spanned(node, positions) -> set[int]:
    """The axes on which some input at ``positions`` is not declared broadcastable: there
    its length is the output's (PyTensor refuses to broadcast an axis at run time unless
    its static length is 1)."""
    return {axis for i in positions
            for axis, dim in enumerate(node.inputs[i].type.shape) if dim != 1}


def _broadcast_to_inputs(ctx: Context, name: str, ins, ranks, used: set[int], node) -> str:
    """Every scalar rule broadcasts its operands, so ``name`` has the broadcast shape of the
    inputs it was computed from, of the largest rank among them. Where that is short of the
    output (a scalar graph returned a constant or skipped inputs), the axes only a skipped
    input spans are expanded against it, fewest inputs first, and missing leading axes
    (a constant's) are added."""
    if name in ins:
        used = {ins.index(name)}
    elif ctx.is_initializer(name):
        used = set()
    ndim = node.outputs[0].type.ndim
    rank = max((ranks[i] for i in used), default=0)
    missing = _spanned(node, range(len(ins))) - _spanned(node, used)
    while missing:
        best = max(range(len(ins)), key=lambda i: (len(_spanned(node, [i]) & missing),
                                                   ranks[i]))
        shape, shape_rank = _shape(ctx, ins[best], ranks[best], node.inputs[best])
        name = ctx.add("Expand", [name, shape])
        missing -= _spanned(node, [best])
        rank = max(rank, shape_rank)
    if rank < ndim:
        lead = np.arange(ndim - rank, dtype=np.int64)
        name = ctx.add("Unsqueeze", [name, ctx.constant(lead, hint="axes")])
    return name


def _shape(ctx: Context, name: str, rank: int, var) -> tuple[str, int]:
    """The shape of ``var`` (held in ``name``, of rank ``rank``) and its length: a constant
    of the whole static shape when it is known."""
    if None not in var.type.shape:
        return ctx.constant(np.asarray(var.type.shape, np.int64), hint="shape"), var.type.ndim
    return ctx.add("Shape", [name]), rank


@scalar_rule.register(ps.NEQ)
def _neq(sop, ctx, ins, in_dtypes, out_dtypes):
    """ONNX has no NotEqual: Not(Equal) in the inputs' common dtype (nan != nan is True)."""
    return [ctx.add("Not", [_compare(ctx, "Equal", ins, in_dtypes)])]


@scalar_rule.register(ps.Neg)
def _neg(sop, ctx, ins, in_dtypes, out_dtypes):
    """ONNX Neg has no unsigned kernels; PyTensor wraps around, which 0 - x reproduces."""
    (x,) = cast_all(ctx, ins, in_dtypes, out_dtypes[0])
    if np.dtype(out_dtypes[0]).kind == "u":
        return [ctx.add("Sub", [ctx.constant(np.zeros((), out_dtypes[0])), x])]
    return [ctx.add("Neg", [x])]


@scalar_rule.register(ps.Abs)
def _abs(sop, ctx, ins, in_dtypes, out_dtypes):
    """numpy's abs of a bool is the bool itself; ONNX Abs has no bool."""
    (x,) = cast_all(ctx, ins, in_dtypes, out_dtypes[0])
    return [ctx.add("Identity" if is_bool(out_dtypes[0]) else "Abs", [x])]


@scalar_rule.register(ps.Sqr)
def _sqr(sop, ctx, ins, in_dtypes, out_dtypes):
    """x * x (ONNX has no square); on bools that is x and x."""
    return [_fold(ctx, VARIADIC[ps.Mul], [ins[0], ins[0]], in_dtypes * 2, out_dtypes[0])]


@scalar_rule.register(ps.IsNan)
@scalar_rule.register(ps.IsInf)
def _isnan_isinf(sop, ctx, ins, in_dtypes, out_dtypes):
    """ONNX IsNaN/IsInf take floats only; integers and bools are never nan or inf.
    IsInf takes float16 only from opset 20, so float16 is widened (exactly) to float32."""
    if np.dtype(in_dtypes[0]).kind != "f":
        return [full_like(ctx, ins[0], False, "bool")]
    x = ctx.cast(ins[0], in_dtypes[0], "float32") if in_dtypes[0] == "float16" else ins[0]
    return [ctx.add("IsNaN" if isinstance(sop, ps.IsNan) else "IsInf", [x])]


@scalar_rule.register(ps.Cast)
def _cast(sop, ctx, ins, in_dtypes, out_dtypes):
    """Casting to bool means ``x != 0`` (so nan becomes True), as in C and numpy."""
    return [ctx.cast(ins[0], in_dtypes[0], out_dtypes[0])]


@scalar_rule.register(ps.Second)
def _second(sop, ctx, ins, in_dtypes, out_dtypes):
    """The second input broadcast against the first (whose values are ignored)."""
    y = ctx.cast(ins[1], in_dtypes[1], out_dtypes[0])
    return [ctx.add("Expand", [y, ctx.add("Shape", [ins[0]])])]


@scalar_rule.register(ps.Switch)
def _switch(sop, ctx, ins, in_dtypes, out_dtypes):
    """Where(cond != 0, a, b): PyTensor accepts any numeric condition, ONNX wants bool.
    Where selects, so the dtypes ONNX Runtime lacks run in a wider one (Context.add_typed)."""
    cond = ctx.cast(ins[0], in_dtypes[0], "bool")
    a, b = cast_all(ctx, ins[1:], in_dtypes[1:], out_dtypes[0])
    return [ctx.add_typed("Where", [cond, a, b], out_dtypes[0], data=(1, 2))]


@scalar_rule.register(ps.Clip)
def _clip(sop, ctx, ins, in_dtypes, out_dtypes):
    """PyTensor: ``lo if x < lo else hi if x > hi else x``, with array bounds and lo > hi
    allowed. ONNX Clip wants scalar bounds and is min(max(x, lo), hi), which differs when
    lo > hi, so the nested Where is spelled out (comparisons as in ``_compare``)."""
    out = out_dtypes[0]
    x, lo, hi = cast_all(ctx, ins, in_dtypes, out)
    below = _compare(ctx, "Less", [x, lo], [out, out])
    above = _compare(ctx, "Greater", [x, hi], [out, out])
    inner = ctx.add_typed("Where", [above, hi, x], out, data=(1, 2))
    return [ctx.add_typed("Where", [below, lo, inner], out, data=(1, 2))]


@scalar_rule.register(ps.Composite)
def _composite(sop, ctx, ins, in_dtypes, out_dtypes):
    """Inline the fused scalar graph, applying each inner scalar op to whole tensors."""
    names = dict(zip(sop.fgraph.inputs, ins, strict=True))
    for var in sop.fgraph.variables:
        if var.owner is None and var not in names:
            names[var] = ctx.constant(np.asarray(var.data, dtype=var.type.dtype))
    for node in sop.fgraph.toposort():
        outs = scalar_rule(
            node.op, ctx, [names[v] for v in node.inputs],
            [v.type.dtype for v in node.inputs], [v.type.dtype for v in node.outputs],
        )
        names.update(zip(node.outputs, outs, strict=True))
    return [names[v] for v in sop.fgraph.outputs]
