"""The one comparison every test uses: dtype, shape, values and agreement on raising.

Floats agree when ``|actual - expected| <= atol + rtol * |expected|``, or, for a tolerance in
ULPs, ``<= ulps * ulp(expected)`` (numpy's spacing in the output's dtype, see :func:`ulp`) plus
the row's cancellation term scaled to the operands or to the sum of the terms' magnitudes
(``Tol``); nan matches nan, an
infinity only matches the same infinity, and, with ``signed_zeros=True``, a zero only matches
a zero of the same sign (IEEE 754 and numpy tell them apart: a later division turns them into
opposite infinities). Integers and bools are exact.

Registry rows judge signed zeros (``Row.signed_zeros``): always, or on the cases where
IEEE 754 determines them (a predicate).

A backend that may flush subnormals of some dtypes to zero by design (``flushes_subnormals``,
a backend's declared semantics) is compared with the subnormal results of those dtypes read as
zeros on both sides; the harness also takes an element as right where it agrees with the
reference on the inputs with their subnormals flushed (:func:`flushed`,
:func:`either_expectation`). Likewise a backend that computes a narrow float dtype in a wider
one (``widens``) is right where it agrees with the reference's graph rebuilt so
(conformance.compile.widened).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from conformance.registry import ZERO_SIGN_WORDS, Tol

Outputs = Sequence[np.ndarray] | BaseException


@dataclass(frozen=True)
class Comparison:
    ok: bool
    message: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    max_ulp: float = 0.0
    #: the output and element the message is about (the worst one), None when it is not
    #: about one element
    where: tuple[int, tuple[int, ...]] | None = None
    #: every element of that output that disagrees (records are judged on each of them)
    elements: tuple[tuple[int, ...], ...] = ()


def describe_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


def _describe(outputs: Outputs) -> str:
    if isinstance(outputs, BaseException):
        return f"raised {describe_error(outputs)}"
    return "returned " + ", ".join(f"{o.dtype}{list(o.shape)}" for o in outputs)


def _value(x) -> str:
    return repr(x.item()) if isinstance(x, np.generic) else repr(x)


def _where(n_outputs: int, i: int, index: tuple) -> str:
    name = "out" if n_outputs == 1 else f"out{i}"
    return f"{name}[{', '.join(map(str, index))}]" if index else name


def ulp(value: np.ndarray) -> np.ndarray:
    """numpy's spacing of ``|value|`` in ``value``'s own dtype, as float64: the smallest
    subnormal for subnormals and zeros, and at the largest finite magnitude its binade's
    spacing (numpy's is inf there); nan for nan and inf."""
    magnitude = np.abs(np.asarray(value))
    info = np.finfo(magnitude.dtype)
    finite = np.where(np.isfinite(magnitude), magnitude, 0)  # numpy warns on nan and inf
    spacing = np.spacing(np.where(finite == info.max, np.nextafter(info.max, 0), finite))
    return np.where(np.isfinite(magnitude), spacing, np.nan).astype(np.float64)


def _operand_magnitudes(operands: Sequence[np.ndarray], e: np.ndarray) -> np.ndarray:
    """Per element of ``e``, the largest finite operand magnitude there, in ``e``'s dtype
    (operands that do not broadcast to ``e``'s shape count with their largest element)."""
    largest = np.zeros(e.shape)
    for v in operands:
        with np.errstate(invalid="ignore"):
            magnitude = np.abs(np.asarray(v, dtype=np.float64))
        magnitude = np.where(np.isfinite(magnitude), magnitude, 0.0)
        try:
            magnitude = np.broadcast_to(magnitude, e.shape)
        except ValueError:
            magnitude = magnitude.max(initial=0.0)
        largest = np.maximum(largest, magnitude)
    return np.minimum(largest, float(np.finfo(e.dtype).max)).astype(e.dtype)


def magnitudes(value: np.ndarray) -> np.ndarray:
    """``|value|`` in its own dtype, what ``Tol.terms_ulps``'s terms are computed from: a
    float's nan and infinities read as 0 (a term that is not finite makes the result not
    finite, which is judged apart), a signed integer's most negative value as its largest."""
    value = np.asarray(value)
    if value.dtype.kind == "f":
        return np.where(np.isfinite(value), np.abs(value), 0).astype(value.dtype)
    if value.dtype.kind == "i":
        return np.where(value < 0, np.where(value == np.iinfo(value.dtype).min,
                                            np.iinfo(value.dtype).max, -value), value)
    return value


def _terms_magnitude(terms: np.ndarray, e: np.ndarray) -> np.ndarray | None:
    """``terms`` in ``e``'s dtype, finite (nan as 0, beyond the largest finite as it), or
    None where it does not have ``e``'s shape."""
    if terms.shape != e.shape:
        return None
    with np.errstate(invalid="ignore"):
        t = np.abs(np.asarray(terms, dtype=np.float64))
    t = np.where(np.isnan(t), 0.0, t)
    return np.minimum(t, float(np.finfo(e.dtype).max)).astype(e.dtype)


def _allowed(e: np.ndarray, tol: Tol, operands: Sequence[np.ndarray],
             terms: np.ndarray | None = None) -> np.ndarray:
    """The error allowed at each element of ``e`` (the expected values), in float64."""
    if not tol.in_ulps:
        with np.errstate(invalid="ignore", over="ignore"):
            return tol.atol + tol.rtol * np.abs(e.astype(np.float64))
    allowed = tol.ulps * ulp(e)
    if tol.operand_ulps and operands:
        allowed = allowed + tol.operand_ulps * ulp(_operand_magnitudes(operands, e))
    # without the terms (their evaluation raised) only the budget on the result is left:
    # stricter, never looser
    if tol.terms_ulps and terms is not None and (t := _terms_magnitude(terms, e)) is not None:
        allowed = allowed + tol.terms_ulps * ulp(t)
    return allowed


def _float_errors(a: np.ndarray, e: np.ndarray, tol: Tol, operands: Sequence[np.ndarray] = (),
                  terms: np.ndarray | None = None):
    """Per-element (abs error, allowed error, mismatch mask) in float64."""
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    both_nan = np.isnan(a64) & np.isnan(e64)
    same = (a64 == e64) | both_nan
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(same, 0.0, np.abs(a64 - e64))
        err = np.where(np.isnan(err), np.inf, err)
    allowed = _allowed(e, tol, operands, terms)
    # nan or inf on one side only is a mismatch whatever the tolerance (rtol * |nan| is nan,
    # and nothing compares greater than nan)
    special = np.isinf(a64) | np.isinf(e64) | np.isnan(a64) | np.isnan(e64)
    bad = ~same & (special | (err > allowed))
    return err, allowed, bad


def _excess_words(err: float, allowed: float, e, tol: Tol) -> str:
    """``abs err X > tol Y`` and the same in ulps of the expected value ``e``: against the
    budget (``; 6 ulp > 4 ulp``) for a tolerance in ulps, else for information."""
    words = f"abs err {err:.3g} > tol {allowed:.3g}"
    spacing = float(ulp(np.asarray(e)))
    if not np.isfinite(spacing):
        return words
    off = f"{float(err) / spacing:.3g} ulp"  # a Python float: inf beyond range, no warning
    return f"{words}; {off} > {allowed / spacing:.3g} ulp" if tol.in_ulps else f"{words}; {off}"


def _zero_sign_differs(a: np.ndarray, e: np.ndarray) -> tuple[int, ...] | None:
    """The first element where both are zeros of opposite signs (real floats only)."""
    if a.dtype.kind != "f":
        return None
    differs = _zero_signs_differ(a, e)
    if not differs.any():
        return None
    return tuple(int(j) for j in np.argwhere(differs)[0])


def _zero_signs_differ(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    return (a == 0) & (e == 0) & (np.signbit(a) != np.signbit(e))


def _indices(mask: np.ndarray) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(j) for j in found) for found in np.argwhere(mask))


def _invalid_bool(a: np.ndarray) -> tuple[tuple[int, ...], int] | None:
    """The first element of a bool array whose byte is neither 0 nor 1, and that byte."""
    raw = a.view(np.uint8)
    bad = raw > 1
    if not bad.any():
        return None
    found = tuple(int(j) for j in np.argwhere(bad)[0])
    return found, int(raw[found])


def holds_subnormals(values: Sequence[np.ndarray], dtypes: frozenset[str]) -> bool:
    """Whether some array of one of ``dtypes`` holds a subnormal number."""
    return any(v.dtype.name in dtypes and bool(_subnormal(v).any()) for v in values)


def flushed(value: np.ndarray, dtypes: frozenset[str]) -> np.ndarray:
    """``value`` with its subnormals replaced by zeros of their sign, if its dtype is one of
    ``dtypes`` (what a CPU in DAZ/FTZ mode reads and writes), else ``value`` itself."""
    if value.dtype.name not in dtypes:
        return value
    mask = _subnormal(value)
    if not mask.any():
        return value
    return np.where(mask, np.copysign(np.zeros((), value.dtype), value), value)


def either_expectation(expected: Outputs, alternative: Outputs, actual: Outputs, tol: Tol,
                       dtypes: frozenset[str], *, signed_zeros: bool = False,
                       operands: Sequence[np.ndarray] = (),
                       terms: Outputs | None = None) -> Outputs:
    """``expected`` with each element taken from ``alternative`` where ``actual`` agrees with
    that one and not with ``expected`` (subnormals of ``dtypes`` read as zeros throughout;
    with ``signed_zeros`` a zero agrees only with a zero of its sign; ``operands`` and
    ``terms`` as for :func:`compare`): an element is right if it agrees with either.
    Outputs that differ in number, dtype or shape, or a side that raised, leave ``expected``
    as it is."""
    sides = (expected, alternative, actual)
    if any(isinstance(x, BaseException) for x in sides) or len(set(map(len, sides))) != 1:
        return expected
    merged = []
    for i, (e, f, a) in enumerate(zip(expected, alternative, actual, strict=True)):
        t = _output_terms(terms, i)
        if not (e.shape == f.shape == a.shape and e.dtype == f.dtype == a.dtype):
            merged.append(e)
            continue
        e0, f0, a0 = (flushed(v, dtypes) for v in (e, f, a))
        if e.dtype.kind in "fc":
            off_e, off_f = (_float_errors(a0, x, tol, operands, t)[2] for x in (e0, f0))
            if signed_zeros and e.dtype.kind == "f":
                off_e, off_f = off_e | _zero_signs_differ(a0, e0), off_f | _zero_signs_differ(
                    a0, f0)
        else:
            off_e, off_f = a0 != e0, a0 != f0
        merged.append(np.where(off_e & ~off_f, f, e).astype(e.dtype, copy=False))
    return merged


def _output_terms(terms: Outputs | None, i: int) -> np.ndarray | None:
    if terms is None or isinstance(terms, BaseException) or i >= len(terms):
        return None
    return terms[i]


def also_tried(cmp: Comparison, alternative: Outputs, what: str) -> Comparison:
    """``cmp``, a disagreement with an expectation merged from two, saying that ``what`` (the
    second) was tried as well and what it gives where the message points."""
    if cmp.ok:
        return cmp
    i, index = cmp.where or (0, None)
    if (isinstance(alternative, BaseException) or index is None or i >= len(alternative)
            or len(index) != alternative[i].ndim
            or any(j >= n for j, n in zip(index, alternative[i].shape, strict=True))):
        got = _describe(alternative)
    else:
        got = f"{_where(len(alternative), i, index)}={_value(alternative[i][index])}"
    return replace(cmp, message=f"{cmp.message}; nor does it agree with {what}: {got}")


def _subnormal(value: np.ndarray) -> np.ndarray:
    if value.dtype.kind != "f":
        return np.zeros(value.shape, bool)
    magnitude = np.abs(value)
    return (magnitude > 0) & (magnitude < np.finfo(value.dtype).smallest_normal)


def compare(expected: Outputs, actual: Outputs, tol: Tol, *, backend: str,
            reference: str = "pytensor-py", case: str = "", values: bool = True,
            signed_zeros: bool = False,
            flushes_subnormals: frozenset[str] = frozenset(),
            operands: Sequence[np.ndarray] = (),
            terms: Outputs | None = None) -> Comparison:
    """Compare ``actual`` (from ``backend``) against ``expected`` (from ``reference``);
    with ``values=False`` only dtypes and shapes (for uninitialised memory), with
    ``signed_zeros`` -0.0 and 0.0 apart, with ``flushes_subnormals`` the subnormals of those
    dtypes read as zeros of their sign on both sides. ``operands`` (the case's inputs) scale
    a ULP budget's cancellation term (``Tol.operand_ulps``), ``terms`` (the reference's
    outputs on their magnitudes) its sum-of-terms one (``Tol.terms_ulps``)."""
    suffix = f" [{case}]" if case else ""
    if flushes_subnormals and not isinstance(expected, BaseException) \
            and not isinstance(actual, BaseException):
        expected = [flushed(e, flushes_subnormals) for e in expected]
        actual = [flushed(a, flushes_subnormals) for a in actual]
    if isinstance(expected, BaseException) or isinstance(actual, BaseException):
        if isinstance(expected, BaseException) and isinstance(actual, BaseException):
            return Comparison(True)
        return Comparison(
            False, f"{backend} {_describe(actual)} but {reference} {_describe(expected)}{suffix}"
        )
    if len(actual) != len(expected):
        return Comparison(False, f"{backend}: {len(actual)} outputs but {reference} gives "
                                 f"{len(expected)}{suffix}")
    worst_abs = worst_rel = worst_ulp = 0.0
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        where = _where(len(expected), i, ())
        if a.dtype != e.dtype:
            return Comparison(False, f"{backend}: {where}.dtype={a.dtype}, but {reference} gives "
                                     f"{e.dtype}{suffix}")
        if a.shape != e.shape:
            return Comparison(False, f"{backend}: {where}.shape={a.shape}, but {reference} gives "
                                     f"{e.shape}{suffix}")
        if not values:
            continue
        # a bool byte other than 0 or 1 reads as True but is not 1 once cast or summed
        if a.dtype == bool and (invalid := _invalid_bool(a)) is not None:
            found, byte = invalid
            return Comparison(False, f"{backend}: {_where(len(expected), i, found)} holds the "
                                     f"byte {byte}, not a bool (0 or 1), where {reference}="
                                     f"{_value(e[found])}{suffix}", where=(i, found))
        if np.array_equal(a, e, equal_nan=a.dtype.kind in "fc"):
            # identical but for the signs of zeros (which == ignores) in most cases: no
            # error statistics to gather
            if signed_zeros and (found := _zero_sign_differs(a, e)) is not None:
                return Comparison(False, f"{backend}: {_where(len(expected), i, found)}="
                                         f"{_value(a[found])} but {reference}={_value(e[found])}"
                                         f" ({ZERO_SIGN_WORDS} differs){suffix}",
                                  worst_abs, worst_rel, worst_ulp, (i, found),
                                  _indices(_zero_signs_differ(a, e)))
            continue
        if a.dtype.kind not in "fc":
            bad = a != e
            if bad.any():
                idx = tuple(int(j) for j in np.argwhere(bad)[0])
                return Comparison(False, f"{backend}: {_where(len(expected), i, idx)}="
                                         f"{_value(a[idx])} but {reference}={_value(e[idx])} "
                                         f"(exact match required for {e.dtype}){suffix}",
                                  where=(i, idx), elements=_indices(bad))
            continue
        err, allowed, bad = _float_errors(a, e, tol, operands, _output_terms(terms, i))
        # Where the error is finite and non-zero the reference value is finite, so the
        # statistics need no nan handling (relative to an exact 0 they are infinite).
        nonzero = np.isfinite(err) & (err > 0)
        if nonzero.any():
            ref = e[nonzero]
            with np.errstate(divide="ignore", over="ignore"):
                worst_abs = max(worst_abs, float(err[nonzero].max()))
                worst_rel = max(worst_rel, float((err[nonzero] / np.abs(ref)).max()))
                ulps = err[nonzero] / ulp(ref)
                worst_ulp = max(worst_ulp, float(ulps.max()))
        if bad.any():
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                # the worst element: by how many times its budget it is off for a budget in
                # ulps (a tiny result 1e7 ulp off before a large one 5 ulp off), else by how far
                over = np.where(allowed > 0, err / allowed, np.inf) if tol.in_ulps else \
                    err - allowed
                excess = np.where(bad, np.where(np.isnan(over), np.inf, over), -np.inf)
            idx = tuple(int(j) for j in np.unravel_index(int(np.argmax(excess)), a.shape))
            return Comparison(
                False,
                f"{backend}: {_where(len(expected), i, idx)}={_value(a[idx])} but {reference}="
                f"{_value(e[idx])} ({_excess_words(err[idx], allowed[idx], e[idx], tol)})"
                f"{suffix}",
                worst_abs, worst_rel, worst_ulp, (i, idx), _indices(bad),
            )
        if signed_zeros and (found := _zero_sign_differs(a, e)) is not None:
            return Comparison(False, f"{backend}: {_where(len(expected), i, found)}="
                                     f"{_value(a[found])} but {reference}={_value(e[found])} "
                                     f"({ZERO_SIGN_WORDS} differs){suffix}",
                              worst_abs, worst_rel, worst_ulp, (i, found),
                              _indices(_zero_signs_differ(a, e)))
    return Comparison(True, "", worst_abs, worst_rel, worst_ulp)


def assert_agree(expected: Outputs, actual: Outputs, tol: Tol, **kwargs) -> Comparison:
    """:func:`compare`, raising ``AssertionError`` with its message on disagreement."""
    __tracebackhide__ = True
    result = compare(expected, actual, tol, **kwargs)
    if not result.ok:
        raise AssertionError(result.message)
    return result
