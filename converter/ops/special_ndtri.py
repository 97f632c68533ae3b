"""ndtri_exp(x) = ndtri(exp(x)), the inverse of the standard normal CDF at exp(x): PyTensor
3.3's NdtriExp (absent before, so then no rule), built from ONNX arithmetic in float64.

PyTensor's NdtriExp has no C code; its Python implementation is scipy.special.ndtri_exp,
which computes in double for every dtype (float16 through its float32 loop) in three ranges,
and so does this rule:

- x < -2: Cephes' tail of ndtri taken in log(p) = x itself, s - log(s) / s - (1/s) P(1/s) /
  Q(1/s) with s = sqrt(-2x) (scipy's own formula and coefficients), so it stays finite where
  exp(x) underflows (x < -745), down to x = -DBL_MAX;
- -2 <= x <= log(1 - exp(-2)) (about -0.1454): ndtri(p) with p = exp(x), as
  sqrt(2) erfinv(2p - 1) (``_erfinv_center``, 2p - 1 exact) where |2p - 1| <= 1/2, else
  -sqrt(2) erfcinv(2p) below p = 1/2 and sqrt(2) erfcinv(2q) above (``_erfcinv_small``),
  q = 1 - p taken as -expm1(x) (Kahan's ``_expm1``): 1 - p of the rounded p would carry
  p's error 1 / (1 - p)-fold, as scipy's does;
- above: -ndtri(q) = sqrt(2) erfcinv(2q), as scipy (-ndtri(-expm1(x))).

+inf at +-0, -inf at -inf, nan above 0 and at nan, as scipy.

Largest error against scipy on ONNX Runtime 1.32 (CPU), in ulp of the result, over ~10^7
arguments (uniform and log-uniform over x <= 0 by range, subnormals, the switch points,
-log 2, +-0, +-inf, nan; non-finite results all agree):

    range            float16 float32 float64
    x < -2              0       0       2     scipy's formula; ONNX Runtime's Log differs
    -2 <= x < 0         0       0       8     at the worst points ours is within 4 ulp
                                              of mpmath, scipy within 5

Next to x = -log 2 the result ndtri(p) ~ sqrt(2 pi)(p - 1/2) is tiny next to p, which
scipy and this rule both round (ONNX Runtime's double Exp is up to 2 ulp off libm's): there
the error is absolute, at most 3.3e-16 (1.2 ulp of 1/2 times sqrt(2 pi)), and both are
equally far from the exact value.
"""

from __future__ import annotations

import math

import numpy as np

from converter import compat
from converter.ops.elemwise import cast_all, scalar_rule
from converter.ops.elemwise_math import _expm1
from converter.ops.special import _erfcinv_small, _erfinv_center, _Ops

# Cephes' ndtri (scipy/special/cephes/ndtri.c): x1 = z P(z) / Q(z), z = 1/s, for s < 8
# (P1, Q1) and s >= 8 (P2, Q2); highest power first, Q monic (its leading 1 left out).
NDTRI_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
            4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
            -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4)
NDTRI_Q1 = (1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
            1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
            -3.80806407691578277194e-2, -9.33259480895457427372e-4)
NDTRI_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
            1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
            3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9)
NDTRI_Q2 = (6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
            2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
            2.89247864745380683936e-6, 6.79019408009981274425e-9)
# scipy's switches: the tail in x below -2, -expm1(x) above log(1 - exp(-2)).
TAIL_BELOW = -2.0
EXPM1_ABOVE = math.log1p(-math.exp(-2.0))
SQRT2 = math.sqrt(2.0)


def _chosen_poly(o: _Ops, z: str, first: str, a, b, *, monic: bool = False) -> str:
    """Horner's rule in z with coefficients ``a`` where ``first`` holds, else ``b`` (one pass,
    each coefficient picked per element)."""
    pairs = list(zip(a, b, strict=True))
    result = o.where(first, *pairs[0])
    if monic:
        result = o.add(z, result)
    for c_a, c_b in pairs[1:]:
        result = o.add(o.mul(result, z), o.where(first, c_a, c_b))
    return result


def _tail_in_log(o: _Ops, x: str) -> str:
    """ndtri(exp(x)) for x < -2 as scipy: x1 - (s - log(s) / s) with s = sqrt(-2x), taken as
    2 sqrt(-x / 2) (the same value, bit for bit, without overflowing for x < -DBL_MAX / 2)."""
    s = o.mul(o.op("Sqrt", o.mul(x, -0.5)), 2.0)
    s0 = o.sub(s, o.div(o.op("Log", s), s))
    z = o.div(1.0, s)
    near = o.op("Less", s, 8.0)
    numerator = _chosen_poly(o, z, near, NDTRI_P1, NDTRI_P2)
    denominator = _chosen_poly(o, z, near, NDTRI_Q1, NDTRI_Q2, monic=True)
    return o.sub(o.div(o.mul(z, numerator), denominator), s0)


def _ndtri_exp(o: _Ops, x: str) -> str:
    """ndtri(exp(x)) in scipy's three ranges (see the module docstring); every branch is
    computed for every element and the right one picked."""
    p = o.op("Exp", x)
    w = o.sub(o.mul(p, 2.0), 1.0)
    center = o.mul(_erfinv_center(o, w), SQRT2)
    # 1 - p as -expm1(x), not from the rounded p (see the module docstring)
    positive = o.op("Or", o.op("Greater", x, EXPM1_ABOVE), o.op("Greater", p, 0.5))
    small = o.where(positive, o.op("Neg", _expm1(o.ctx, x, o.dt)), p)
    tail = o.mul(_erfcinv_small(o, o.mul(small, 2.0)), SQRT2)  # -ndtri(small), small <= 1/4
    tail = o.where(positive, tail, o.op("Neg", tail))
    # nan fails both comparisons and goes through the tail, as nan
    result = o.where(o.op("LessOrEqual", o.op("Abs", w), 0.5), center, tail)
    result = o.where(o.op("Less", x, TAIL_BELOW), _tail_in_log(o, x), result)
    return o.cases(result, (o.op("Equal", x, 0.0), math.inf),
                   (o.op("Equal", x, -math.inf), -math.inf))


def _ndtri_exp_rule(sop, ctx, ins, in_dtypes, out_dtypes):
    """ONNX has no ndtri: ``_ndtri_exp`` in float64 for every dtype, as scipy computes, then
    rounded to the output dtype (float16 through float32, as scipy's float32 loop and
    PyTensor's cast of its result round twice). PyTensor's NdtriExp is scipy's; what differs
    is ONNX Runtime's double Exp (up to 2 ulp off libm's) and Log, and the erfinv/erfcinv
    approximations in -2 <= x < 0 in place of Cephes' ndtri, a few ulp (see the module
    docstring)."""
    (x,) = cast_all(ctx, ins, in_dtypes, "float64")
    result, dtype = _ndtri_exp(_Ops(ctx, "float64"), x), "float64"
    out = np.dtype(out_dtypes[0])
    if out == np.float16:
        result, dtype = ctx.cast(result, dtype, "float32"), "float32"
    return [ctx.cast(result, dtype, out)]


for _cls in compat.present("NdtriExp"):
    scalar_rule.register(_cls)(_ndtri_exp_rule)
