"""Elemwise math: exp/log families, trigonometry, special functions, rounding, floor
division and remainder, powers, xlogy and explicit Composite scalar graphs."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pytensor.scalar.basic as ps
import pytensor.tensor as pt
from pytensor.tensor import special
from pytensor.tensor.elemwise import Elemwise

from conformance.accuracy import (
    CORRECTLY_ROUNDED,
    ORT_TANH_DOUBLE,
    ORT_TANH_TINY,
    PERIODIC_ULPS,
    POW_ULPS,
    ULPS,
)
from conformance.jax_records import (
    elemwise_dtype,
    int_to_float32,
    subnormal_intermediate,
    without_jax,
)
from conformance.registry import (
    C_BACKENDS,
    JAX_BACKENDS,
    NOT_REFERENCE,
    NUMBA_BACKENDS,
    ONNX_BACKENDS,
    ORT_BACKENDS,
    Blame,
    Case,
    Composes,
    Row,
    without_numba,
)
from conformance.strategies import ANY, Domain, dtypes, elemwise, fixed
from conformance.strategies.composing import well_conditioned

FLOATS, NUMERIC, ALL = dtypes.FLOATS, dtypes.NUMERIC, dtypes.ALL
LOGIC = dtypes.BOOL + dtypes.INTS
# Integer inputs of these dtypes make float64 outputs (upgrade_to_float).
TO_FLOAT64 = ("int32", "int64", "uint32", "uint64", "float64")


def unary(name: str, fn, domain: Domain = ANY, dtypes_=ALL, *, compose: bool | Composes = True,
          **kwargs) -> Row:
    """A one-operand elemwise row; random graphs use it unless it says ``compose=False``."""
    return Row(name, fn, elemwise(domain), dtypes_, compose=compose, **kwargs)




def _round_half_away_exact(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    return np.where(np.abs(x - t) == 0.5, t + np.sign(x), np.round(x))


def py_round_is_wrong(case) -> bool:
    """PyTensor's Python round_half_away_from_zero is floor(x + 0.5) (ceil(x - 0.5) below
    0) on Python floats: wrong where x + 0.5 rounds up in double precision, e.g. at
    0.49999999999999994 and at odd integers between 2**52 and 2**53."""
    x = case.values[0].astype(np.float64)
    with np.errstate(all="ignore"):
        naive = np.where(x > 0, np.floor(x + 0.5), np.ceil(x - 0.5))
        return bool((naive != _round_half_away_exact(x)).any())


SIGN_OF_ZERO = r"\(sign of zero differs\)"


def rounds_to_negative_zero(case) -> bool:
    x = case.values[0]
    return bool(((x >= -0.5) & (x < 0)).any())


def has_positive_zero(case) -> bool:
    x = case.values[0]
    return bool(((x == 0) & ~np.signbit(x)).any())


def numpy_power_takes_sqrt(case) -> bool:
    """True when numpy's power, given the exponent as one broadcast value, differs from
    itself given every exponent in full: its shortcut for a single 0.5 is sqrt."""
    x, y = (v.ravel() for v in np.broadcast_arrays(*case.values))
    with np.errstate(all="ignore"):
        shortcut = np.power(*case.values).ravel()
        # a second, other exponent: no single value to take a shortcut for
        full = np.power(np.append(x, x.dtype.type(1)), np.append(y, y.dtype.type(1)))[:-1]
    return not (np.array_equal(np.signbit(shortcut), np.signbit(full))
                and np.array_equal(np.isnan(shortcut), np.isnan(full)))


NUMPY_SQRT_POWER = {  # numpy's float16 power has no such shortcut
    "backends": (*ORT_BACKENDS, *C_BACKENDS), "dtypes": ("float32", "float64"),
    "blame": Blame.PYTENSOR,
    "reason": "PyTensor's Python Pow is numpy's power, which takes a single 0.5 exponent as "
              "sqrt: -0.0 and -inf give -0.0 and nan, where pow() gives +0.0 and +inf",
    "match": rf"({SIGN_OF_ZERO}|=inf but pytensor-py=nan)", "when": numpy_power_takes_sqrt,
    "example": fixed(-0.0, 0.5),
}


def c_remainder_zero_sign_differs(case) -> bool:
    """True when some float remainder is a zero whose sign PyTensor's C mod gets wrong:
    numpy gives it the divisor's sign, the C branches (fmod by the signs of x and y) -0.0
    only for x < 0 > y and for x = -0.0 < y."""
    x, y = np.broadcast_arrays(*case.values)
    with np.errstate(all="ignore"):
        r = np.mod(x, y)
    c_negative = ((x < 0) & (y < 0)) | ((x == 0) & np.signbit(x) & (y > 0))
    return x.dtype.kind == "f" and bool(((r == 0) & (c_negative != (y < 0))).any())


def int_divides_by_zero(case) -> bool:
    return case.values[1].dtype.kind in "biu" and bool((case.values[1] == 0).any())


def _c_float_int_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """PyTensor's C IntDiv on floats: floor(x / y) where the signs agree, else
    -floor(|x| / |y|) - (fmod(|x|, |y|) != 0), with floor(x / y) again for y == 0."""
    floor = np.floor(x / y)
    split = -np.floor(np.abs(x) / np.abs(y)) - (np.fmod(np.abs(x), np.abs(y)) != 0)
    same = (y == 0) | ((x < 0) == (y < 0))
    return np.where(same, floor, split)


def float_floor_div_differs(case) -> bool:
    """PyTensor's Numba IntDiv on floats is floor(x / y) and its C IntDiv that with a sign
    split (:func:`_c_float_int_div`); numpy (the reference) divides x - fmod(x, y) instead,
    e.g. 1 // 0.1 == 9, 0.001 // -1e-8 == -100000 (C: -100001)."""
    x, y = np.broadcast_arrays(*case.values)
    if x.dtype.kind != "f":
        return False
    with np.errstate(all="ignore"):
        numpy = np.floor_divide(x, y)
        # exactly: the row's budget is 0 ulp (-150000 for -150001 is 1 in 1.5e5)
        return any(bool((~((ours == numpy) | (np.isnan(ours) & np.isnan(numpy)))).any())
                   for ours in (np.floor(x / y), _c_float_int_div(x, y)))


def traps_in_c(case) -> bool:
    """min // -1 (and % -1) on int32/int64: PyTensor's C code dies of SIGFPE there."""
    x, y = np.broadcast_arrays(*case.values)
    if x.dtype not in (np.int32, np.int64):
        return False
    return bool(((x == np.iinfo(x.dtype).min) & (y == -1)).any())


def divisions(dtype: str):
    """Operands for // and %, except the pair that crashes the C linker's process (a
    PyTensor bug no expected failure can record; the ONNX rules guard it)."""
    return elemwise(ANY, ANY)(dtype).filter(lambda case: not traps_in_c(case))


@dataclass(frozen=True)
class Untrapped(Domain):
    """Any value but, on int32/int64, the minimum (``divisor``: -1): the grid fills one
    operand beside the other's drawn values, and min // -1 kills the process (above)."""

    divisor: bool = False

    def contains(self, value, dtype: np.dtype) -> bool:
        trapped = dtype in (np.int32, np.int64) and value == (
            -1 if self.divisor else np.iinfo(dtype).min)
        return super().contains(value, dtype) and not trapped


UNTRAPPED = (Untrapped(), Untrapped(divisor=True))


def int_min_by_minus_one(case) -> bool:
    """Some element divides the signed minimum by -1 (whose quotient overflows)."""
    x, y = np.broadcast_arrays(*case.values)
    return x.dtype.kind == "i" and bool(((x == np.iinfo(x.dtype).min) & (y == -1)).any())


# Numba divides narrow ints in their own width (LLVM's sdiv/srem, whose min / -1 x86's idiv
# traps on); C widens them first (int32 and int64 are left out of the draws: C traps there)
NUMBA_INT_MIN_BY_MINUS_ONE = {
    "backends": NUMBA_BACKENDS, "dtypes": ("int8", "int16"), "blame": Blame.PYTENSOR,
    "cause": "numba-int-min-div-minus-one", "when": int_min_by_minus_one,
    "example": lambda d: fixed(np.iinfo(d).min, -1)(d),
    # LLVM leaves min / -1 undefined: x86's idiv traps, ARM's sdiv wraps to the minimum
    "cpu": "x86 CPUs (idiv traps on the minimum divided by -1; ARM's sdiv wraps)",
}


def has_int_min(case) -> bool:
    x = case.values[0]
    return x.dtype.kind == "i" and bool((x == np.iinfo(x.dtype).min).any())


def exact_powers(case):
    x, y = np.broadcast_arrays(*case.values)
    return [int(b) ** int(e) for b, e in zip(x.ravel(), y.ravel(), strict=True)]


def power_leaves(work: str | None):
    """A ``when`` predicate: some exact integer power is not exact in double or does not
    fit the ``work`` dtype (None: the output dtype; "ort": the converter's working dtype,
    int32/int64 as is and narrower types in int64)."""

    def when(case) -> bool:
        dtype = np.dtype("int8" if case.values[0].dtype == np.bool_ else case.values[0].dtype)
        if work == "ort" and dtype not in (np.int32, np.int64):
            dtype = np.dtype("int64")
        info = np.iinfo(dtype)
        return any(not info.min <= p <= info.max or abs(p) > 2**53 for p in exact_powers(case))

    return when


C_INT_MIN_NEGATED = {
    "backends": C_BACKENDS, "dtypes": ("int32", "int64"), "blame": Blame.PYTENSOR,
    "reason": "C IntDiv/Mod negate a negative x first, which overflows for the minimum",
    "match": "exact match required", "when": has_int_min,
    "example": lambda d: fixed(np.iinfo(d).min, 3)(d),
}
OVERFLOWS_IN_PYTHON = {
    "backends": NOT_REFERENCE, "dtypes": dtypes.INTS, "blame": Blame.PYTENSOR,
    "reason": "Python linker runs Composite on Python ints: OverflowError where C wraps",
    "cause": "elemwise-py-frompyfunc",
    "match": "OverflowError", "example": lambda d: fixed(0, np.iinfo(d).max)(d),
}


C_INT_DIV_BY_ZERO = {
    "backends": C_BACKENDS, "dtypes": LOGIC, "blame": Blame.PYTENSOR,
    "reason": "C linker raises ZeroDivisionError for integer division by 0; Python gives 0",
    "match": "ZeroDivisionError", "when": int_divides_by_zero,
}


def quiet(fn):
    """Call a deprecated PyTensor helper without its FutureWarning."""

    def build(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            from pytensor.tensor import xlogx

            return getattr(xlogx, fn)(*args)

    return build


def composite(x, y):
    """Elemwise(Composite): switch(x > y, x - y, sqr(y)) * 3 + exp2... in x's dtype."""
    sx, sy = ps.get_scalar_type(x.dtype)(), ps.get_scalar_type(y.dtype)()
    three = ps.constant(np.asarray(3, x.dtype))
    body = ps.add(ps.mul(ps.switch(ps.gt(sx, sy), ps.sub(sx, sy), ps.sqr(sy)), three), sx)
    return Elemwise(ps.Composite([sx, sy], [ps.abs(body)]))(x, y)


def composite_wraps_before_abs(case) -> bool:
    """Where :func:`composite`'s body, wrapped op by op in a narrow signed dtype, differs
    from the body computed in 64 bits and wrapped once after the abs (Numba's way)."""
    x, y = case.values[:2]
    if x.dtype.kind != "i" or x.dtype.itemsize == 8:
        return False
    wide_x, wide_y = np.broadcast_arrays(x.astype(np.int64), y.astype(np.int64))
    wide = np.abs(np.where(wide_x > wide_y, wide_x - wide_y, wide_y * wide_y) * 3 + wide_x)
    with np.errstate(over="ignore"):
        nx, ny = np.broadcast_arrays(x, y)
        three = x.dtype.type(3)
        narrow = np.abs(np.where(nx > ny, nx - ny, ny * ny) * three + nx)
    return bool((wide.astype(x.dtype) != narrow).any())


NUMBA_COMPOSITE_EXAMPLES = {"int8": (0, 9), "int16": (0, 105), "int32": (2**31 - 1, 0)}


def composite_multi(x, y):
    """A three-output Composite: one output ignores y, one is a copy of y, one mixes both
    through float-only ops (log1p, true_div, a Cast to float16)."""
    sx, sy = ps.get_scalar_type(x.dtype)(), ps.get_scalar_type(y.dtype)()
    half = ps.constant(np.asarray(0.5, x.dtype))
    mixed = ps.add(ps.log1p(ps.mul(sx, sy)), ps.cast(ps.true_div(sy, half), "float16"))
    return Elemwise(ps.Composite([sx, sy], [ps.exp(sx), ps.identity(sy), mixed]))(x, y)


def mixed_sum_is_negative_zero(case) -> bool:
    """True where composite_multi's third output adds two -0.0s: x * y and float16(y / 0.5)."""
    x, y = np.broadcast_arrays(*case.values)
    with np.errstate(all="ignore"):
        terms = (x * y, (y / y.dtype.type(0.5)).astype(np.float16))
    return bool(np.logical_and.reduce([(t == 0) & np.signbit(t) for t in terms]).any())


# // and % in random graphs: whole operands, dividends of magnitude below 2**24 and nonzero
# divisors up to 2**24. No division by 0 (C raises) and no INT_MIN, so neither x // -1 (C
# dies of SIGFPE) nor the C record on negating it; and x / y is close enough to exact that
# floor(x / y) (C, on floats) is numpy's floor_divide: |x| * u < 1 keeps a rounded
# quotient on the same side of every integer. Not float16: ONNX Runtime skips the rounding
# of float16 intermediates it computes in float32 (its declared ``widens``), and the guards'
# rounding and the floor turn that into a whole unit, e.g. psi(2**-14) // itself is 0.
DIVISIONS = Composes(
    domains=(Domain(-(2**24 - 1), 2**24 - 1, integral=True),
             Domain(-(2**24), 2**24, nonzero=True, integral=True)),
    dtypes=tuple(d for d in ALL if d != "float16"))
POSITIVE_EXP = Domain(min_value=0, max_value=70)
NEGATIVE = Domain(max_value=0, allow_nan=False)

# JAX: float64 sinh/cosh through exp lose up to ~250 ulp from |x| ~ 16.7 on (measured over
# [-700, 700]); floor/ceil/trunc of integers and bools keep the operand's dtype.
JAX_SINH_COSH = {
    "backends": JAX_BACKENDS, "dtypes": ("int64", "uint64", "float64"), "blame": Blame.PYTENSOR,
    "cause": "jax-sinh-cosh-accuracy",
    "reason": "JAX's float64 sinh and cosh are off by up to ~250 ulp for |x| above ~16.7",
    "match": "abs err", "when": lambda case: bool((np.abs(case.values[0].astype(np.float64))
                                                   >= 16).any()),
    "example": fixed(17),
}


ROUNDED_INTS = elemwise_dtype([1], dtypes=("bool", *dtypes.INTS),
                              what="floor, ceil and trunc of integers and bools (kept as they are)")


def smallest_normal(dtype: str) -> Case:
    return fixed([np.finfo(dtype).smallest_normal])(dtype)


def below_twice_smallest_normal(case) -> bool:
    x = np.abs(case.values[0])
    return bool(((x > 0) & (x < 2 * np.finfo(x.dtype).smallest_normal)).any())


def _subnormal(v: np.ndarray) -> np.ndarray:
    return (v != 0) & (np.abs(v) < np.finfo(v.dtype).smallest_normal)


def two_subnormals(dtype: str) -> Case:
    tiny = np.finfo(dtype).smallest_subnormal
    return fixed([tiny], [tiny])(dtype)


def has_subnormal_base(case) -> bool:
    return bool(_subnormal(case.values[0]).any())


def subnormal_power(dtype: str) -> Case:
    return fixed([np.finfo(dtype).smallest_subnormal], [-0.5])(dtype)


def softplus_negates_badly(case) -> bool:
    """A bool operand, or an unsigned one in [18, 33.3), where softplus is x + exp(-x)."""
    x = case.values[0]
    return x.dtype == np.bool_ or bool(((x >= 18) & (x < 34)).any())


def exponent_beyond_63(case) -> bool:
    """Some power whose exponent is 64 or more differs from the power of the exponent's low
    six bits (jax.numpy's integer power)."""
    base, exp = np.broadcast_arrays(*case.values)
    with np.errstate(all="ignore"):
        return bool(((exp >= 64) & (np.power(base, exp) != np.power(base, exp % 64))).any())


# In random graphs (see well_conditioned): exp magnifies an error in x |x|-fold, sin and cos
# an absolute one by at most 1 (but a relative one without bound near their zeros, where
# tolerances' atol takes over).
STEEP_EXP = well_conditioned(-2, 2)
PERIODIC = well_conditioned(-2, 2)

ROWS = [
    unary("exp", pt.exp, tol=ULPS, compose=STEEP_EXP)
    .xfail(**int_to_float32([1])),
    unary("exp2", pt.exp2, tol=ULPS, compose=STEEP_EXP)
    .xfail(**int_to_float32([1])),
    unary("expm1", pt.expm1, tol=ULPS, compose=STEEP_EXP)
    .xfail(**int_to_float32([1])),
    unary("log", pt.log, tol=ULPS)
    .xfail(**int_to_float32([1])),
    unary("log2", pt.log2, tol=ULPS)
    .xfail(**int_to_float32([1])),
    unary("log10", pt.log10, tol=ULPS)
    .xfail(**int_to_float32([1])),
    unary("log1p", pt.log1p, tol=ULPS)
    .xfail(**int_to_float32([1])),
    unary("log1mexp", pt.log1mexp, tol=ULPS)
    .xfail(**int_to_float32([1])),
    unary("sqrt", pt.sqrt, tol=ULPS)
    .xfail(**int_to_float32([1])),
    unary("sin", pt.sin, tol=PERIODIC_ULPS, compose=PERIODIC)
    .xfail(**int_to_float32([1])),
    unary("cos", pt.cos, tol=PERIODIC_ULPS, compose=PERIODIC)
    .xfail(**int_to_float32([1])),
    unary("tan", pt.tan, tol=ULPS, compose=well_conditioned(-1, 1))
    .xfail(**int_to_float32([1])),
    unary("arcsin", pt.arcsin, tol=ULPS, compose=well_conditioned(-0.9, 0.9))
    .xfail(**int_to_float32([1]))
    .xfail(**subnormal_intermediate(
        "arcsin of a float below twice the smallest normal number is 0", smallest_normal,
        # float32's tolerance takes a zero for its smallest normal numbers
        when=below_twice_smallest_normal, dtypes=("float64",))),
    unary("arccos", pt.arccos, tol=ULPS, compose=well_conditioned(-0.9, 0.9))
    .xfail(**int_to_float32([1])),
    unary("arctan", pt.arctan, tol=ULPS)
    .xfail(**int_to_float32([1])),
    unary("sinh", pt.sinh, tol=ULPS, compose=STEEP_EXP)
    .xfail(**int_to_float32([1])).xfail(**JAX_SINH_COSH),
    unary("cosh", pt.cosh, tol=ULPS, compose=STEEP_EXP)
    .xfail(**int_to_float32([1])).xfail(**JAX_SINH_COSH),
    unary("tanh", pt.tanh, tol=ULPS)
    .xfail(**int_to_float32([1])).xfail(**ORT_TANH_TINY).xfail(**ORT_TANH_DOUBLE),
    unary("arcsinh", pt.arcsinh, tol=ULPS)
    .xfail(**int_to_float32([1])),
    unary("arccosh", pt.arccosh, tol=ULPS, compose=well_conditioned(1.5, None))
    .xfail(**int_to_float32([1])),
    unary("arctanh", pt.arctanh, tol=ULPS, compose=well_conditioned(-0.9, 0.9))
    .xfail(**int_to_float32([1])),
    Row("arctan2", pt.arctan2, elemwise(ANY, ANY), ALL, tol=ULPS, compose=True)
    .xfail(**int_to_float32([1], [1]))
    .xfail(**subnormal_intermediate(
        "arctan2 of a subnormal y is off (nan for two subnormals, -pi for (5e-324, -1))",
        two_subnormals, when=has_subnormal_base, dtypes=("float32", "float64"))),
    unary("deg2rad", pt.deg2rad, tol=ULPS)
    .xfail(**int_to_float32([1])),
    unary("rad2deg", pt.rad2deg, tol=ULPS)
    .xfail(**int_to_float32([1])),
    unary("sigmoid", pt.sigmoid, tol=ULPS)
    .xfail(backends=NUMBA_BACKENDS, dtypes=dtypes.SIGNED, blame=Blame.PYTENSOR,
           cause="numba-sigmoid-int-min",
           reason="Numba's sigmoid negates a signed integer in its own dtype: at the dtype's "
                  "minimum -x wraps and sigmoid gives 1.0 for 0.0",
           match="abs err", when=lambda case: bool(
               (case.values[0] == np.iinfo(case.values[0].dtype).min).any()),
           example=lambda d: fixed(np.iinfo(d).min)(d))
    .xfail(**int_to_float32([1])),
    unary("softplus", pt.softplus, tol=ULPS)
    .xfail(backends=(*ONNX_BACKENDS, *NUMBA_BACKENDS), dtypes=("bool",), blame=Blame.PYTENSOR,
           reason="Python Softplus computes exp of a bool in float16 (numpy's bool promotion)",
           match="abs err", example=fixed(False))
    .xfail(**int_to_float32([1]))
    .xfail(backends=JAX_BACKENDS, dtypes=("bool", "uint8", "uint16", "uint64"),
           blame=Blame.PYTENSOR, cause="jax-softplus-negates",
           reason="PyTensor's JAX softplus negates its operand in the operand's dtype: -x wraps "
                  "for unsigned integers (softplus(18) is inf) and raises for bools",
           match="abs err|raised TypeError: neg does not accept dtype bool",
           when=softplus_negates_badly,
           example=lambda d: fixed([False] if d == "bool" else [18])(d)),
    unary("floor", pt.floor, tol=CORRECTLY_ROUNDED).xfail(**ROUNDED_INTS),
    unary("ceil", pt.ceil, tol=CORRECTLY_ROUNDED).xfail(**ROUNDED_INTS),
    unary("trunc", pt.trunc, tol=CORRECTLY_ROUNDED)
    .xfail(backends=C_BACKENDS, dtypes=("int32", "int64"), blame=Blame.PYTENSOR,
           reason="C Trunc is -floor(-x) for negative x, and -x overflows for the minimum",
           match="abs err", when=has_int_min, example=lambda d: fixed(np.iinfo(d).min)(d))
    .xfail(**ROUNDED_INTS),
    unary("round_half_to_even", pt.round_half_to_even, dtypes_=FLOATS, tol=CORRECTLY_ROUNDED)
    .xfail(backends=C_BACKENDS, dtypes=("float32", "float64"), blame=Blame.PYTENSOR,
           reason="C round_half_to_even gives +0.0 for -0.5 <= x < 0 (numpy's round: -0.0)",
           match=SIGN_OF_ZERO, when=rounds_to_negative_zero, example=fixed(-0.25)),
    unary("round_half_away_from_zero", pt.round_half_away_from_zero, dtypes_=FLOATS,
          tol=CORRECTLY_ROUNDED)
    # the C backends round float16 in Python, as the reference does
    .xfail_apart(dict(backends=without_jax(NOT_REFERENCE), blame=Blame.PYTENSOR,
                      reason="Python round_half_away_from_zero(+0.0) is ceil(0.0 - 0.5) = -0.0 "
                             "(C: +0.0)", match=r"=0\.0 but pytensor-py=-0\.0 \(sign of zero",
                      when=has_positive_zero, example=fixed(0.0)),
                 backends=C_BACKENDS, before=None, dtypes=("float16",), shared=True)
    # Numba rounds so too (2.38 and 3.0.7): it agrees with the reference, as wrong
    .xfail(backends=without_numba(without_jax(NOT_REFERENCE)), dtypes=("float64",),
           shared_by=NUMBA_BACKENDS, blame=Blame.PYTENSOR,
           reason="Python round_half_away_from_zero is floor(x + 0.5): 0.49999999999999994 -> 1",
           match="abs err", when=py_round_is_wrong, example=fixed(0.49999999999999994)),
    Row("int_div", pt.int_div, divisions, ALL, tol=CORRECTLY_ROUNDED, compose=DIVISIONS,
        grid=UNTRAPPED)
    .xfail(**C_INT_DIV_BY_ZERO, example=fixed(1, 0)).xfail(**C_INT_MIN_NEGATED)
    .xfail(backends=(*C_BACKENDS, *NUMBA_BACKENDS), dtypes=("float32", "float64"),
           blame=Blame.PYTENSOR, cause="float-int-div-floor",
           reason="C and Numba IntDiv on floats are floor(x / y) (C splits by sign: "
                  "0.001 // -1e-8 is -100001); numpy's floor_divide gives 1 // 0.1 == 9 (and "
                  "inf // 1 == nan)",
           match="abs err", when=float_floor_div_differs, example=fixed(1.0, 0.1))
    .xfail(**elemwise_dtype([True], [True], dtypes=("bool",), what="int_div of bools"))
    .xfail(backends=JAX_BACKENDS, dtypes=dtypes.INTS, blame=Blame.PYTENSOR,
           cause="jax-int-division-by-zero",
           reason="JAX's integer division by zero gives -1 (all bits set; XLA leaves it "
                  "implementation-defined), where numpy gives 0",
           match="exact match required", when=int_divides_by_zero, example=fixed(1, 0))
    .xfail(**NUMBA_INT_MIN_BY_MINUS_ONE, match="exact match required",
           reason="Numba's int8/int16 floor division gives 0 for the minimum // -1, where "
                  "numpy wraps to the minimum"),
    Row("mod", pt.mod, divisions, ALL, tol=CORRECTLY_ROUNDED, compose=DIVISIONS,
        grid=UNTRAPPED)
    .xfail(**C_INT_DIV_BY_ZERO, example=fixed(1, 0)).xfail(**C_INT_MIN_NEGATED)
    .xfail(backends=C_BACKENDS, dtypes=("float32", "float64"), blame=Blame.PYTENSOR,
           reason="C float mod's zero remainders miss the divisor's sign (numpy's) for -0.0 % 1 "
                  "and x >= 0 % y < 0",
           match=SIGN_OF_ZERO, when=c_remainder_zero_sign_differs, example=fixed(0.0, -1.0))
    .xfail(**elemwise_dtype([True], [True], dtypes=("bool",), what="mod of bools"))
    .xfail(**NUMBA_INT_MIN_BY_MINUS_ONE, match=r"crashed the process \(killed by SIGFPE\)",
           reason="Numba's int8/int16 mod of the minimum by -1 is x86's trapping idiv: the "
                  "process dies of SIGFPE, where numpy gives 0"),
    # in graphs, pow(x, y) magnifies errors in x |y|-fold and in y |y log x|-fold
    Row("pow", pt.pow, elemwise(ANY, ANY), FLOATS, tol=POW_ULPS,
        compose=Composes(domains=(Domain(0.5, 2, allow_nan=False, allow_inf=False),
                                  Domain(-2, 2, allow_nan=False, allow_inf=False))))
    .xfail(**NUMPY_SQRT_POWER)
    .xfail(**subnormal_intermediate(
        "pow of a subnormal base is computed from a flushed intermediate", subnormal_power,
        when=has_subnormal_base, dtypes=("float32", "float64"))),
    Row("pow_int", pt.pow, elemwise(ANY, POSITIVE_EXP), LOGIC, compose=True)
    .xfail(backends=C_BACKENDS, dtypes=dtypes.INTS, blame=Blame.PYTENSOR,
           reason="C computes integer powers with double pow(), so overflow does not wrap",
           match="exact match required", when=power_leaves(None), example=fixed(3, 41))
    .xfail(backends=ORT_BACKENDS, dtypes=dtypes.INTS, blame=Blame.ONNXRUNTIME,
           reason="integer Pow goes through double: inexact above 2**53, saturates on overflow",
           match="exact match required", when=power_leaves("ort"), example=fixed(3, 41))
    .xfail(**elemwise_dtype([True], [True], dtypes=("bool",), what="pow of bools"))
    .xfail(backends=JAX_BACKENDS, dtypes=dtypes.INTS, blame=Blame.PYTENSOR,
           cause="jax-int-power-exponent",
           reason="jax.numpy's integer power reads 6 bits of the exponent: 2 ** 64 is 1, "
                  "2 ** 70 is 64, where the wrapped power is 0",
           match="exact match required", when=exponent_beyond_63, example=fixed([2], [64])),
    Row("pow_negative_base", pt.pow, elemwise(NEGATIVE, Domain(integral=True)), FLOATS,
        tol=POW_ULPS, compose=True),
    Row("xlogx", quiet("xlogx"), elemwise(ANY), ALL, tol=ULPS, compose=True)
    .xfail(**int_to_float32([1])),
    Row("xlogy0", quiet("xlogy0"), elemwise(ANY, ANY), ALL, tol=ULPS, compose=True)
    .xfail(**int_to_float32([1], [1])),
    # pytensor.tensor.special.xlogy/xlog1py exist from PyTensor 3 on
    *(Row(name, getattr(special, name), elemwise(ANY, ANY), ALL, tol=ULPS, compose=True)
      .xfail(**int_to_float32([1], [1]))
      for name in ("xlogy", "xlog1py") if hasattr(special, name)),
    # relative tolerance on purpose: a fused loop's roundings may be merged (g++ contracts a
    # multiply and an add into one fma) or reordered (Numba's fast-math), so no ULP budget of
    # the whole body holds where its terms cancel
    Row("composite", composite, elemwise(ANY, ANY), NUMERIC, compose=True)
    .xfail(**OVERFLOWS_IN_PYTHON)
    .xfail(backends=NUMBA_BACKENDS, dtypes=tuple(NUMBA_COMPOSITE_EXAMPLES),
           blame=Blame.PYTENSOR, cause="numba-composite-int-widens", versions="pytensor<3.3",
           reason="Numba computes a Composite's narrow ints in 64 bits, wrapping once at the end "
                  "(abs of a wrapped intermediate differs)",
           match="exact match required", when=composite_wraps_before_abs,
           example=lambda d: fixed(*NUMBA_COMPOSITE_EXAMPLES[d])(d)),
    Row("composite_multi", composite_multi, elemwise(ANY, ANY), FLOATS)
    .xfail(backends=ONNX_BACKENDS, blame=Blame.PYTENSOR, cause="scalar-add-impl-sum",
           reason="Python scalar Add is sum(inputs), which starts from int 0: -0.0 + -0.0 "
                  "gives +0.0 (numpy and C: -0.0)",
           match=r"=-0\.0 but pytensor-py=0\.0 \(sign of zero", when=mixed_sum_is_negative_zero,
           example=fixed(0.0, -0.0)),
]
