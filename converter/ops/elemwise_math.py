"""Elemwise scalar ops that ONNX lacks or defines differently, built from ONNX primitives.

Float results follow numpy (PyTensor's Python implementation): float16 is computed in
float32 and rounded, as numpy's half loops do, so the compositions keep their accuracy.
The trigonometric and hyperbolic functions are in ``elemwise_trig``.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.scalar.basic as ps
import pytensor.scalar.math as psm
import pytensor.tensor.special as pt_special
import pytensor.tensor.xlogx as pt_xlogx

from converter import compat
from converter._core import Context, convert_op, onnx_dtype
from converter.ops.elemwise import cast_all, is_bool, scalar_rule


def _in_float(ctx: Context, ins, in_dtypes, out, compute) -> str:
    """``compute(ctx, names, dtype)`` on the inputs cast to ``out`` (float32 for float16)."""
    work = "float32" if np.dtype(out) == np.float16 else out
    return ctx.cast(compute(ctx, cast_all(ctx, ins, in_dtypes, work), work), work, out)


def _float_rule(compute):
    """Register-able scalar rule computing one float output with ``compute``."""

    def rule(sop, ctx, ins, in_dtypes, out_dtypes):
        return [_in_float(ctx, ins, in_dtypes, out_dtypes[0], compute)]

    rule.__doc__ = compute.__doc__
    return rule


def _c(ctx: Context, value, dtype) -> str:
    return ctx.constant(np.asarray(value, dtype))


def _differs(ctx, a, b, dt):
    """``a != b`` (false where either is nan) written so that the value for ``a == b`` goes
    in Where's second slot: ONNX Runtime's Where turns a -0.0 taken from its first slot
    into +0.0, and its optimizer swaps the slots of a Where over Not."""
    return ctx.add("Greater", [ctx.add("Abs", [ctx.add("Sub", [a, b])]), _c(ctx, 0, dt)])


def _expm1(ctx, x, dt):
    """exp(x) - 1 without cancellation (Kahan): (u - 1) * x / log(u) with u = exp(x),
    exact at u == 1 (x itself, so -0.0 stays -0.0), -1 where u - 1 == -1, and u itself
    where u overflows."""
    u = ctx.add("Exp", [x])
    um1 = ctx.add("Sub", [u, _c(ctx, 1, dt)])
    general = ctx.add("Mul", [um1, ctx.add("Div", [x, ctx.add("Log", [u])])])
    result = ctx.add("Where", [ctx.add("IsInf", [u]), u, general])
    result = ctx.add("Where", [ctx.add("Equal", [um1, _c(ctx, -1, dt)]), _c(ctx, -1, dt), result])
    return ctx.add("Where", [_differs(ctx, u, _c(ctx, 1, dt), dt), result, x])


def _log1p(ctx, x, dt):
    """log(1 + x) without cancellation: log(u) + (x - (u - 1)) / u with u = 1 + x, the
    second term being the rounding error of u (exact by Sterbenz) taken to first order;
    x itself where u == 1, and log(u) where u is 0 or +inf (the term is nan there).
    One rounding fewer than Kahan's log(u) * x / (u - 1), which came to 3 ulp in float64
    asinh on a CPU where ONNX Runtime's Log is itself one ulp off (this form: 2)."""
    one = _c(ctx, 1, dt)
    u = ctx.add("Add", [one, x])
    log_u = ctx.add("Log", [u])
    general = ctx.add("Add", [log_u, ctx.add("Div", [
        ctx.add("Sub", [x, ctx.add("Sub", [u, one])]), u])])
    special = ctx.add("Or", [ctx.add("IsInf", [u], detect_negative=0),
                             ctx.add("Equal", [u, _c(ctx, 0, dt)])])
    result = ctx.add("Where", [special, log_u, general])
    return ctx.add("Where", [_differs(ctx, u, one, dt), result, x])


def _exp2(ctx, names, dt):
    """ONNX has no exp2: Pow(2, x)."""
    return ctx.add("Pow", [_c(ctx, 2, dt), names[0]])


def _log_base(base):
    def compute(ctx, names, dt):
        """ONNX has no log2/log10: log(x) / log(base)."""
        return ctx.add("Div", [ctx.add("Log", names), _c(ctx, math.log(base), dt)])

    return compute


def _scale(factor):
    def compute(ctx, names, dt):
        """numpy's deg2rad/rad2deg: x times the constant in x's dtype."""
        return ctx.add("Mul", [names[0], _c(ctx, factor, dt)])

    return compute


def _log1mexp(ctx, names, dt):
    """PyTensor's log(1 - exp(x)): log1p(-exp(x)) below log(0.5), else log(-expm1(x))."""
    (x,) = names
    large = ctx.add("GreaterOrEqual", [x, _c(ctx, math.log(0.5), dt)])
    lo = _log1p(ctx, ctx.add("Neg", [ctx.add("Exp", [x])]), dt)  # -0.0 far below: 2nd slot
    hi = ctx.add("Log", [ctx.add("Neg", [_expm1(ctx, x, dt)])])
    return ctx.add("Where", [large, hi, lo])


def _sigmoid(ctx, names, dt):
    """1 / (1 + exp(-x)), a few ulp everywhere: ONNX Runtime's Sigmoid is accurate only in
    absolute terms (float32 sigmoid(-18) is 0, float64 sigmoid(-40) is 0)."""
    (x,) = names
    one = _c(ctx, 1, dt)
    return ctx.add("Div", [one, ctx.add("Add", [one, ctx.add("Exp", [ctx.add("Neg", [x])])])])


def _softplus(ctx, names, dt):
    """PyTensor's piecewise log(1 + exp(x)) (exp(x) below -37, log1p(exp(x)) below 18,
    x + exp(-x) below 33.3, else x); ONNX Softplus is the naive log(exp(x) + 1), which
    loses everything below about -17. The exp(x) piece needs no node of its own: below -37,
    1 + exp(x) rounds to 1 in every float dtype, where ``_log1p`` returns exp(x) itself."""
    (x,) = names
    pieces = [
        (18.0, _log1p(ctx, ctx.add("Exp", [x]), dt)),
        (33.3, ctx.add("Add", [x, ctx.add("Exp", [ctx.add("Neg", [x])])])),
    ]
    result = x
    for bound, value in reversed(pieces):
        result = ctx.add("Where", [ctx.add("Less", [x, _c(ctx, bound, dt)]), value, result])
    return result


def _trunc(ctx, names, dt):
    """ONNX has no trunc: floor(|x|) with x's sign put back by a product (a Where would
    lose the -0.0 of trunc(-0.5) in ONNX Runtime, see ``_differs``); 1/x < 0 finds -0.0."""
    (x,) = names
    zero = _c(ctx, 0, dt)
    negative = ctx.add("Or", [ctx.add("Less", [x, zero]),
                              ctx.add("Less", [ctx.add("Div", [_c(ctx, 1, dt), x]), zero])])
    sign = ctx.add("Where", [negative, _c(ctx, -1, dt), _c(ctx, 1, dt)])
    return ctx.add("Mul", [ctx.add("Floor", [ctx.add("Abs", [x])]), sign])


def _round_half_away(ctx, names, dt):
    """Round half away from zero (C's round). ONNX Round breaks ties to even, so exact
    ties (|x - trunc(x)| == 0.5, computed exactly) become trunc(x) + sign(x). floor(x + 0.5)
    would be wrong for 0.49999997 and for odd integers above 2**(mantissa bits)."""
    (x,) = names
    t = _trunc(ctx, names, dt)
    tie = ctx.add("Equal", [ctx.add("Abs", [ctx.add("Sub", [x, t])]), _c(ctx, 0.5, dt)])
    away = ctx.add("Add", [t, ctx.add("Sign", [x])])
    return ctx.add("Where", [tie, away, ctx.add("Round", [x])])


def _float_floor_mod(ctx, x, y, dt):
    """numpy's float remainder: fmod, moved into the divisor's sign. Returns (fmod, adjust,
    remainder) where ``adjust`` marks the elements whose quotient drops by one."""
    fmod = ctx.add("Mod", [x, y], fmod=1)
    zero = _c(ctx, 0, dt)
    differ = ctx.add("Xor", [ctx.add("Less", [y, zero]), ctx.add("Less", [fmod, zero])])
    adjust = ctx.add("And", [ctx.add("Not", [ctx.add("Equal", [fmod, zero])]), differ])
    return fmod, adjust, ctx.add("Where", [adjust, ctx.add("Add", [fmod, y]), fmod])


def _float_int_div(ctx, names, dt):
    """numpy's float floor_divide (npy_divmod): (x - fmod(x, y)) / y, one less where the
    remainder changes sign, snapped to the nearest integer; x / y where y == 0. This is not
    floor(x / y): 1 // 0.1 is 9."""
    x, y = names
    fmod, adjust, _ = _float_floor_mod(ctx, x, y, dt)
    one = _c(ctx, 1, dt)
    div = ctx.add("Div", [ctx.add("Sub", [x, fmod]), y])
    div = ctx.add("Where", [adjust, ctx.add("Sub", [div, one]), div])
    floor = ctx.add("Floor", [div])
    up = ctx.add("Greater", [ctx.add("Sub", [div, floor]), _c(ctx, 0.5, dt)])
    snapped = ctx.add("Where", [up, ctx.add("Add", [floor, one]), floor])
    quotient = ctx.add("Div", [x, y])
    # a zero quotient has the sign of x / y (npy_divmod's copysign(0, a / b)); 1 / -0.0 < 0
    negative = ctx.add("Less", [ctx.add("Div", [_c(ctx, 1, dt), quotient]), _c(ctx, 0, dt)])
    snapped = _zero_signed(ctx, snapped, negative, dt)
    y_zero = ctx.add("Equal", [y, _c(ctx, 0, dt)])
    return ctx.add("Where", [y_zero, quotient, snapped])


def _zero_signed(ctx, v, negative, dt):
    """``v`` with its zeros made -0.0 where ``negative``, else +0.0. Where only ever picks
    +0.0 or ±1 here: ONNX Runtime's optimized Where turns a selected -0.0 into +0.0, so the
    sign comes from a product."""
    zero = ctx.add("Equal", [v, _c(ctx, 0, dt)])
    base = ctx.add("Where", [zero, _c(ctx, 0, dt), v])
    sign = ctx.add("Where", [negative, _c(ctx, -1, dt), _c(ctx, 1, dt)])
    return ctx.add("Mul", [base, ctx.add("Where", [zero, sign, _c(ctx, 1, dt)])])


def _float_mod(ctx, names, dt):
    """numpy's float remainder: the sign of the divisor (ONNX Mod fmod=1 keeps x's sign),
    a zero remainder included (npy_divmod's copysign(0, b))."""
    x, y = names
    remainder = _float_floor_mod(ctx, x, y, dt)[2]
    return _zero_signed(ctx, remainder, ctx.add("Less", [y, _c(ctx, 0, dt)]), dt)


def _as_mask(ctx, cond, dt):
    return ctx.add("Cast", [cond], to=onnx_dtype(dt))


def _safe_divisor(ctx, y, dt):
    """y with 0 (and -1 for signed types) replaced by 1, and the two masks. Integer
    division by 0, or of the minimum by -1, traps in ONNX Runtime's kernels; numpy gives 0
    and wraps. Arithmetic masks rather than Where, which lacks some integer kernels."""
    zero = ctx.add("Equal", [y, _c(ctx, 0, dt)])
    bad = zero
    minus_one = None
    if np.dtype(dt).kind == "i":
        minus_one = ctx.add("Equal", [y, _c(ctx, -1, dt)])
        bad = ctx.add("Or", [zero, minus_one])
    fix = ctx.add("Mul", [_as_mask(ctx, bad, dt), ctx.add("Sub", [_c(ctx, 1, dt), y])])
    return ctx.add("Add", [y, fix]), zero, minus_one


def _int_divmod(ctx, x, y, dt):
    """Floor division and Python's remainder on integers, with plain integer arithmetic
    (ONNX Runtime's integer Mod goes through double). ONNX Div truncates, so the quotient
    drops by one (and the remainder gains y) where the remainder is nonzero and its sign
    differs from y's; x // 0, x % 0 and x % -1 are 0 and x // -1 is -x (wrapping), as in
    numpy."""
    safe, zero, minus_one = _safe_divisor(ctx, y, dt)
    q = ctx.add("Div", [x, safe])
    r = ctx.add("Sub", [x, ctx.add("Mul", [q, safe])])
    if minus_one is not None:
        zero_c = _c(ctx, 0, dt)
        differ = ctx.add("Xor", [ctx.add("Less", [r, zero_c]), ctx.add("Less", [safe, zero_c])])
        adjust = _as_mask(ctx, ctx.add("And", [ctx.add("Not", [ctx.add("Equal", [r, zero_c])]),
                                               differ]), dt)
        q = ctx.add("Sub", [q, adjust])
        r = ctx.add("Add", [r, ctx.add("Mul", [adjust, safe])])
        sign = ctx.add("Sub", [_c(ctx, 1, dt), ctx.add("Mul", [_c(ctx, 2, dt),
                                                               _as_mask(ctx, minus_one, dt)])])
        q = ctx.add("Mul", [q, sign])
    return ctx.add("Mul", [q, _as_mask(ctx, ctx.add("Not", [zero]), dt)]), r


def _int_div(ctx, x, y, dt):
    return _int_divmod(ctx, x, y, dt)[0]


def _int_mod(ctx, x, y, dt):
    return _int_divmod(ctx, x, y, dt)[1]


def _division_rule(float_compute, int_compute):
    def rule(sop, ctx, ins, in_dtypes, out_dtypes):
        out = out_dtypes[0]
        if np.dtype(out).kind == "f":
            return [_in_float(ctx, ins, in_dtypes, out, float_compute)]
        work = "uint8" if is_bool(out) else out
        x, y = cast_all(ctx, ins, in_dtypes, work)
        return [ctx.cast(int_compute(ctx, x, y, work), work, out)]

    rule.__doc__ = f"{float_compute.__doc__}\n\n{_int_divmod.__doc__}"
    return rule


scalar_rule.register(ps.IntDiv)(_division_rule(_float_int_div, _int_div))
scalar_rule.register(ps.Mod)(_division_rule(_float_mod, _int_mod))


@scalar_rule.register(ps.Pow)
def _pow(sop, ctx, ins, in_dtypes, out_dtypes):
    """ONNX Pow has float and int32/int64 kernels only; narrower integers are computed in
    int64 and cast back, which wraps as PyTensor's C code does."""
    out = np.dtype(out_dtypes[0])
    work = out if out.kind == "f" or out in (np.int32, np.int64) else np.dtype("int64")
    base, exp = cast_all(ctx, ins, in_dtypes, work)
    return [ctx.cast(ctx.add("Pow", [base, exp]), work, out)]


def _x_times(log_of):
    def compute(ctx, names, dt):
        """x * log(y) (or log1p(y)), and 0 wherever x == 0, even if y is 0 or nan."""
        x, y = names
        product = ctx.add("Mul", [x, log_of(ctx, y, dt)])
        return ctx.add("Where", [ctx.add("Equal", [x, _c(ctx, 0, dt)]), _c(ctx, 0, dt), product])

    return compute


def _log(ctx, y, dt):
    return ctx.add("Log", [y])


FLOAT_RULES = {
    ps.Exp2: _exp2, ps.Log2: _log_base(2), ps.Log10: _log_base(10),
    ps.Expm1: lambda ctx, names, dt: _expm1(ctx, names[0], dt),
    ps.Log1p: lambda ctx, names, dt: _log1p(ctx, names[0], dt),
    ps.Trunc: _trunc, ps.RoundHalfAwayFromZero: _round_half_away,
    psm.Log1mexp: _log1mexp, psm.Softplus: _softplus, psm.Sigmoid: _sigmoid,
}
# XlogX/XlogY0 are scalar ops up to PyTensor 2.x; 3.x replaced them with special.XLogY.
for _name, _compute in (("XlogX", lambda ctx, n, dt: _x_times(_log)(ctx, [n[0], n[0]], dt)),
                        ("XlogY0", _x_times(_log))):
    if hasattr(pt_xlogx, _name):
        FLOAT_RULES[getattr(pt_xlogx, _name)] = _compute

# PyTensor < 3.3 has scalar ops of their own; 3.3 builds a multiplication by a constant
for _name, _factor in (("Deg2Rad", math.pi / 180), ("Rad2Deg", 180 / math.pi)):
    if (_cls := compat.lookup(_name)) is not None:
        FLOAT_RULES[_cls] = _scale(_factor)

for _cls, _compute in FLOAT_RULES.items():
    scalar_rule.register(_cls)(_float_rule(_compute))


def _inline_inner_graph(op, ctx: Context, node):
    """PyTensor 3's XLogY/XLog1PY are symbolic ops whose inner graph is
    switch(eq(x, 0), 0, x * log(y)) (log1p(y)): converted node by node, so every
    intermediate keeps PyTensor's dtype."""
    for inner, outer in zip(op.fgraph.inputs, node.inputs, strict=True):
        ctx.bind(inner, ctx.name_of(outer))
    for inner_node in op.fgraph.toposort():
        outs = convert_op(inner_node.op, ctx, inner_node)
        for var, name in zip(inner_node.outputs, outs, strict=True):
            ctx.bind(var, name)
    return [ctx.name_of(v) for v in op.fgraph.outputs]


for _name in ("XLogY", "XLog1PY"):
    if hasattr(pt_special, _name):
        convert_op.register(getattr(pt_special, _name))(_inline_inner_graph)
