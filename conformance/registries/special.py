"""Special functions: erf, erfc, erfcx, erfinv, erfcinv, gammaln, gamma, psi and (PyTensor
3.3 on) ndtri_exp.

Budgets in ulps are what the converter's formulations, libm (C) and scipy's kernels (Numba)
meet, measured over magnitudes log-uniform across each dtype's range, the small-magnitude
ladder and both sides of the negative poles: float16 is computed in float32 and rounded,
float32 in float32, float64 in float64 (erf and erfc of every dtype in float64). Next to the
roots of gammaln and psi on the negative axis the exact result is tiny beside the reflection
terms, so their budgets add ulps of x (measured: up to 1.4 and 1.75 ulp of x besides 4 of the
result). Where scipy itself misses the budget (erfc and erfcx for large |x|, gammaln next to
its negative roots, psi just above the negative integers) the float64 row judges against
mpmath (``Row.reference``); C and Numba share scipy's erfcx, Numba its psi: records.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytensor.tensor as pt
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import special

from conformance.accuracy import mpmath_reference
from conformance.jax_records import int_to_float32, without_jax
from conformance.registries.elemwise import ORT_WHERE_ZERO_SIGN
from conformance.registry import (
    C_BACKENDS,
    JAX_BACKENDS,
    NOT_REFERENCE,
    NUMBA_BACKENDS,
    Blame,
    Case,
    Composes,
    Row,
    Tol,
    ulp_budget,
)
from conformance.strategies import ANY, Domain, broadcast_shapes, dtypes, elements, elemwise, fixed
from conformance.strategies.composing import well_conditioned
from converter import compat

# The C backends compute with libm (lgamma, tgamma), so they part from scipy where it does;
# Numba calls scipy's own Cython kernels (scipy.special.cython_special) for psi and gamma, so
# it does not there (its gammaln is libm's lgamma).
NOT_SCIPY = tuple(b for b in NOT_REFERENCE if b not in NUMBA_BACKENDS)
DBL_MAX = float(np.finfo(np.float64).max)
# scipy's gammaln is +inf from here on (Cephes' MAXLGM), though log Gamma(x) < DBL_MAX up
# to about 2.5585e305.
SCIPY_GAMMALN_MAX = 2.556348e305
# scipy's erfc is 0 once x * x is above this (Cephes' MAXLOG, log(DBL_MAX))
SCIPY_ERFC_MAXLOG = 7.09782712893383996843e2
# scipy's gamma is +-0 below this, where Gamma(x) is still about 1e-308.
SCIPY_GAMMA_ZERO_BELOW = -170.5674972726612
# ndtri_exp next to x = -log 2: 2 ulp of p = exp(x) ~ 1/2 in double, times the slope
# sqrt(2 pi); an ulp of p = 1/2 is an ulp of x = -log 2 (both in [0.5, 1)), so 2 sqrt(2 pi)
# ulps of the operand
NDTRI_EXP_X_ULPS = 2 * math.sqrt(2 * math.pi)


def unary(name: str, fn, domain: Domain = ANY, *, compose: bool | Composes = True,
          **kwargs) -> Row:
    """A row on every dtype; random graphs use it unless it says ``compose=False`` (or say
    how with a ``Composes``)."""
    return Row(name, fn, elemwise(domain), dtypes.ALL, compose=compose, **kwargs)


def _float64_values(case: Case) -> np.ndarray | None:
    x = case.values[0]
    return x if x.dtype == np.float64 else None


def gammaln_overflows_in_scipy(case: Case) -> bool:
    """A nonzero |x| below 1 / DBL_MAX (Cephes' lgam divides 1 by it) or above MAXLGM."""
    x = _float64_values(case)
    if x is None:
        return False
    a = np.abs(x)
    return bool((((a > 0) & (a < 1 / DBL_MAX)) | (a > SCIPY_GAMMALN_MAX) & np.isfinite(a)).any())


def erfc_underflows_in_scipy(case: Case) -> bool:
    """Some x with x * x above Cephes' MAXLOG (scipy's erfc is 0) whose erfc is not 0 yet."""
    x = _float64_values(case)
    if x is None:
        return False
    with np.errstate(over="ignore"):
        return bool(((x * x > SCIPY_ERFC_MAXLOG) & (x < 27.3)).any())


def erfcx_squares_in_scipy(case: Case) -> bool:
    """Some x < -4, where scipy's erfcx is 2 exp(x * x) - erfcx(-x) with x * x rounded."""
    x = _float64_values(case)
    return x is not None and bool((x < -4).any())


def psi_just_above_negative_integer(case: Case) -> bool:
    """scipy's psi loses up to 1e-6 of relative accuracy at x = -n + d for small d > 0."""
    x = _float64_values(case)
    if x is None:
        return False
    with np.errstate(invalid="ignore"):
        d = x - np.floor(x)
    return bool(((x < 0) & (d > 0) & (d < 1e-2)).any())


def is_minus_inf(case: Case) -> bool:
    x = case.values[0]
    return x.dtype.kind == "f" and bool(np.isneginf(x).any())


def psi_c_pole(case: Case) -> bool:
    """+0, the negative integers and -inf: PyTensor's C Psi returns +inf there."""
    x = case.values[0].astype(np.float64)
    with np.errstate(invalid="ignore"):
        integral = x == np.floor(x)
    return bool(((x == 0) & ~np.signbit(x) | (x < 0) & integral).any())


def zero_or_subnormal(case: Case) -> bool:
    """Some element is 0 or a subnormal float (which JAX reads as 0)."""
    x = case.values[0]
    tiny = np.finfo(x.dtype).smallest_normal if x.dtype.kind == "f" else 1
    return bool((np.abs(x.astype(np.float64)) < tiny).any())


def gamma_zero_in_scipy(case: Case) -> bool:
    """Non-integer x between -172 and scipy's cut-off, where Gamma(x) is still nonzero."""
    x = _float64_values(case)
    if x is None:
        return False
    return bool(((x < SCIPY_GAMMA_ZERO_BELOW) & (x > -172) & (x != np.floor(x))).any())


def gamma_sign_lost_in_scipy(case: Case) -> bool:
    """Some non-integer x below -2**31 where Gamma(x) is positive (x in (-n - 1, -n) for
    an odd n): scipy returns -0.0 for every such x."""
    x = _float64_values(case)
    if x is None:
        return False
    with np.errstate(invalid="ignore"):
        far = (x < -(2.0**31)) & (x != np.floor(x))
        return bool((far & (np.fmod(np.floor(-x), 2) == 1)).any())


def gamma_is_negative_zero(case: Case) -> bool:
    """Some x where Gamma(x), computed as the converter computes it (float16 in float32),
    underflows to -0.0: every Where on the way may drop the sign in ONNX Runtime."""
    x = case.values[0]
    if x.dtype.kind != "f":
        return False
    with np.errstate(all="ignore"):
        result = special.gamma(x.astype(np.float32 if x.dtype == np.float16 else x.dtype))
    return bool(((result == 0) & np.signbit(result)).any())


#: ndtri_exp's domain: x <= 0, -inf and nan (above 0 the result is nan)
NONPOSITIVE = Domain(max_value=0.0)
#: below this, up to 0, ndtri_exp switches formulation (scipy: -2 and log(1 - exp(-2)); the
#: result crosses 0 at -log 2)
SWITCHES_FROM = -3.0


class nonpositive(elemwise):  # lower case: called like the factory it specializes
    """elemwise(NONPOSITIVE) whose elements come, besides the special values and
    Hypothesis' own draws, with their magnitude chosen on purpose: log-uniform in |x| from
    the dtype's smallest subnormal (just below 0: -1e-300 and -1e-3 alike) to its largest
    finite value (far beyond exp(x)'s underflow), and uniform over [-3, 0], where ndtri_exp
    switches formulation. Magnitudes shrink toward -1, the others toward 0."""

    def __init__(self, *, max_rank: int = 2, max_side: int = 4):
        super().__init__(NONPOSITIVE, max_rank=max_rank, max_side=max_side)

    def __call__(self, dtype: str):
        info = np.finfo(dtype)
        exponents = st.floats(math.log(float(info.smallest_subnormal)), math.log(float(info.max)))
        magnitudes = exponents.map(lambda e: -min(math.exp(e), float(info.max)))
        near = st.floats(SWITCHES_FROM, 0.0)
        values = st.one_of(elements(dtype, NONPOSITIVE), magnitudes, near).map(
            lambda v: np.asarray(v, dtype)[()])  # rounded to the dtype: arrays take it as is

        @st.composite
        def cases(draw):
            (shape,), static = draw(broadcast_shapes(1, max_rank=self.max_rank,
                                                     max_side=self.max_side))
            return Case((draw(hnp.arrays(np.dtype(dtype), shape, elements=values)),), static)

        return cases()


# Random graphs keep gammaln and psi on the positive axis: next to their roots on the
# negative axis the float32 error is above the graphs' float32 tolerance. The bounds also
# keep every record's arguments out: psi's C pole at +0, scipy's gammaln overflow for
# subnormal and huge x, and the C gammaln at -inf.
GAMMALN_GRAPHS = Composes(domains=(Domain(min_value=2.0**-14, max_value=SCIPY_GAMMALN_MAX),),
                          dtypes=dtypes.ALL)
# Not where the result is float64 (from float64 and 32- and 64-bit integers): the C Psi
# (its own series) is off by up to 1e-10 there, a recorded divergence.
PSI_GRAPHS = Composes(domains=(Domain(min_value=2.0**-14),),
                      dtypes=("bool", "int8", "int16", "uint8", "uint16", "float16", "float32"))

# Near a root on the negative axis: 4 ulp of the result and ulps of x (measured 1.4 and 1.75).
REFLECTED = {"float16": Tol(ulps=1, operand_ulps=1), "float32": Tol(ulps=4, operand_ulps=2),
             "float64": Tol(ulps=4, operand_ulps=2)}
# scipy's (Cephes') lgam loses up to 1.9e4 ulp next to the roots on the negative axis, where
# libm's lgamma (C, Numba) stays within 3 ulp of mpmath and the converter 3.5 ulp of x.
GAMMALN_REFERENCE = mpmath_reference(
    mpmath.loggamma, dtypes=("float64",),
    reason="scipy's gammaln is up to 1.9e4 ulp off next to its negative roots, e.g. -2.45699")
ERFC_REFERENCE = mpmath_reference(
    mpmath.erfc, dtypes=("float64",),
    reason="scipy's erfc rounds x * x in exp(-x * x): up to 484 ulp off beyond x ~ 20")
ERFCX_REFERENCE = mpmath_reference(
    lambda x: mpmath.exp(x * x) * mpmath.erfc(x), dtypes=("float64",),
    reason="scipy's erfcx rounds x * x in exp(x * x) for x < 0: up to 498 ulp off")
PSI_REFERENCE = mpmath_reference(
    mpmath.digamma, dtypes=("float64",),
    reason="scipy's psi loses up to 1e-6 relative accuracy just above negative integers")

ROWS = [
    # scipy's erf against C and Numba (libm): 3 ulp in float64 at most (measured)
    unary("erf", pt.erf, tol=ulp_budget(float16=1, float32=4, float64=4))
    .xfail(**int_to_float32([1])),
    # against mpmath in float64: measured 3 ulp (libm) and 7 (the converter)
    unary("erfc", pt.erfc, tol=ulp_budget(float16=1, float32=4, float64=8),
          reference=ERFC_REFERENCE)
    .xfail(**int_to_float32([1]))
    .xfail(backends=(*C_BACKENDS, *NUMBA_BACKENDS), dtypes=("float64",), blame=Blame.PYTENSOR,
           reason="scipy's erfc is 0 from x = 26.6417 on (Cephes' x * x > MAXLOG), where "
                  "libm's (C, Numba) is a subnormal number up to x = 27.2",
           match="abs err", when=erfc_underflows_in_scipy, example=fixed(26.65)),
    # measured 6 ulp in float32 (the converter); 10 in float64 against mpmath (the converter
    # just below 1, libm 8)
    unary("erfcx", pt.erfcx, tol=ulp_budget(float16=1, float32=8, float64=12),
          reference=ERFCX_REFERENCE)
    .xfail(backends=(*C_BACKENDS, *NUMBA_BACKENDS), dtypes=("float64",), blame=Blame.PYTENSOR,
           reason="erfcx of C and Numba (scipy's Faddeeva kernel) rounds x * x in exp(x * x) for "
                  "x < 0: up to 498 ulp off beyond x = -4, e.g. erfcx(-25.86)",
           match="abs err", when=erfcx_squares_in_scipy, example=fixed(-25.862380923238128)),
    unary("erfinv", pt.erfinv, compose=well_conditioned(-0.9, 0.9),
          tol=ulp_budget(float16=1, float32=4, float64=4))  # measured 3 and 2
    .xfail(**int_to_float32([0])),
    unary("erfcinv", pt.erfcinv, compose=well_conditioned(0.1, 1.9),
          tol=ulp_budget(float16=1, float32=6, float64=8)),  # measured 4 and 5
    unary("gammaln", pt.gammaln, compose=GAMMALN_GRAPHS, reference=GAMMALN_REFERENCE,
          tol={**REFLECTED, "float64": Tol(ulps=4, operand_ulps=4)})
    .xfail(backends=without_jax(NOT_REFERENCE), dtypes=("float64",), blame=Blame.PYTENSOR,
           reason="scipy's gammaln is +inf for nonzero |x| < 1/DBL_MAX and |x| > 2.556e305",
           match="abs err", when=gammaln_overflows_in_scipy, example=fixed(1e-310))
    .xfail(backends=(*C_BACKENDS, *NUMBA_BACKENDS), dtypes=("float32", "float64"),
           blame=Blame.PYTENSOR,
           reason="C and Numba GammaLn (libm's lgamma) give +inf at -inf, where the Python Op "
                  "(scipy) gives -inf",
           match="abs err", when=is_minus_inf, example=fixed(-np.inf))
    .xfail(**int_to_float32([1]))
    .xfail(backends=JAX_BACKENDS, dtypes=dtypes.FLOATS, blame=Blame.PYTENSOR,
           cause="jax-gammaln-minus-inf",
           reason="JAX's gammaln gives +inf at -inf (as libm's lgamma), where the Python Op "
                  "(scipy) gives -inf",
           match="abs err", when=is_minus_inf, example=fixed(-np.inf)),
    unary("psi", pt.psi, compose=PSI_GRAPHS, reference=PSI_REFERENCE, tol=REFLECTED)
    # judged against mpmath, Numba's psi (scipy's kernel) is the one off there
    .xfail(backends=NUMBA_BACKENDS, dtypes=("float64",), blame=Blame.PYTENSOR,
           reason="Numba's psi (scipy's kernel) loses up to 1e-6 relative accuracy just above "
                  "negative integers",
           match="abs err", when=psi_just_above_negative_integer,
           example=fixed(-2.9999999999895515))
    .xfail(backends=C_BACKENDS, dtypes=("float32", "float64"), blame=Blame.PYTENSOR,
           reason="C Psi gives +inf at +0 (scipy: -inf), negative integers and -inf (scipy: nan)",
           match="abs err", when=psi_c_pole, example=fixed(0))
    .xfail(backends=C_BACKENDS, dtypes=("float64",), blame=Blame.PYTENSOR,
           versions="pytensor<3.3",
           reason="C Psi (its own series) is off by up to ~1e-10, e.g. psi(1) = -0.57721566499618",
           match="abs err", example=fixed(1))
    # 3.3's C Psi is within a few ulp of scipy on the positive axis; its reflection is not
    .xfail(backends=C_BACKENDS, dtypes=("float64",), blame=Blame.PYTENSOR,
           versions="pytensor>=3.3",
           reason="C Psi loses accuracy next to the negative poles, where scipy keeps it: "
                  "psi(-1.00001) is 2300 ulp off (1.1e6 ulp at -13.999995524)",
           match="abs err", example=fixed(-1.00001))
    .xfail(**int_to_float32([1]))
    .xfail(backends=JAX_BACKENDS, blame=Blame.PYTENSOR, cause="jax-digamma-zero",
           dtypes=tuple(d for d in dtypes.ALL if d not in ("int32", "uint32")),
           reason="JAX's digamma is nan at 0 (a subnormal read as 0 too), where the Python Op "
                  "(scipy) gives -inf at +0 and +inf at -0",
           match=r"=nan but pytensor-py=-?inf", when=zero_or_subnormal, example=fixed(0)),
    unary("gamma", pt.gamma, compose=well_conditioned(1, 3),  # measured 5 and 8
          tol=ulp_budget(float16=1, float32=8, float64=12))
    .xfail(backends=without_jax(NOT_SCIPY), dtypes=("float64",), blame=Blame.PYTENSOR,
           reason="scipy's gamma is +-0 for x in (-171.62, -170.57), where |Gamma(x)| ~ 1e-308",
           match="abs err", when=gamma_zero_in_scipy, example=fixed(-170.6461089723011))
    .xfail(backends=without_jax(NOT_SCIPY), dtypes=("float64",), blame=Blame.PYTENSOR,
           reason="scipy's gamma underflows to -0.0 for every non-integer x below -2**31, "
                  "also where Gamma(x) is positive",
           match=r"\(sign of zero differs\)", when=gamma_sign_lost_in_scipy,
           example=fixed(-2147483649.5))
    .xfail(**{**ORT_WHERE_ZERO_SIGN, "when": gamma_is_negative_zero},
           example=lambda dtype: fixed(-180.5 if dtype == "float64" else -40.5)(dtype))
    .xfail(**int_to_float32([1]))
    .xfail(backends=JAX_BACKENDS, blame=Blame.PYTENSOR, cause="jax-gamma-accuracy",
           dtypes=("int8", "int16", "uint8", "uint16", "float32", "int64", "uint64", "float64"),
           reason="JAX's gamma is exp(gammaln(x)) with a sign: off by up to ~1e-5 relative in "
                  "float32 and ~4e-13 in float64 (scipy: an ulp or two)",
           match="abs err", example=lambda d: fixed(20 if np.dtype(d).itemsize == 8 else 10)(d)),
    # PyTensor 3.3 on. Computed in float64 for every dtype, as scipy does: float16 and float32
    # are one rounding of a double a few ulp from scipy's, so within one ulp of the dtype
    # (measured: 0). float64 measured 8 ulp at most (x >= -2, where ours and scipy's are each
    # within 4-5 ulp of mpmath; 2 below, scipy's own formula), plus, next to x = -log 2 where
    # the result sqrt(2 pi)(p - 1/2) is tiny next to p = exp(x), 2 ulp of p times sqrt(2 pi)
    # (ONNX Runtime's double Exp is up to 2 ulp off libm's; measured 1.2). Random graphs keep
    # x in [-30, -1], away from -log 2, where an ulp of x moves the result by far more.
    *[Row("ndtri_exp", ndtri_exp, nonpositive(), dtypes.FLOATS, compose=well_conditioned(-30, -1),
          tol={"float16": Tol(ulps=1), "float32": Tol(ulps=1),
               "float64": Tol(ulps=8, operand_ulps=NDTRI_EXP_X_ULPS)})
      for ndtri_exp in compat.present("ndtri_exp")],
]
