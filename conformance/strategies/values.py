"""Value strategies: arrays inside an op's domain, with special values drawn on purpose."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


@dataclass(frozen=True)
class Domain:
    """The values an op input may take; bounds are clipped to what the dtype can hold.

    ``nonzero`` excludes 0 (integer divisors); ``integral`` keeps floats whole (exponents);
    ``allow_nan``/``allow_inf`` only matter for floats.
    """

    min_value: float | None = None
    max_value: float | None = None
    nonzero: bool = False
    integral: bool = False
    allow_nan: bool = True
    allow_inf: bool = True

    def __post_init__(self):
        lo, hi = self.min_value, self.max_value
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"Domain: min_value={lo!r} must be <= max_value={hi!r}")

    def bounds(self, dtype: np.dtype) -> tuple[float | None, float | None]:
        lo, hi = self.min_value, self.max_value
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            lo = info.min if lo is None else max(math.ceil(lo), info.min)
            hi = info.max if hi is None else min(math.floor(hi), info.max)
        elif dtype.kind == "f":
            big = float(np.finfo(dtype).max)
            lo = None if lo is None else max(lo, -big)
            hi = None if hi is None else min(hi, big)
        return lo, hi

    def contains(self, value, dtype: np.dtype) -> bool:
        if dtype.kind == "f" and math.isnan(value):
            return self.allow_nan
        if dtype.kind == "f" and math.isinf(value) and not self.allow_inf:
            return False
        lo, hi = self.bounds(dtype)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            return False
        if self.nonzero and value == 0:
            return False
        return not (self.integral and math.isfinite(value) and value != int(value))


ANY = Domain()
FINITE = Domain(allow_nan=False, allow_inf=False)
NONZERO = Domain(nonzero=True)


#: Per float dtype, magnitudes from just above its underflow to 1e-3, where a function's
#: result is tiny and a formula that cancels (log(1 + x) for log1p, exp(x) - 1 for expm1) is
#: far off in ulps though well inside any absolute tolerance. float16: its smallest normal
#: number, a subnormal (2**-20) and three decades.
SMALL_MAGNITUDES = {
    "float16": (float(np.finfo(np.float16).smallest_normal), 2.0**-20, 1e-4, 1e-3, 1e-2),
    "float32": (1e-38, 1e-30, 1e-20, 1e-10, 1e-5, 1e-3),
    "float64": (1e-300, 1e-200, 1e-100, 1e-30, 1e-16, 1e-8, 1e-3),
}


def small_magnitudes(dtype) -> list:
    """The ladder of small magnitudes of a float ``dtype`` (:data:`SMALL_MAGNITUDES`), each
    with both signs, rounded to the dtype; none for other dtypes."""
    found = SMALL_MAGNITUDES.get(np.dtype(dtype).name, ())
    return [float(np.asarray(sign * v, dtype)) for v in found for sign in (1, -1)]


def special_values(dtype) -> list:
    """Values that break careless implementations: signed zeros, ties, extremes, nan/inf,
    and for floats the ladder of small magnitudes (:func:`small_magnitudes`)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return [False, True]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        candidates = (0, 1, -1, 2, -2, 3, info.max, info.min, info.max - 1, info.min + 1)
        return [v for v in candidates if info.min <= v <= info.max]
    info = np.finfo(dtype)
    # the ladder right after the zeros: a failure there shrinks to a small magnitude
    return [0.0, -0.0, *small_magnitudes(dtype), 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5,
            math.nan, math.inf, -math.inf, float(info.max), -float(info.max), float(info.tiny),
            float(info.smallest_subnormal)]


def elements(dtype, domain: Domain = ANY):
    """Scalars of ``dtype`` inside ``domain``: about one in four is a special value (for
    floats, the small-magnitude ladder among them), those inside the domain."""
    return _elements(np.dtype(dtype), domain)


@functools.lru_cache(maxsize=512)
def _elements(dtype: np.dtype, domain: Domain):
    # built once per dtype and domain: the strategies are immutable, and every array drawn
    # for every example asked for them anew
    specials = [v for v in special_values(dtype) if dtype == np.bool_ or domain.contains(v, dtype)]
    if dtype == np.bool_:
        general = st.booleans()
    elif dtype.kind in "iu":
        lo, hi = domain.bounds(dtype)
        general = st.integers(int(lo), int(hi))
        if domain.nonzero:
            general = general.filter(bool)
    else:
        lo, hi = domain.bounds(dtype)
        general = hnp.from_dtype(
            # a bounded domain draws nan from the special values only (Hypothesis refuses
            # nan beside bounds)
            dtype, min_value=lo, max_value=hi,
            allow_nan=domain.allow_nan and lo is None and hi is None,
            allow_infinity=domain.allow_inf and lo is None and hi is None,
            allow_subnormal=True,
        )
        if domain.integral:
            general = general.map(lambda v: float(np.trunc(v)) if math.isfinite(v) else v)
        if domain.nonzero:
            general = general.filter(bool)
    if not specials:
        return general
    return st.one_of(st.sampled_from(specials), general, general, general)


def arrays(dtype, shape, domain: Domain = ANY):
    """An array of ``dtype`` and ``shape`` with elements from :func:`elements`; shrinks
    toward zeros (or the domain's lowest special value)."""
    return hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype, domain))
