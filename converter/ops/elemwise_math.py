"""Elemwise scalar ops that ONNX lacks or defines differently, built from ONNX primitives.

Float results follow numpy (PyTensor's Python implementation): float16 is computed in
float32 and rounded, as numpy's half loops do, so the compositions keep their accuracy.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.scalar.basic as ps
import pytensor.scalar.math as psm
import pytensor.tensor.special as pt_special
import pytensor.tensor.xlogx as pt_xlogx

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
    loses everything below about -17."""
    (x,) = names
    pieces = [
        (-37.0, ctx.add("Exp", [x])),
        (18.0, _log1p(ctx, ctx.add("Exp", [x]), dt)),
        (33.3, ctx.add("Add", [x, ctx.add("Exp", [ctx.add("Neg", [x])])])),
    ]
    result = x
    for bound, value in reversed(pieces):
        result = ctx.add("Where", [ctx.add("Less", [x, _c(ctx, bound, dt)]), value, result])
    return result


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


def _polynomial(ctx, x, coefficients, dt):
    """Horner's rule, highest power first (Cephes' polevl)."""
    result = _c(ctx, coefficients[0], dt)
    for coefficient in coefficients[1:]:
        result = ctx.add("Add", [ctx.add("Mul", [result, x]), _c(ctx, coefficient, dt)])
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
    ps.Deg2Rad: _scale(math.pi / 180), ps.Rad2Deg: _scale(180 / math.pi),
    ps.ArcTan2: _arctan2, ps.Trunc: _trunc, ps.RoundHalfAwayFromZero: _round_half_away,
    psm.Log1mexp: _log1mexp, psm.Softplus: _softplus, psm.Sigmoid: _sigmoid,
}
# XlogX/XlogY0 are scalar ops up to PyTensor 2.x; 3.x replaced them with special.XLogY.
for _name, _compute in (("XlogX", lambda ctx, n, dt: _x_times(_log)(ctx, [n[0], n[0]], dt)),
                        ("XlogY0", _x_times(_log))):
    if hasattr(pt_xlogx, _name):
        FLOAT_RULES[getattr(pt_xlogx, _name)] = _compute

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
