"""Special functions built from ONNX arithmetic: erf, erfc, erfcx, erfinv, erfcinv, gammaln,
gamma and psi (digamma).

ONNX has Erf (ONNX Runtime runs it on float16 and float32 only) and none of the others. Each
rule is a composition of Add/Mul/Div/Exp/Log/Sqrt/Sin/Pow/Round/Where in the output dtype
(float16 in float32, then rounded), returning what scipy.special (PyTensor's Python
implementation) returns at poles, infinities and nan. The polynomials ``LGAMMA_H*`` and
``DIGAMMA_G*`` are Chebyshev fits (mpmath ``chebyfit``, 60 digits) on [1, 3], in s = x - 2,
of lgamma(x) / ((x - 1)(x - 2)) and psi(x) / (x - x0), x0 the positive root of psi; dividing
out the zeros keeps the relative error small next to them.

Largest error in ulp against PyTensor's Python Ops on ONNX Runtime 1.32 (CPU), 0.8-1.6 million
arguments per dtype: uniform and log-uniform over both signs and the whole range, next to
poles, zeros and +-1, subnormals, +-inf and nan (non-finite results all agree):

    op       float16 float32 float64
    erf         0       1       1    float32 is ONNX Erf
    erfc        0       0     501    float64: scipy rounds x^2 in exp(-x^2), about x^2 ulp
    erfcx       1      12     510    off (501 at x = 25.4); ours is within 4 ulp of mpmath
    erfinv      0       7       7
    erfcinv     0       6       8
    gammaln     1     4/11    2/58   x > 0 / x < 0 with |result| >= 1/2; float64 x > 0 by mpmath
                                     (scipy is up to 2.7e5 ulp off between 0.6 and 3)
    psi         1     3/23      3    x > 0 / x < 0; float64 x < 0: scipy is off by up to 1e-6
                                     relative just above the negative integers (ours <= 1 by mpmath)
    gamma       1       5       9

Next to the roots of gammaln and psi on the negative axis the error is absolute: float32
6e-7 and 1.3e-6, float64 7e-15 and 7.5e-14 (a few ulp of the reflection terms).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytensor.scalar.math as psm

from converter._core import Context
from converter.ops.elemwise import cast_all, scalar_rule
from converter.ops.elemwise_math import _c, _float_rule, _in_float


class _Ops:
    """Elementwise arithmetic on ONNX value names of one float dtype; Python numbers become
    constants of that dtype."""

    def __init__(self, ctx: Context, dt):
        self.ctx, self.dt = ctx, np.dtype(dt)
        self.wide = self.dt == np.float64
        self.max_log = math.log(float(np.finfo(self.dt).max))

    def value(self, a) -> str:
        return a if isinstance(a, str) else _c(self.ctx, a, self.dt)

    def op(self, name: str, *args, **attrs) -> str:
        return self.ctx.add(name, [self.value(a) for a in args], **attrs)

    def add(self, a, b):
        return self.op("Add", a, b)

    def sub(self, a, b):
        return self.op("Sub", a, b)

    def mul(self, a, b):
        return self.op("Mul", a, b)

    def div(self, a, b):
        return self.op("Div", a, b)

    def where(self, cond: str, a, b) -> str:
        return self.ctx.add("Where", [cond, self.value(a), self.value(b)])

    def cases(self, default, *pairs) -> str:
        """The value of the first ``(condition, value)`` pair whose condition holds."""
        result = self.value(default)
        for cond, value in reversed(pairs):
            result = self.where(cond, value, result)
        return result

    def poly(self, x: str, coefficients) -> str:
        """Horner's rule, highest power first."""
        result = self.value(coefficients[0])
        for coefficient in coefficients[1:]:
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
# erfcx(x) ~ 1 / (x sqrt(pi)) * sum_k (-1)^k (2k - 1)!! / (2 x^2)^k, highest power first.
ERFCX_ASYMPTOTIC = tuple((-1) ** k * math.prod(range(1, 2 * k, 2)) for k in range(6, -1, -1))
SQRT_PI = math.sqrt(math.pi)


def _erf_small(o: _Ops, x: str) -> str:
    """erf(x) for |x| < 1."""
    square = o.mul(x, x)
    return o.div(o.mul(x, o.poly(square, ERF_T)), o.poly(square, ERF_U))


def _exp_square(o: _Ops, a: str, sign: int) -> str:
    """exp(sign * a^2) for a >= 0 without the error of rounding a^2 (up to 700 ulp near
    the overflow): a = m + f with m a multiple of 1/128, so m^2 is exact. Callers guard
    the arguments whose result overflows or underflows."""
    m = o.div(o.op("Floor", o.add(o.mul(a, 128.0), 0.5)), 128.0)
    f = o.sub(a, m)
    head = o.op("Exp", o.mul(o.mul(m, m), float(sign)))
    return o.mul(head, o.op("Exp", o.mul(o.mul(o.add(m, o.add(m, f)), f), float(sign))))


def _erfcx_nonnegative(o: _Ops, a: str) -> str:
    """exp(a^2) erfc(a) for a >= 0: exp(a^2) (1 - erf(a)) below 1, Cephes' P/Q and R/S
    below 50, the asymptotic series above (R/S alone overflows for huge a)."""
    near = o.mul(o.sub(1.0, _erf_small(o, a)), _exp_square(o, a, 1))
    mid = o.div(o.poly(a, ERFC_P), o.poly(a, ERFC_Q))
    far = o.div(o.poly(a, ERFC_R), o.poly(a, ERFC_S))
    inverse_square = o.div(0.5, o.mul(a, a))
    asymptotic = o.mul(o.div(1 / SQRT_PI, a), o.poly(inverse_square, ERFCX_ASYMPTOTIC))
    return o.cases(asymptotic, (o.op("Less", a, 1.0), near), (o.op("Less", a, 8.0), mid),
                   (o.op("Less", a, 50.0), far))


def _erfc_tail(o: _Ops, a: str) -> str:
    """erfc(a) for a >= 1: exp(-a^2) erfcx(a), 0 once a^2 > log(max) (as Cephes)."""
    tail = o.mul(_exp_square(o, a, -1), _erfcx_nonnegative(o, a))
    return o.where(o.op("Greater", o.mul(a, a), o.max_log), 0.0, tail)


def _erf(o: _Ops, x: str) -> str:
    """x T(x^2) / U(x^2) below |x| = 1, else +-(1 - erfc(|x|)), exactly +-1 beyond 6.
    Values that may be -0.0 go second into a Where whose condition is no Not (ONNX Runtime
    swaps Where(Not(c), a, b), and returns +0.0 for a -0.0 picked from the first value)."""
    a = o.op("Abs", x)
    tail = o.where(o.op("Greater", a, 6.0), 1.0, o.sub(1.0, _erfc_tail(o, a)))
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
    positive = _erfcx_nonnegative(o, a)
    negative = o.sub(o.mul(_exp_square(o, a, 1), 2.0), positive)
    negative = o.where(o.op("Greater", o.mul(a, a), o.max_log), math.inf, negative)
    return o.where(o.op("Less", x, 0.0), negative, positive)


# erfinv(y) = sqrt(pi)/2 (y + pi/12 y^3 + 7 pi^2/480 y^5 + 127 pi^3/40320 y^7 + ...)
ERFINV_TAYLOR = tuple(SQRT_PI / 2 * c * math.pi ** k for k, c in reversed(list(enumerate(
    (1.0, 1 / 12, 7 / 480, 127 / 40320, 4369 / 5806080)))))
WINITZKI_A = 0.147
NEWTON_STEPS = 3


def _erfinv_center(o: _Ops, y: str) -> str:
    """erfinv(y) for |y| <= 1/2: Taylor start, then Newton on erf(x) = y."""
    x = o.mul(y, o.poly(o.mul(y, y), ERFINV_TAYLOR))
    for _ in range(NEWTON_STEPS):
        step = o.mul(o.sub(_erf_small(o, x), y), o.op("Exp", o.mul(x, x)))
        x = o.sub(x, o.mul(step, SQRT_PI / 2))
    return x


def _erfcinv_small(o: _Ops, z: str) -> str:
    """erfcinv(z) for 0 < z <= 1/2: Winitzki's closed form (relative error ~1e-3) with
    log(1 - erfinv^2) = log(z (2 - z)), then Newton on log(erfc(x)) = log(z), that is
    x += (log(erfcx(x)) - x^2 - log(z)) sqrt(pi)/2 erfcx(x), which stays well conditioned
    down to the smallest subnormal z."""
    log_z = o.op("Log", z)
    big_l = o.add(log_z, o.op("Log", o.sub(2.0, z)))
    big_a = o.add(2 / (math.pi * WINITZKI_A), o.mul(big_l, 0.5))
    inner = o.sub(o.mul(big_a, big_a), o.div(big_l, WINITZKI_A))
    x = o.op("Sqrt", o.sub(o.op("Sqrt", inner), big_a))
    for _ in range(NEWTON_STEPS):
        e = _erfcx_nonnegative(o, x)
        residual = o.sub(o.sub(o.op("Log", e), o.mul(x, x)), log_z)
        x = o.add(x, o.mul(o.mul(residual, e), SQRT_PI / 2))
    return x


def _erfinv(o: _Ops, y: str) -> str:
    """Newton from a closed-form start: on erf below |y| = 1/2, on log erfc(|x|) = log(1 - |y|)
    above (1 - |y| is exact there); +-inf at +-1, nan outside [-1, 1]."""
    a = o.op("Abs", y)
    central = o.op("LessOrEqual", a, 0.5)
    tail = _erfcinv_small(o, o.where(central, 0.5, o.sub(1.0, a)))
    tail = o.where(o.op("Equal", a, 1.0), math.inf, tail)
    tail = o.where(o.op("Less", y, 0.0), o.op("Neg", tail), tail)
    outside = o.op("Greater", a, 0.5)
    result = o.where(outside, tail, _erfinv_center(o, o.where(outside, 0.0, y)))
    result = o.where(o.op("Equal", y, 0.0), 0.0, result)  # +0.0 for -0.0 too, as scipy
    return o.where(o.op("Greater", a, 1.0), math.nan, result)


def _erfcinv(o: _Ops, z: str) -> str:
    """-erfinv(z - 1) for 1/2 < z < 3/2 (exact), -0.0 at 1 (as scipy), else +-erfcinv of z or
    2 - z below 1/2; +inf at 0, -inf at 2, nan outside [0, 2]. scipy computes
    -ndtri(z / 2) / sqrt(2) in double, so for float64 z is rounded through z / 2 (the smallest
    subnormal gives +inf); the domain is checked on z itself, as scipy does, so -5e-324 is
    nan."""
    outside_domain = o.op("Or", o.op("Less", z, 0.0), o.op("Greater", z, 2.0))
    if o.wide:
        z = o.mul(o.mul(z, 0.5), 2.0)
    outside = o.op("GreaterOrEqual", o.op("Abs", o.sub(1.0, z)), 0.5)
    upper = o.op("Greater", z, 1.0)
    t = o.where(upper, o.sub(2.0, z), z)
    usable = o.op("And", o.op("Greater", t, 0.0), o.op("LessOrEqual", t, 0.5))
    tail = _erfcinv_small(o, o.where(usable, t, 0.5))
    tail = o.where(upper, o.op("Neg", tail), tail)
    center = o.op("Neg", _erfinv_center(o, o.where(outside, 0.0, o.sub(z, 1.0))))
    result = o.where(outside, tail, center)
    result = o.cases(result, (o.op("Equal", z, 0.0), math.inf), (o.op("Equal", z, 2.0), -math.inf))
    result = o.where(outside_domain, math.nan, result)
    not_one = o.op("Or", o.op("Less", z, 1.0), o.op("Greater", z, 1.0))
    return o.where(o.op("Or", o.op("IsNaN", z), not_one), result, -0.0)

# Bernoulli numbers B2, B4, ..., B16 (Stirling's series for lgamma, and for digamma).
BERNOULLI = tuple(Fraction(n, d) for n, d in (
    (1, 6), (-1, 30), (1, 42), (-1, 30), (5, 66), (-691, 2730), (7, 6), (-3617, 510)))
# lgamma(x) - Stirling = sum B2k / (2k (2k - 1) x^(2k - 1)); highest power of 1/x^2 first.
LGAMMA_SERIES = tuple(float(b / (2 * k * (2 * k - 1)))
                      for k, b in reversed(list(enumerate(BERNOULLI, 1))))
# psi(x) = log(x) - 1 / (2x) - sum B2k / (2k x^2k)
DIGAMMA_SERIES = tuple(float(b / (2 * k)) for k, b in reversed(list(enumerate(BERNOULLI, 1))))
DIGAMMA_ROOT = (1.4616321449683622, 9.549995429965697e-17)
DIGAMMA_ROOT_32 = (1.4616321325302124, 1.2438149938918909e-08)
ASYMPTOTIC_FROM = 10.0
REDUCTION_STEPS = 7  # from [3, 10) down to [2, 3)
# Gamma(x) is +inf above these (and x^(x/2) must not overflow before that is decided).
GAMMA_OVERFLOWS = {np.dtype("float32"): 36.0, np.dtype("float64"): 172.0}
# 1 / (x Gamma(x)) is 0 above these.
GAMMA_UNDERFLOWS = {np.dtype("float32"): 50.0, np.dtype("float64"): 200.0}
# sin(pi r) / pi rounds to r below these (pi^2 r^2 / 6 under half an ulp).
SIN_PI_LINEAR = {np.dtype("float32"): 2.0**-14, np.dtype("float64"): 2.0**-28}
LGAMMA_H64 = (
    3.9592899392841773e-10, -8.152852870624974e-10, -1.1901740908188623e-09,
    2.444386936885692e-09, 4.305220610785349e-09, -8.87711600370437e-09,
    3.821541398410965e-10, -9.172949166290702e-10, 2.4876913129422816e-08,
    -5.1889381335192836e-08, 8.858800462314761e-08, -1.8624721164419038e-07,
    4.0491176292722286e-07, -8.554195306752008e-07, 1.8077244952477939e-06,
    -3.8465374565754054e-06, 8.22227252824938e-06, -1.7661849545809686e-05,
    3.8168877217049974e-05, -8.309510094797398e-05, 0.00018255264018626728,
    -0.0004057073998333553, 0.0009153769221939477, -0.0021081308338353785,
    0.004998641164698706, -0.012384192193374183, 0.032965000621155816, -0.1003173016743539,
    0.42278433509846713,
)
LGAMMA_H32 = (
    4.557242319860892e-06, -9.635132280360914e-06, 3.3533533341591794e-06,
    -7.419384726112594e-06, 4.21961700088446e-05, -9.156393009115464e-05,
    0.00018082918739853102, -0.00040208398465581486, 0.0009157486745967217,
    -0.0021089123141546304, 0.004998606220335257, -0.012384118740166294, 0.0329650015629158,
    -0.10031730365388107, 0.42278433509846713,
)
DIGAMMA_G64 = (
    -5.100770214989469e-09, 1.0201545142033868e-08, 1.7852672191376552e-08,
    -3.5705337308985145e-08, -5.77025926771739e-08, 1.1540536834062045e-07,
    2.821220170829738e-08, -5.6422994902202784e-08, -2.3086248081342955e-07,
    4.6173797029851077e-07, -6.059322795045256e-07, 1.2119815782595426e-06,
    -2.6338311326151924e-06, 5.26871942897218e-06, -1.044106631983514e-05,
    2.0891708911121205e-05, -4.184622931937881e-05, 8.377966540530644e-05,
    -0.00016781518722379935, 0.00033643237613001386, -0.000675313369799565,
    0.0013581421903714414, -0.0027395728831692795, 0.005552254171350814,
    -0.011338432553333682, 0.023447309597724546, -0.04955103291767291, 0.10899991701762626,
    -0.2607389546830014, 0.7853075386041053,
)
DIGAMMA_G32 = (
    -3.167292632354949e-05, 6.33610438021139e-05, -7.61409142849533e-08,
    2.2954607237445265e-07, -0.0002065672427155629, 0.00041394525573455016,
    -0.0006561630523782947, 0.001319837347085856, -0.002744607450892469,
    0.0055623243935034395, -0.011337790897811506, 0.023446026149670566, -0.04955106377966833,
    0.10899997874817026, -0.26073895444142026, 0.7853075381208918,
)


def _reduce(o: _Ops, a: str, accumulate, start):
    """Shift a in [3, 10) down into [2, 3) one step at a time, folding each shifted value
    into ``start`` with ``accumulate``; other a are left alone. Returns (u, accumulated)."""
    u, acc = a, o.value(start)
    for _ in range(REDUCTION_STEPS):
        step = o.op("GreaterOrEqual", u, 3.0)
        shifted = o.sub(u, 1.0)
        acc = o.where(step, accumulate(acc, shifted), acc)
        u = o.where(step, shifted, u)
    return u, acc


def _lgamma_core(o: _Ops, a: str):
    """For 0 < a < 10: (lgamma(w), product) where lgamma(a) = lgamma(w) + log(product) and
    w in [1, 3) (w = a + 1 below 1, product 1 / a), computed as (w - 1)(w - 2) h(w)."""
    u, product = _reduce(o, a, o.mul, 1.0)
    below_one = o.op("Less", a, 1.0)
    w = o.where(below_one, o.add(a, 1.0), u)
    zeros = o.where(below_one, o.mul(a, o.sub(a, 1.0)), o.mul(o.sub(u, 1.0), o.sub(u, 2.0)))
    h = o.poly(o.sub(w, 2.0), LGAMMA_H64 if o.wide else LGAMMA_H32)
    return o.mul(zeros, h), below_one, product


def _stirling_series(o: _Ops, a: str) -> str:
    """lgamma(a) minus Stirling's formula: sum B2k / (2k (2k - 1) a^(2k - 1))."""
    inverse = o.div(1.0, a)
    return o.mul(inverse, o.poly(o.mul(inverse, inverse), LGAMMA_SERIES))


def _stirling(o: _Ops, a: str) -> str:
    """(a - 1/2)(log a - 1) + (log(2 pi) - 1) / 2 + the series, for a >= 10 (+inf at +inf)."""
    main = o.mul(o.sub(a, 0.5), o.sub(o.op("Log", a), 1.0))
    return o.add(main, o.add((math.log(2 * math.pi) - 1) / 2, _stirling_series(o, a)))


def _lgamma_positive(o: _Ops, a: str) -> str:
    """lgamma(a) for a >= 0: the shifted fit plus log of the shift below 10, Stirling above."""
    core, below_one, product = _lgamma_core(o, a)
    log_shift = o.op("Log", o.where(below_one, a, product))
    small = o.add(core, o.where(below_one, o.op("Neg", log_shift), log_shift))
    large = _stirling(o, a)
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
    negative x by reflection, -log(|sin(pi x)| / pi) - log(-x) - lgamma(-x); +inf at 0 and the
    negative integers, -inf at -inf (as scipy)."""
    a = o.op("Abs", x)
    positive = _lgamma_positive(o, a)
    _, r = _reflection(o, a)
    sine = o.op("Abs", _sin_pi_over_pi(o, r))
    negative = o.sub(o.op("Neg", o.add(o.op("Log", sine), o.op("Log", a))), positive)
    non_positive = o.op("LessOrEqual", x, 0.0)
    pole = o.op("And", non_positive, o.op("Equal", r, 0.0))
    result = o.where(o.op("Less", x, 0.0), negative, positive)
    return o.cases(result, (pole, math.inf), (o.op("Equal", x, -math.inf), -math.inf))


def _gamma_positive(o: _Ops, a: str):
    """Gamma(a) as (small, v, rest, a Gamma(a) below 1): below 10, exp of the shifted
    lgamma times the shift product; from 10, Gamma(a) = v rest with v = a^(a/2 - 1/4) and
    rest = v e^-a sqrt(2 pi) e^series (one Pow keeps the error at a few ulp where
    exp(lgamma) would lose log(Gamma) ulp; two factors so that 1 / Gamma(a) can be taken
    beyond Gamma's overflow)."""
    core, below_one, product = _lgamma_core(o, a)
    e = o.op("Exp", core)
    small = o.where(below_one, o.div(e, a), o.mul(e, product))
    series = _stirling_series(o, a)
    v = o.op("Pow", a, o.sub(o.mul(a, 0.5), 0.25))
    rest = o.mul(o.mul(v, o.op("Exp", o.op("Neg", a))),
                 o.mul(o.op("Exp", series), math.sqrt(2 * math.pi)))
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
    odd = o.op("Equal", o.sub(n, o.mul(o.op("Floor", o.mul(n, 0.5)), 2.0)), 1.0)
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
    """psi(a), a >= 0: the asymptotic series from 10; below, psi(w) = (w - x0) g(w) on
    [1, 3) plus the reciprocals of the downward shift, or psi(a + 1) - 1/a below 1."""
    u, reciprocals = _reduce(o, a, lambda acc, s: o.add(acc, o.div(1.0, s)), 0.0)
    below_one = o.op("Less", a, 1.0)
    w = o.where(below_one, o.add(a, 1.0), u)
    root_hi, root_lo = DIGAMMA_ROOT if o.wide else DIGAMMA_ROOT_32
    g = o.poly(o.sub(w, 2.0), DIGAMMA_G64 if o.wide else DIGAMMA_G32)
    core = o.mul(o.sub(o.sub(w, root_hi), root_lo), g)
    small = o.where(below_one, o.sub(core, o.div(1.0, a)), o.add(core, reciprocals))
    inverse = o.div(1.0, a)
    square = o.mul(inverse, inverse)
    series = o.mul(square, o.poly(square, DIGAMMA_SERIES))
    large = o.sub(o.sub(o.op("Log", a), o.mul(inverse, 0.5)), series)
    return o.where(o.op("Less", a, ASYMPTOTIC_FROM), small, large)


def _psi(o: _Ops, x: str) -> str:
    """psi(x); negative x by reflection, psi(1 - x) - pi cot(pi x) with
    cot(pi r) = sin(pi (1/2 - |r|)) / sin(pi r) (ONNX Runtime's double Cos loses its relative
    accuracy near pi/2); -1/x at +-0, nan at the negative integers and -inf (as scipy)."""
    negative_x = o.op("Less", x, 0.0)
    positive = _digamma_positive(o, o.where(negative_x, o.sub(1.0, x), x))
    _, r = _reflection(o, x)
    cosine = o.op("Sin", o.mul(o.sub(0.5, o.op("Abs", r)), math.pi))
    result = o.where(negative_x, o.sub(positive, o.div(cosine, _sin_pi_over_pi(o, r))), positive)
    pole = o.op("And", negative_x, o.op("Or", o.op("Equal", r, 0.0), o.op("IsInf", x)))
    zero = o.op("Equal", x, 0.0)
    return o.cases(result, (zero, o.op("Neg", o.op("Reciprocal", x))), (pole, math.nan))


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
