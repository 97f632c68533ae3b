"""Trigonometric and hyperbolic scalar ops: ONNX's operator where ONNX Runtime has a kernel
for the dtype, else (float64) fdlibm's and Cephes' algorithms built from ONNX primitives, each
within a few ulp of numpy (tests/test_dtype_fallbacks.py states the bounds); and atan2, which
ONNX lacks.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.scalar.basic as ps

from converter.ops.elemwise import cast_all, scalar_rule
from converter.ops.elemwise_math import _c, _expm1, _float_rule, _log1p


def _signbit(ctx, x, dt):
    """True for negative numbers and -0.0 (whose reciprocal is -inf)."""
    negative_zero = ctx.add("IsInf", [ctx.add("Reciprocal", [x])], detect_positive=0)
    return ctx.add("Or", [ctx.add("Less", [x, _c(ctx, 0, dt)]), negative_zero])


# Cephes' atan: x + x^3 P(x^2) / Q(x^2) on [0, 0.66], after reducing larger arguments
# with atan(x) = pi/2 + atan(-1/x) and pi/4 + atan((x - 1) / (x + 1)).
ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1,
          -1.228866684490136173410e2, -6.485021904942025371773e1)
ATAN_Q = (1.0, 2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2,
          4.853903996359136964868e2, 1.945506571482613964425e2)
T3P8, MOREBITS = 2.41421356237309504880, 6.123233995736765886130e-17  # tan(3pi/8), pi/2 - PIO2
TINY, HUGE = 2.0**-28, 2.0**28  # below TINY f(x) rounds to x; above HUGE x^2 + 1 rounds to x^2


def _where_less(ctx, x, bound, dt, then, otherwise):
    return ctx.add("Where", [ctx.add("Less", [x, _c(ctx, bound, dt)]), then, otherwise])


def _keep_tiny(ctx, x, result, dt):
    """x itself where |x| < TINY (f(x) rounds to x there). x is Where's second value: ONNX
    Runtime's Where turns a -0.0 picked from its first value into 0.0."""
    not_tiny = ctx.add("GreaterOrEqual", [ctx.add("Abs", [x]), _c(ctx, TINY, dt)])
    return ctx.add("Where", [not_tiny, result, x])


def _odd(ctx, x, magnitude, dt):
    """f(x) for an odd f from ``magnitude`` = f(|x|): times -1 where x's sign bit is set
    (so f(-0.0) is -0.0), and x itself where |x| < TINY."""
    sign = ctx.add("Where", [_signbit(ctx, x, dt), _c(ctx, -1, dt), _c(ctx, 1, dt)])
    return _keep_tiny(ctx, x, ctx.add("Mul", [magnitude, sign]), dt)


def _atan(ctx, x, dt):
    """ONNX Atan, or for float64 (no ONNX Runtime kernel) Cephes' atan, a few ulp."""
    if dt != "float64":
        return ctx.add("Atan", [x])
    a = ctx.add("Abs", [x])
    one = _c(ctx, 1, dt)
    big = ctx.add("Greater", [a, _c(ctx, T3P8, dt)])
    mid = ctx.add("Greater", [a, _c(ctx, 0.66, dt)])
    r = ctx.add("Where", [mid, ctx.add("Div", [ctx.add("Sub", [a, one]), ctx.add("Add", [a, one])]),
                          a])
    r = ctx.add("Where", [big, ctx.add("Neg", [ctx.add("Reciprocal", [a])]), r])

    def pick(for_big, for_mid):
        inner = ctx.add("Where", [mid, _c(ctx, for_mid, dt), _c(ctx, 0, dt)])
        return ctx.add("Where", [big, _c(ctx, for_big, dt), inner])

    z = ctx.add("Mul", [r, r])
    p = ctx.add("Div", [ctx.add("Mul", [z, _polynomial(ctx, z, ATAN_P, dt)]),
                        _polynomial(ctx, z, ATAN_Q, dt)])
    z = ctx.add("Add", [ctx.add("Add", [ctx.add("Mul", [r, p]), r]),
                        pick(MOREBITS, 0.5 * MOREBITS)])
    return _odd(ctx, x, ctx.add("Add", [pick(math.pi / 2, math.pi / 4), z]), dt)


# fdlibm's pi/2 in pieces: two of 33 bits (n * piece is exact for |n| < 2**20) and the rest.
PIO2_1, PIO2_2, PIO2_2T = 1.57079632673412561417, 6.07710050630396597660e-11, \
    2.02226624879595063154e-21
REDUCIBLE = 2.0**19 * math.pi  # |x| below which n = round(x * 2 / pi) is below 2**20


def _tan(ctx, x, dt):
    """sin(r) / cos(r), or -cos(r) / sin(r) for odd n, with r = x - n pi/2 reduced
    Cody-Waite style (ONNX Runtime's float64 Sin/Cos lose relative accuracy near their
    zeros below |x| ~ 4 pi, which tan divides by); sin(x) / cos(x) from REDUCIBLE on,
    where they are accurate; x itself below TINY (keeps -0.0)."""
    n = ctx.add("Round", [ctx.add("Mul", [x, _c(ctx, 2 / math.pi, dt)])])
    r = x
    for piece in (PIO2_1, PIO2_2, PIO2_2T):
        r = ctx.add("Sub", [r, ctx.add("Mul", [n, _c(ctx, piece, dt)])])
    sin, cos = ctx.add("Sin", [r]), ctx.add("Cos", [r])
    odd = ctx.add("Equal", [ctx.add("Abs", [ctx.add("Mod", [n, _c(ctx, 2, dt)], fmod=1)]),
                            _c(ctx, 1, dt)])
    reduced = ctx.add("Where", [odd, ctx.add("Neg", [ctx.add("Div", [cos, sin])]),
                                ctx.add("Div", [sin, cos])])
    a = ctx.add("Abs", [x])
    direct = ctx.add("Div", [ctx.add("Sin", [x]), ctx.add("Cos", [x])])
    return _keep_tiny(ctx, x, _where_less(ctx, a, REDUCIBLE, dt, reduced, direct), dt)


def _asin(ctx, x, dt):
    """atan(x / sqrt((1 - x)(1 + x))): +-pi/2 at +-1 (x / 0), nan beyond."""
    one = _c(ctx, 1, dt)
    root = ctx.add("Sqrt", [ctx.add("Mul", [ctx.add("Sub", [one, x]), ctx.add("Add", [one, x])])])
    return _atan(ctx, ctx.add("Div", [x, root]), dt)


def _acos(ctx, x, dt):
    """2 atan(sqrt((1 - x) / (1 + x))): 0 at 1, pi at -1 (atan(inf)), nan beyond."""
    one = _c(ctx, 1, dt)
    ratio = ctx.add("Div", [ctx.add("Sub", [one, x]), ctx.add("Add", [one, x])])
    return ctx.add("Mul", [_c(ctx, 2, dt), _atan(ctx, ctx.add("Sqrt", [ratio]), dt)])


def _exp_large(ctx, a, dt):
    """exp(a) / 2 for a >= 0, also where exp(a) overflows but exp(a) / 2 does not."""
    h = ctx.add("Exp", [ctx.add("Mul", [a, _c(ctx, 0.5, dt)])])
    beyond = ctx.add("Mul", [ctx.add("Mul", [h, _c(ctx, 0.5, dt)]), h])
    plain = ctx.add("Mul", [ctx.add("Exp", [a]), _c(ctx, 0.5, dt)])
    return _where_less(ctx, a, 709.0, dt, plain, beyond)


def _sinh(ctx, x, dt):
    """fdlibm's sinh: (e + e / (e + 1)) / 2 with e = expm1(|x|) below 22 (no
    cancellation near 0), exp(|x|) / 2 above; odd."""
    a = ctx.add("Abs", [x])
    e = _expm1(ctx, a, dt)
    near = ctx.add("Add", [e, ctx.add("Div", [e, ctx.add("Add", [e, _c(ctx, 1, dt)])])])
    near = ctx.add("Mul", [near, _c(ctx, 0.5, dt)])
    return _odd(ctx, x, _where_less(ctx, a, 22.0, dt, near, _exp_large(ctx, a, dt)), dt)


def _cosh(ctx, x, dt):
    """(exp(|x|) + exp(-|x|)) / 2 (a sum of positives), exp(|x|) / 2 from 22 on."""
    a = ctx.add("Abs", [x])
    e = ctx.add("Exp", [a])
    near = ctx.add("Mul", [ctx.add("Add", [e, ctx.add("Reciprocal", [e])]), _c(ctx, 0.5, dt)])
    return _where_less(ctx, a, 22.0, dt, near, _exp_large(ctx, a, dt))


def _asinh(ctx, x, dt):
    """fdlibm's asinh on |x|: log1p(a + a^2 / (1 + sqrt(1 + a^2))) up to 2,
    log(2a + 1 / (a + sqrt(a^2 + 1))) up to HUGE, log(a) + log(2) above; odd."""
    a = ctx.add("Abs", [x])
    one = _c(ctx, 1, dt)
    square = ctx.add("Mul", [a, a])
    root = ctx.add("Sqrt", [ctx.add("Add", [square, one])])
    small = _log1p(ctx, ctx.add("Add", [a, ctx.add("Div", [square, ctx.add("Add", [one, root])])]),
                   dt)
    mid = ctx.add("Log", [ctx.add("Add", [ctx.add("Add", [a, a]),
                                          ctx.add("Reciprocal", [ctx.add("Add", [a, root])])])])
    big = ctx.add("Add", [ctx.add("Log", [a]), _c(ctx, math.log(2), dt)])
    r = _where_less(ctx, a, HUGE, dt, _where_less(ctx, a, 2.0, dt, small, mid), big)
    return _odd(ctx, x, r, dt)


def _acosh(ctx, x, dt):
    """fdlibm's acosh: log1p(t + sqrt(2t + t^2)) with t = x - 1 up to 2,
    log(2x - 1 / (x + sqrt(x^2 - 1))) up to HUGE, log(x) + log(2) above; nan below 1."""
    one = _c(ctx, 1, dt)
    t = ctx.add("Sub", [x, one])
    small = _log1p(ctx, ctx.add("Add", [t, ctx.add("Sqrt", [
        ctx.add("Add", [ctx.add("Add", [t, t]), ctx.add("Mul", [t, t])])])]), dt)
    root = ctx.add("Sqrt", [ctx.add("Sub", [ctx.add("Mul", [x, x]), one])])
    mid = ctx.add("Log", [ctx.add("Sub", [ctx.add("Add", [x, x]),
                                          ctx.add("Reciprocal", [ctx.add("Add", [x, root])])])])
    big = ctx.add("Add", [ctx.add("Log", [x]), _c(ctx, math.log(2), dt)])
    r = _where_less(ctx, x, HUGE, dt, _where_less(ctx, x, 2.0, dt, small, mid), big)
    return _where_less(ctx, x, 1.0, dt, _c(ctx, math.nan, dt), r)


def _atanh(ctx, x, dt):
    """fdlibm's atanh on a = |x|: log1p(2a + 2a^2 / (1 - a)) / 2 below 0.5, else
    log1p(2a / (1 - a)) / 2 (inf at 1, nan beyond); odd."""
    a = ctx.add("Abs", [x])
    two_a = ctx.add("Add", [a, a])
    rest = ctx.add("Sub", [_c(ctx, 1, dt), a])
    small = ctx.add("Add", [two_a, ctx.add("Div", [ctx.add("Mul", [two_a, a]), rest])])
    arg = _where_less(ctx, a, 0.5, dt, small, ctx.add("Div", [two_a, rest]))
    return _odd(ctx, x, ctx.add("Mul", [_log1p(ctx, arg, dt), _c(ctx, 0.5, dt)]), dt)


def _float64_fallback(onnx_op: str, compute):
    """A scalar rule: ``onnx_op`` in the output dtype, except float64, for which ONNX
    Runtime has no kernel and ``compute`` builds it from operators it has."""

    def rule(sop, ctx, ins, in_dtypes, out_dtypes):
        out = out_dtypes[0]
        names = cast_all(ctx, ins, in_dtypes, out)
        if np.dtype(out) == np.float64:
            return [compute(ctx, names[0], "float64")]
        return [ctx.add(onnx_op, names)]

    rule.__doc__ = f"{onnx_op}; for float64: {compute.__doc__}"
    return rule


FLOAT64_FALLBACKS = {
    ps.Tan: ("Tan", _tan), ps.ArcSin: ("Asin", _asin), ps.ArcCos: ("Acos", _acos),
    ps.ArcTan: ("Atan", _atan), ps.Sinh: ("Sinh", _sinh), ps.Cosh: ("Cosh", _cosh),
    ps.ArcSinh: ("Asinh", _asinh), ps.ArcCosh: ("Acosh", _acosh), ps.ArcTanh: ("Atanh", _atanh),
}
for _cls, (_onnx_op, _compute) in FLOAT64_FALLBACKS.items():
    scalar_rule.register(_cls)(_float64_fallback(_onnx_op, _compute))


def _arctan2(ctx, names, dt):
    """ONNX has no atan2: atan(|y| / x), plus pi where x is negative (including -0.0), with
    C's values where both are zero or both infinite, times the sign of y last (so that
    atan2(-0.0, x) is -0.0 or -pi: ONNX Runtime's Where drops the sign of a -0.0)."""
    y, x = names
    ay = ctx.add("Abs", [y])
    x_negative = _signbit(ctx, x, dt)
    q = _atan(ctx, ctx.add("Div", [ay, x]), dt)
    result = ctx.add("Where", [x_negative, ctx.add("Add", [q, _c(ctx, math.pi, dt)]), q])
    both_zero = ctx.add("And", [ctx.add("Equal", [y, _c(ctx, 0, dt)]),
                                ctx.add("Equal", [x, _c(ctx, 0, dt)])])
    both_inf = ctx.add("And", [ctx.add("IsInf", [y]), ctx.add("IsInf", [x])])
    for both, with_neg_x, with_pos_x in ((both_zero, math.pi, 0.0),
                                         (both_inf, 3 * math.pi / 4, math.pi / 4)):
        corner = ctx.add("Where", [x_negative, _c(ctx, with_neg_x, dt), _c(ctx, with_pos_x, dt)])
        result = ctx.add("Where", [both, corner, result])
    sign_y = ctx.add("Where", [_signbit(ctx, y, dt), _c(ctx, -1, dt), _c(ctx, 1, dt)])
    return ctx.add("Mul", [result, sign_y])


scalar_rule.register(ps.ArcTan2)(_float_rule(_arctan2))


def _polynomial(ctx, x, coefficients, dt):
    """Horner's rule, highest power first (Cephes' polevl)."""
    result = _c(ctx, coefficients[0], dt)
    for coefficient in coefficients[1:]:
        result = ctx.add("Add", [ctx.add("Mul", [result, x]), _c(ctx, coefficient, dt)])
    return result
