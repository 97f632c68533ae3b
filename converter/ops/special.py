"""Special functions built from ONNX arithmetic: erf, erfc, erfcx, erfinv, erfcinv, gammaln,
gamma and psi (digamma).

ONNX has Erf (ONNX Runtime runs it on float16 and float32 only) and none of the others. Each
rule is a composition of ONNX arithmetic in the output dtype (float16 in float32, then
rounded), returning what scipy.special (PyTensor's Python implementation) returns at poles,
infinities and nan.

Cost: ONNX Runtime spends about half a microsecond per node on a small tensor, and one pass
over memory per node on a large one. Polynomials are evaluated by Horner's rule, one node
per operation: evaluating a series at once along an extra axis (one Pow of x[..., None] by
the exponents and a MatMul or ReduceSum with the coefficients) takes a few nodes instead of
2n, but measured on ONNX Runtime 1.32 (one thread) it is no faster than Horner's rule on
32 elements and 5 to 15 times slower on 100,000 (std::pow costs ~18 ns a term, a MatMul
with a vector operand is not a BLAS call in double, and broadcasting along a short
trailing axis is slow). What is saved instead is work: erfinv and erfcinv need no Newton
iteration (a Maclaurin series and a fitted function of log(sqrt(-log z))), erfc skips the
branches its domain never takes, identical nodes are emitted once (``_Ops.op``).

The fitted polynomials are in ``converter/_special_fits.py``. ndtri_exp (PyTensor 3.3 on) is
built from the erfinv and erfcinv pieces here in ``special_ndtri``.

Largest error in ulp against PyTensor's Python Ops on ONNX Runtime 1.32 (CPU), 1.2 million
arguments per dtype: uniform and log-uniform over both signs and the whole range, next to
poles, zeros and +-1, subnormals, +-inf and nan (non-finite results all agree):

    op       float16 float32 float64
    erf         1       1       1    float32 is ONNX Erf
    erfc        0       0     501    float64: scipy rounds x^2 in exp(-x^2), about x^2 ulp
    erfcx       1      11     505    off (505 at x = -23.3); ours is within 9 ulp of mpmath
    erfinv      0       5       5
    erfcinv     0       5       7
    gammaln     1     5/25    2/65   x > 0 / x < 0 with |result| >= 1/2; float64 x > 0 by mpmath
                                     (scipy is up to 5.7e3 ulp off between 0 and 3)
    psi         1     2/26    4/14   x > 0 / x < 0; float64 x < 0 by mpmath (1 just above the
                                     negative integers, where scipy is off by up to 1e-6
                                     relative; scipy is 3e3 ulp off for huge |x|)
    gamma       0      5/4     9/8

Next to the roots of gammaln and psi on the negative axis the error is absolute: float32
1.3e-6 and 1.9e-6, float64 8.7e-15 and 7.5e-14 (a few ulp of the reflection terms).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytensor.scalar.math as psm

from converter._core import Context
from converter._special_fits import (
    DIGAMMA_G32,
    DIGAMMA_G64,
    ERFCINV_Q32_0,
    ERFCINV_Q64_0,
    ERFCINV_Q64_1,
    LGAMMA_H32,
    LGAMMA_H64,
)
from converter.ops.elemwise import cast_all, scalar_rule
from converter.ops.elemwise_math import _c, _float_rule, _in_float

# 36 digits of pi and 30 of sqrt(pi), to round the coefficients below once, from exact values.
PI = Fraction("3.14159265358979323846264338327950288")
SQRT_PI_Q = Fraction("1.772453850905516027298167483341")


class _Ops:
    """Elementwise arithmetic on ONNX value names of one float dtype; Python numbers become
    constants of that dtype."""

    def __init__(self, ctx: Context, dt):
        self.ctx, self.dt = ctx, np.dtype(dt)
        self.wide = self.dt == np.float64
        self.max_log = math.log(float(np.finfo(self.dt).max))
        self._emitted: dict[tuple, str] = {}

    def value(self, a) -> str:
        return a if isinstance(a, str) else _c(self.ctx, a, self.dt)

    def op(self, name: str, *args, **attrs) -> str:
        """One node; an identical node (same operator, inputs and attributes) emitted
        before by this function is reused, not emitted twice."""
        inputs = [self.value(a) for a in args]
        key = (name, *inputs, *sorted(attrs.items()))
        if key not in self._emitted:
            self._emitted[key] = self.ctx.add(name, inputs, **attrs)
        return self._emitted[key]

    def add(self, a, b):
        return self.op("Add", a, b)

    def sub(self, a, b):
        return self.op("Sub", a, b)

    def mul(self, a, b):
        return self.op("Mul", a, b)

    def div(self, a, b):
        return self.op("Div", a, b)

    def where(self, cond: str, a, b) -> str:
        return self.op("Where", cond, a, b)

    def cases(self, default, *pairs) -> str:
        """The value of the first ``(condition, value)`` pair whose condition holds."""
        result = self.value(default)
        for cond, value in reversed(pairs):
            result = self.where(cond, value, result)
        return result

    def poly(self, x: str, coefficients) -> str:
        """Horner's rule, highest power first; a monic polynomial starts at x + c."""
        values = [float(c) for c in coefficients]
        if values[0] == 1.0 and len(values) > 1:
            result, rest = self.add(x, values[1]), values[2:]
        else:
            result, rest = self.value(values[0]), values[1:]
        for coefficient in rest:
            result = self.add(self.mul(result, x), coefficient)
        return result


# Cephes' erf/erfc rational approximations (what scipy.special computes, in double):
# erf(x) = x T(x^2) / U(x^2) below 1, erfcx(x) = P(x) / Q(x) below 8, R(x) / S(x) above.
ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
         7.00332514112805075473e3, 5.55923013010394962768e4)
ERF_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
         2.26290000613890934246e4, 4.92673942608635921086e4)
ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
          4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
          9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
ERFC_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
          9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
          1.65666309194161350182e3, 5.57535340817727675546e2)
ERFC_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
          6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0)
ERFC_S = (1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
          1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0)
# erfcx(x) ~ 1/x sum_k (-1)^k (2k - 1)!! / (sqrt(pi) 2^k) x^-2k from x = 50 on, highest
# power first.
ERFCX_ASYMPTOTIC = tuple(float(Fraction((-1) ** k * math.prod(range(1, 2 * k, 2)), 2**k)
                               / SQRT_PI_Q) for k in range(6, -1, -1))
ERFCX_RATIONAL_UP_TO = 50.0


def _erf_small(o: _Ops, x: str) -> str:
    """erf(x) for |x| < 1: x T(x^2) / U(x^2), as Cephes (scipy)."""
    square = o.mul(x, x)
    t, u = o.poly(square, ERF_T), o.poly(square, ERF_U)
    return o.div(o.mul(x, t), u)


def _exp_square(o: _Ops, a: str, sign: int) -> str:
    """exp(sign * a^2) for a >= 0 without the error of rounding a^2 (up to 700 ulp near
    the overflow): a = m + f with m a multiple of 1/128, so m^2 is exact and
    exp(sign a^2) = exp(sign m^2) exp(sign (m + a) f). Callers guard the arguments whose
    result overflows or underflows."""
    m = o.mul(o.op("Round", o.mul(a, 128.0)), 1 / 128)
    f = o.sub(a, m) if sign > 0 else o.sub(m, a)
    square = o.mul(m, m)
    head = o.op("Exp", square if sign > 0 else o.op("Neg", square))
    return o.mul(head, o.op("Exp", o.mul(o.add(m, a), f)))


def _erfcx_rational(o: _Ops, a: str) -> str:
    """exp(a^2) erfc(a) for 1 <= a < 50: Cephes' P/Q below 8, R/S above."""
    mid = o.div(o.poly(a, ERFC_P), o.poly(a, ERFC_Q))
    return o.where(o.op("Less", a, 8.0), mid, o.div(o.poly(a, ERFC_R), o.poly(a, ERFC_S)))


def _erfcx_nonnegative(o: _Ops, a: str, exp_square: str) -> str:
    """exp(a^2) erfc(a) for a >= 0 (``exp_square`` is exp(a^2)): exp(a^2) (1 - erf(a)) below
    1, the rational fits below 50, the asymptotic series above (R/S alone would overflow
    for huge a)."""
    near = o.mul(o.sub(1.0, _erf_small(o, a)), exp_square)
    inverse = o.div(1.0, a)
    asymptotic = o.mul(inverse, o.poly(o.mul(inverse, inverse), ERFCX_ASYMPTOTIC))
    return o.cases(asymptotic, (o.op("Less", a, 1.0), near),
                   (o.op("Less", a, ERFCX_RATIONAL_UP_TO), _erfcx_rational(o, a)))


def _erfc_tail(o: _Ops, a: str, *, guard: bool = True) -> str:
    """erfc(a) for a >= 1: exp(-a^2) erfcx(a); with ``guard``, 0 once a^2 > log(max) (as
    Cephes), which is below a = 27, so the asymptotic series is never needed."""
    tail = o.mul(_exp_square(o, a, -1), _erfcx_rational(o, a))
    if not guard:
        return tail
    return o.where(o.op("Greater", o.mul(a, a), o.max_log), 0.0, tail)


def _erf(o: _Ops, x: str) -> str:
    """x T(x^2) / U(x^2) below |x| = 1, else +-(1 - erfc(|x|)), exactly +-1 beyond 6.
    Values that may be -0.0 go second into a Where whose condition is no Not (ONNX Runtime
    swaps Where(Not(c), a, b), and returns +0.0 for a -0.0 picked from the first value)."""
    a = o.op("Abs", x)
    tail = o.where(o.op("Greater", a, 6.0), 1.0, o.sub(1.0, _erfc_tail(o, a, guard=False)))
    tail = o.where(o.op("Less", x, 0.0), o.op("Neg", tail), tail)
    return o.where(o.op("GreaterOrEqual", a, 1.0), tail, _erf_small(o, x))


def _erfc(o: _Ops, x: str) -> str:
    """1 - erf(x) below |x| = 1, else erfc(|x|), reflected as 2 - erfc(-x) for negative x."""
    a = o.op("Abs", x)
    tail = _erfc_tail(o, a)
    tail = o.where(o.op("Less", x, 0.0), o.sub(2.0, tail), tail)
    return o.where(o.op("Less", a, 1.0), o.sub(1.0, _erf_small(o, x)), tail)


def _erfcx(o: _Ops, x: str) -> str:
    """exp(x^2) erfc(x); for negative x, 2 exp(x^2) - erfcx(-x), +inf once x^2 overflows."""
    a = o.op("Abs", x)
    exp_square = _exp_square(o, a, 1)
    positive = _erfcx_nonnegative(o, a, exp_square)
    negative = o.sub(o.mul(exp_square, 2.0), positive)
    negative = o.where(o.op("Greater", o.mul(a, a), o.max_log), math.inf, negative)
    return o.where(o.op("Less", x, 0.0), negative, positive)


def _maclaurin_erfinv(terms: int) -> tuple[float, ...]:
    """erfinv(y) = sum_k c_k / (2k + 1) (sqrt(pi)/2)^(2k + 1) y^(2k + 1) with c_0 = 1,
    c_k = sum_m c_m c_(k-1-m) / ((m + 1)(2m + 1)): the coefficients of y^(2k + 1), each
    rounded once from exact rationals (all positive)."""
    c = [Fraction(1)]
    for k in range(1, terms):
        c.append(sum(c[m] * c[k - 1 - m] / ((m + 1) * (2 * m + 1)) for m in range(k)))
    return tuple(float(c[k] / (2 * k + 1) * PI**k / 4**k * SQRT_PI_Q / 2) for k in range(terms))


# Enough terms that the next one is below half an ulp at |y| = 1/2.
ERFINV_MACLAURIN = {np.dtype("float32"): _maclaurin_erfinv(14),
                    np.dtype("float64"): _maclaurin_erfinv(28)}
# erfcinv(z) = t q(log t), t = sqrt(-log z): the pieces of q, below and above an edge of
# log t (float32: one piece).
ERFCINV_TAIL = {np.dtype("float32"): (None, (ERFCINV_Q32_0,)),
                np.dtype("float64"): (1.0, (ERFCINV_Q64_0, ERFCINV_Q64_1))}


def _erfinv_center(o: _Ops, y: str) -> str:
    """erfinv(y) for |y| <= 1/2: its Maclaurin series (no Newton iteration), y times a
    polynomial in y^2 of positive coefficients, so without cancellation."""
    series = ERFINV_MACLAURIN[o.dt]
    return o.mul(y, o.poly(o.mul(y, y), series[::-1]))


def _erfcinv_small(o: _Ops, z: str) -> str:
    """erfcinv(z) for 0 < z <= 1/2 (down to the smallest subnormal): t q(v) with
    t = sqrt(-log z) and q a fitted polynomial in v = log t per piece (``_special_fits``),
    no Newton iteration (the fits are accurate to 2e-19, float32 4e-10; the rounding of t
    moves the result by less than one ulp; 4 ulp from mpmath over 0.5 < |y| < 1)."""
    t = o.op("Sqrt", o.op("Neg", o.op("Log", z)))
    v = o.op("Log", t)
    edge, pieces = ERFCINV_TAIL[o.dt]
    if edge is None:
        ((mid, coefficients),) = pieces
        return o.mul(t, o.poly(o.sub(v, mid), coefficients))
    # One Horner pass whose midpoint and coefficients are chosen per element.
    (mid_low, low), (mid_high, high) = pieces
    below = o.op("Less", v, edge)
    s = o.sub(v, o.where(below, mid_low, mid_high))
    q = o.where(below, low[0], high[0])
    for c_low, c_high in zip(low[1:], high[1:], strict=True):
        q = o.add(o.mul(q, s), o.where(below, c_low, c_high))
    return o.mul(t, q)


def _erfinv(o: _Ops, y: str) -> str:
    """The Maclaurin series below |y| = 1/2, +-erfcinv(1 - |y|) above (1 - |y| is exact
    there); +-inf at +-1, nan outside [-1, 1]."""
    a = o.op("Abs", y)
    tail = _erfcinv_small(o, o.sub(1.0, a))  # not used where |y| <= 1/2
    tail = o.where(o.op("Equal", a, 1.0), math.inf, tail)
    tail = o.where(o.op("Less", y, 0.0), o.op("Neg", tail), tail)
    outside = o.op("Greater", a, 0.5)
    result = o.where(outside, tail, _erfinv_center(o, y))
    result = o.where(o.op("Equal", y, 0.0), 0.0, result)  # +0.0 for -0.0 too, as scipy
    return o.where(o.op("Greater", a, 1.0), math.nan, result)


def _erfcinv(o: _Ops, z: str) -> str:
    """-erfinv(z - 1) for 1/2 < z < 3/2 (exact), -0.0 at 1 as scipy (the negated series at
    +0.0, which goes second into every Where after it), else +-erfcinv of z or 2 - z below
    1/2; +inf at 0, -inf at 2, nan outside [0, 2]. scipy computes -ndtri(z / 2) / sqrt(2) in
    double, so for float64 z is rounded through z / 2 (the smallest subnormal gives +inf);
    the domain is checked on z itself, as scipy does, so -5e-324 is nan."""
    outside_domain = o.op("Or", o.op("Less", z, 0.0), o.op("Greater", z, 2.0))
    if o.wide:
        z = o.mul(o.mul(z, 0.5), 2.0)
    outside = o.op("GreaterOrEqual", o.op("Abs", o.sub(1.0, z)), 0.5)
    upper = o.op("Greater", z, 1.0)
    t = o.where(upper, o.sub(2.0, z), z)
    tail = _erfcinv_small(o, t)  # used only where 0 < t <= 1/2
    tail = o.where(upper, o.op("Neg", tail), tail)
    center = o.op("Neg", _erfinv_center(o, o.sub(z, 1.0)))
    result = o.where(outside, tail, center)
    result = o.cases(result, (o.op("Equal", z, 0.0), math.inf), (o.op("Equal", z, 2.0), -math.inf))
    return o.where(outside_domain, math.nan, result)


# Bernoulli numbers B2, B4, ..., B16 (Stirling's series for lgamma, and for digamma).
BERNOULLI = tuple(Fraction(n, d) for n, d in (
    (1, 6), (-1, 30), (1, 42), (-1, 30), (5, 66), (-691, 2730), (7, 6), (-3617, 510)))
# log Gamma(a) - (a - 1/2) log a + a - log(2 pi) / 2 = sum_k B2k / (2k (2k - 1) a^(2k - 1)),
# a polynomial in 1/a^2 (highest power first) times 1/a.
STIRLING = tuple(float(b / (2 * k * (2 * k - 1)))
                 for k, b in reversed(list(enumerate(BERNOULLI, 1))))
LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
# psi(a) = log(a) - 1 / (2a) - sum_k B2k / (2k a^2k), a polynomial in 1/a^2 times 1/a^2.
DIGAMMA_SERIES = tuple(float(b / (2 * k)) for k, b in reversed(list(enumerate(BERNOULLI, 1))))
DIGAMMA_ROOT = (1.4616321449683622, 9.549995429965697e-17)
DIGAMMA_ROOT_32 = (1.4616321325302124, 1.2438149938918909e-08)
ASYMPTOTIC_FROM = 10.0
SHIFTS = tuple(range(1, 8))  # from [3, 10) down to [2, 3)
# Gamma(x) is +inf above these (and x^(x/2) must not overflow before that is decided).
GAMMA_OVERFLOWS = {np.dtype("float32"): 36.0, np.dtype("float64"): 172.0}
# 1 / (x Gamma(x)) is 0 above these.
GAMMA_UNDERFLOWS = {np.dtype("float32"): 50.0, np.dtype("float64"): 200.0}
# sin(pi r) / pi rounds to r below these (pi^2 r^2 / 6 under half an ulp).
SIN_PI_LINEAR = {np.dtype("float32"): 2.0**-14, np.dtype("float64"): 2.0**-28}


def _shifts(o: _Ops, a: str, term, empty, combine):
    """The downward shift of a in [3, 10) into [2, 3): ``term`` of each step a - 1, ...,
    a - 7 that is taken (a - j >= 2; each exact, a multiple of a's ulp below a), ``empty``
    for the others, all combined by ``combine``. Elementwise, one Where per step: all steps
    at once along an extra axis (Sub, Where, ReduceProd) is 22 nodes fewer, but gammaln on
    100,000 float64 elements took ONNX Runtime 20.6 ms that way, 14 ms this way."""
    folded = None
    for j in SHIFTS:
        step = o.where(o.op("GreaterOrEqual", a, j + 2.0), term(o.sub(a, float(j))), empty)
        folded = step if folded is None else combine(folded, step)
    return folded


def _shifted_fit(o: _Ops, a: str, table):
    """For 0 < a < 10: v = w - 1, exact, where w in [1, 3) is a + 1 below 1, a - floor(a) + 2
    from 3 on (exact) and a between, and ``table`` (a fit in s = w - 2 = v - 1) at s.
    Returns (below_one, v, s, fit)."""
    below_one = o.op("Less", a, 1.0)
    u = o.where(o.op("Less", a, 3.0), a, o.add(o.sub(a, o.op("Floor", a)), 2.0))
    v = o.where(below_one, a, o.sub(u, 1.0))
    s = o.sub(v, 1.0)
    return below_one, v, s, o.poly(s, table)


def _stirling_series(o: _Ops, a: str) -> str:
    """lgamma(a) minus Stirling's formula: sum B2k / (2k (2k - 1) a^(2k - 1))."""
    inverse = o.div(1.0, a)
    return o.mul(inverse, o.poly(o.mul(inverse, inverse), STIRLING))


def _lgamma_core(o: _Ops, a: str):
    """For 0 < a < 10: (lgamma(w), below_one, product) where lgamma(a) = lgamma(w) +
    log(product) (product = 1 / a below 1, which the caller takes as -log(a)), computed as
    (w - 1)(w - 2) h(w) = v s h: the zeros of lgamma at 1 and 2 are exact factors. The
    product of the taken shifts has at most 6 roundings of exact factors."""
    below_one, v, s, h = _shifted_fit(o, a, LGAMMA_H64 if o.wide else LGAMMA_H32)
    product = _shifts(o, a, lambda d: d, 1.0, o.mul)
    return o.mul(o.mul(v, s), h), below_one, product


def _lgamma_positive(o: _Ops, a: str) -> str:
    """lgamma(a) for a >= 0: the shifted fit plus log of the shift below 10, from 10 on
    Stirling, (a - 1/2)(log a - 1) + the series (with its constant log(sqrt(2 pi)) - 1/2),
    its series a polynomial in 1/a^2."""
    core, below_one, product = _lgamma_core(o, a)
    log_shift = o.op("Log", o.where(below_one, a, product))
    small = o.where(below_one, o.sub(core, log_shift), o.add(core, log_shift))
    series = o.add(_stirling_series(o, a), LOG_SQRT_2PI - 0.5)
    large = o.add(o.mul(o.sub(a, 0.5), o.sub(o.op("Log", a), 1.0)), series)
    return o.where(o.op("Less", a, ASYMPTOTIC_FROM), small, large)


def _reflection(o: _Ops, x: str):
    """r = x - round(x), in [-1/2, 1/2], exact; sin(pi x) = (-1)^round(x) sin(pi r)."""
    n = o.op("Round", x)
    return n, o.sub(x, n)


def _sin_pi_over_pi(o: _Ops, r: str) -> str:
    """sin(pi r) / pi, which is r itself below SIN_PI_LINEAR (ONNX Runtime's float32 Sin
    flushes subnormal results to zero, which would turn 1 / sin(pi r) into inf)."""
    tiny = o.op("Less", o.op("Abs", r), SIN_PI_LINEAR[o.dt])
    return o.where(tiny, r, o.div(o.op("Sin", o.mul(r, math.pi)), math.pi))


def _gammaln(o: _Ops, x: str) -> str:
    """log|Gamma(x)|: Stirling from 10, below it a shift into [1, 3) and the fitted h;
    negative x by reflection, -log(|sin(pi x)| / pi) - log(-x) - lgamma(-x), with the
    argument of the sine reduced exactly (``_reflection``); +inf at 0 and the negative
    integers, -inf at -inf (as scipy)."""
    a = o.op("Abs", x)
    positive = _lgamma_positive(o, a)
    _, r = _reflection(o, a)
    sine = o.op("Abs", _sin_pi_over_pi(o, r))
    negative = o.sub(o.op("Neg", o.add(o.op("Log", sine), o.op("Log", a))), positive)
    negative_x = o.op("Less", x, 0.0)
    pole = o.op("And", negative_x, o.op("Equal", r, 0.0))  # +-0 give +inf as they are
    result = o.where(negative_x, negative, positive)
    return o.cases(result, (pole, math.inf), (o.op("Equal", x, -math.inf), -math.inf))


def _gamma_positive(o: _Ops, a: str):
    """Gamma(a) as (small, v, rest, a Gamma(a) below 1): below 10, exp of the shifted
    lgamma times the shift product; from 10, Gamma(a) = v rest with v = a^(a/2 - 1/4) and
    rest = v e^-a e^series, the series with its constant log(sqrt(2 pi)) (one Pow keeps the
    error at a few ulp where exp(lgamma) would lose log(Gamma) ulp; two factors so that
    1 / Gamma(a) can be taken beyond Gamma's overflow)."""
    core, below_one, product = _lgamma_core(o, a)
    e = o.op("Exp", core)
    small = o.where(below_one, o.div(e, a), o.mul(e, product))
    series = o.add(_stirling_series(o, a), LOG_SQRT_2PI)
    v = o.op("Pow", a, o.sub(o.mul(a, 0.5), 0.25))
    rest = o.mul(o.mul(v, o.op("Exp", o.op("Neg", a))), o.op("Exp", series))
    return small, v, rest, e


def _gamma(o: _Ops, x: str) -> str:
    """Gamma(x); negative x by reflection, Gamma(-a) = -pi / (sin(pi a) a Gamma(a)), with
    a Gamma(a) = Gamma(a + 1) taken from the shift below a = 1 so tiny a do not overflow;
    1/x at +-0 (+-inf), nan at the negative integers and -inf (as scipy)."""
    a = o.op("Abs", x)
    small, v, rest, a_gamma_a = _gamma_positive(o, a)
    below = o.op("Less", a, ASYMPTOTIC_FROM)
    large = o.where(o.op("Greater", a, GAMMA_OVERFLOWS[o.dt]), math.inf, o.mul(v, rest))
    positive = o.where(below, small, large)
    n, r = _reflection(o, a)
    odd = o.op("Equal", o.op("Mod", n, 2.0, fmod=1), 1.0)  # n >= 0 and integral: exact
    sine = _sin_pi_over_pi(o, r)
    reflected = o.div(-1.0, o.where(odd, o.op("Neg", sine), sine))
    negative_large = o.div(o.div(o.div(reflected, a), v), rest)
    negative_large = o.where(o.op("LessOrEqual", a, GAMMA_UNDERFLOWS[o.dt]),
                             negative_large, o.mul(reflected, 0.0))
    negative = o.cases(negative_large, (o.op("Less", a, 1.0), o.div(reflected, a_gamma_a)),
                       (below, o.div(o.div(reflected, a), small)))
    result = o.where(o.op("GreaterOrEqual", x, 0.0), positive, negative)
    pole = o.op("And", o.op("Less", x, 0.0), o.op("Equal", r, 0.0))
    return o.cases(result, (o.op("Equal", x, 0.0), o.op("Reciprocal", x)), (pole, math.nan))


def _digamma_positive(o: _Ops, a: str) -> str:
    """psi(a), a >= 0: below 10, psi(w) = (w - x0) g(w) on [1, 3), with w - x0 taken as
    v + (1 - x0) (exact next to the root, v = w - 1 exact), plus the reciprocals of the
    taken shifts, or minus 1/a below 1; from 10 on, log(a) - 1/(2a) - the asymptotic
    series, a polynomial in 1/a^2."""
    root_hi, root_lo = DIGAMMA_ROOT if o.wide else DIGAMMA_ROOT_32
    below_one, v, _, g = _shifted_fit(o, a, DIGAMMA_G64 if o.wide else DIGAMMA_G32)
    core = o.mul(o.sub(o.add(v, 1.0 - root_hi), root_lo), g)
    reciprocals = _shifts(o, a, lambda d: o.div(1.0, d), 0.0, o.add)
    small = o.add(core, o.where(below_one, o.div(-1.0, a), reciprocals))
    inverse = o.div(1.0, a)
    square = o.mul(inverse, inverse)
    series = o.mul(square, o.poly(square, DIGAMMA_SERIES))
    large = o.sub(o.sub(o.op("Log", a), o.mul(inverse, 0.5)), series)
    return o.where(o.op("Less", a, ASYMPTOTIC_FROM), small, large)


def _psi(o: _Ops, x: str) -> str:
    """psi(x); negative x by reflection, psi(1 - x) - pi cot(pi x), with the argument of
    the cotangent reduced exactly first (r = x - round(x), exact in floating point, so pi r
    carries one rounding however large x is) and cot(pi r) = sin(pi (1/2 - |r|)) / sin(pi r)
    (ONNX Runtime's double Cos loses its relative accuracy near pi/2); -1/x at +-0, nan at
    the negative integers and -inf (as scipy)."""
    negative_x = o.op("Less", x, 0.0)
    positive = _digamma_positive(o, o.where(negative_x, o.sub(1.0, x), x))
    _, r = _reflection(o, x)
    cosine = o.op("Sin", o.mul(o.sub(0.5, o.op("Abs", r)), math.pi))
    result = o.where(negative_x, o.sub(positive, o.div(cosine, _sin_pi_over_pi(o, r))), positive)
    pole = o.op("And", negative_x, o.op("Equal", r, 0.0))  # -inf: r is nan, so is the result
    return o.cases(result, (o.op("Equal", x, 0.0), o.div(-1.0, x)), (pole, math.nan))


def _unary(function):
    def compute(ctx, names, dt):
        return function(_Ops(ctx, dt), names[0])

    compute.__doc__ = function.__doc__
    return compute


for _cls, _function in {psm.Erfcx: _erfcx, psm.Erfinv: _erfinv, psm.Erfcinv: _erfcinv,
                        psm.GammaLn: _gammaln, psm.Gamma: _gamma, psm.Psi: _psi}.items():
    scalar_rule.register(_cls)(_float_rule(_unary(_function)))


@scalar_rule.register(psm.Erf)
def _erf_rule(sop, ctx, ins, in_dtypes, out_dtypes):
    """ONNX Erf where ONNX Runtime has a kernel (float32; float16 computed in float32);
    float64 has none, so there ``_erf`` builds it from Cephes' rational approximations."""
    out = out_dtypes[0]
    if np.dtype(out) == np.float64:
        (x,) = cast_all(ctx, ins, in_dtypes, out)
        return [_erf(_Ops(ctx, out), x)]
    return [_in_float(ctx, ins, in_dtypes, out, lambda c, names, dt: c.add("Erf", names))]


@scalar_rule.register(psm.Erfc)
def _erfc_rule(sop, ctx, ins, in_dtypes, out_dtypes):
    """ONNX has no erfc, and 1 - erf(x) cancels to 0 beyond x ~ 6: ``_erfc`` in float64,
    rounded to the output dtype, as scipy's float32 loop does."""
    (x,) = cast_all(ctx, ins, in_dtypes, "float64")
    return [ctx.cast(_erfc(_Ops(ctx, "float64"), x), "float64", out_dtypes[0])]
