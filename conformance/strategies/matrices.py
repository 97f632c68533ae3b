"""Square matrices and linear systems for the factorisation and solver rows.

Matrices are built in float64 from entries in [-1, 1], then cast, so that their condition
is known: general ones <= 3, SPD ones <= n + 1, triangular ones have diagonal magnitudes
in [1, 2]; ill-conditioned ones (the *_illcond rows) about ILL_COND[dtype]; singular ones
meet an exact zero pivot in every algorithm (a zero row and column, or an integer factor
with a zero on its diagonal); and non-positive-definite or non-finite ones. The triangle
an op does not read holds garbage, nan included.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.registry import Case

MAX_N = 4
ILL_COND = {"float32": 1e3, "float64": 1e6}
BATCHES = [(), (), (0,), (1,), (2,)]


def _unit(draw, shape):
    return draw(hnp.arrays(np.float64, shape, elements=st.floats(-1.0, 1.0)))


def _pick(draw, n):
    return draw(st.integers(0, n - 1)) if n else None


def _spd(draw, shape, cond=None):
    """``M M^T + d I``, eigenvalues in [d, n^2 + d]: ``d = n``, or M of rank n - 1 and
    ``d = n^2 / cond`` (cond(A) about ``cond``)."""
    n = shape[-1]
    m = _unit(draw, shape)
    if cond and n:
        m[..., -1] = 0.0
    return m @ np.swapaxes(m, -1, -2) + (n if cond is None else max(n * n, 1) / cond) * np.eye(n)


def _general(draw, shape, permute=True):
    """Rows of ``M + 2n D`` (D diagonal, random signs), shuffled so that partial pivoting
    swaps: singular values in [n, 3n]."""
    n = shape[-1]
    signs = np.diag(draw(hnp.arrays(np.float64, n, elements=st.sampled_from([-1.0, 1.0]))))
    a = _unit(draw, shape) + 2 * n * signs
    return a[..., draw(st.permutations(range(n))), :] if permute else a


def _singular_int(draw, shape):
    """``B B^T``, B integer lower-triangular with a zero on its diagonal: every Cholesky
    step is exact, so the zero pivot is met exactly."""
    n = shape[-1]
    b = np.tril(draw(hnp.arrays(np.float64, shape, elements=st.sampled_from([-2.0, 1.0, 2.0]))))
    b[..., range(n), range(n)] = np.abs(b[..., range(n), range(n)])
    if n:
        b[..., (k := _pick(draw, n)), k] = 0.0
    return b @ np.swapaxes(b, -1, -2)


def _set(draw, a, how):
    """``a`` with, at a random k (and l): row and column k zeroed ("cross"), diagonal entry k
    negated ("negate": an SPD matrix's pivot k is then < -n) or entries (k, l) and (l, k)
    made nan or +-inf ("nonfinite")."""
    n = a.shape[-1]
    if n:
        k, l = _pick(draw, n), _pick(draw, n)
        if how == "cross":
            a[..., k, :] = a[..., :, k] = 0.0
        elif how == "negate":
            a[..., k, k] *= -1
        else:
            a[..., k, l] = a[..., l, k] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
    return a


def _garbage(draw, a, lower):
    """Fill the triangle the op does not read (strictly upper if ``lower``)."""
    n = a.shape[-1]
    unread = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    junk = draw(st.sampled_from(["keep", "nan", "random"]))
    if junk != "keep":
        a[..., unread] = np.nan if junk == "nan" else _unit(draw, a.shape)[..., unread]
    return a


def _triangular(draw, shape, diagonal=None):
    """Diagonal magnitudes in [1, 2], one of them ``diagonal`` if given."""
    n = shape[-1]
    a = _unit(draw, shape)
    d = a[..., range(n), range(n)]
    a[..., range(n), range(n)] = np.where(d < 0, -1.0, 1.0) * (1 + np.abs(_unit(draw, d.shape)))
    if n and diagonal is not None:
        a[..., (k := _pick(draw, n)), k] = diagonal
    return a


def _factor(a, lower):
    c = np.linalg.cholesky(a)
    return c if lower else np.swapaxes(c, -1, -2).copy()


def _matrix(draw, kind, shape, dtype, lower):
    """One matrix of ``kind``; ``lower``: the triangle the op reads (whatever ``trans``)."""
    ill, n = ILL_COND.get(dtype), shape[-1]
    return {
        "spd": lambda: _garbage(draw, _spd(draw, shape), lower),
        "spd_ill": lambda: _garbage(draw, _spd(draw, shape, ill), lower),
        "not_pd": lambda: _set(draw, _spd(draw, shape), "negate"),
        "singular_pd": lambda: _singular_int(draw, shape),
        "nonfinite_pd": lambda: _set(draw, _spd(draw, shape), "nonfinite"),
        "general": lambda: _general(draw, shape),
        "general_ill": lambda: _spd(draw, shape, ill)[..., draw(st.permutations(range(n))), :],
        "singular": lambda: _set(draw, _general(draw, shape), "cross"),
        "symmetric": lambda: _garbage(draw, _general(draw, shape, False), lower),
        "symmetric_singular": lambda: _garbage(
            draw, _set(draw, _general(draw, shape, False), "cross"), lower),
        "triangular": lambda: _garbage(draw, _triangular(draw, shape), lower),
        "triangular_ill": lambda: _garbage(draw, _triangular(draw, shape, 1 / ill), lower),
        "triangular_singular": lambda: _garbage(draw, _triangular(draw, shape, 0.0), lower),
        "factor": lambda: _garbage(draw, _factor(_spd(draw, shape), lower), lower),
        "factor_ill": lambda: _garbage(draw, _factor(_spd(draw, shape, ill), lower), lower),
    }[kind]()


def _system(a, p, structure):
    """The matrix of the system the op solves, from what it reads of ``a``."""
    lower, swap = p.get("lower", True), lambda m: np.swapaxes(m, -1, -2)
    read = np.tril(a) if lower else np.triu(a)
    if structure == "tri":
        if p["unit_diagonal"]:
            read[..., range(a.shape[-1]), range(a.shape[-1])] = 1.0
        return swap(read) if p["trans"] else read
    if structure == "cho":
        return read @ swap(read) if lower else swap(read) @ read
    return read + swap(read) - read * np.eye(a.shape[-1]) if structure == "sym" else a


def square_systems(kinds, *, rhs=None, params=(), batches=BATCHES):
    """A ``[batch, n, n]`` matrix of one of ``kinds`` (see _matrix) and, with ``rhs`` (the
    structure the op reads: "gen", "sym", "tri" or "cho"), a right-hand side (a vector, a
    matrix or a batch of them) made ``A @ x0``, x0 in [-1, 1], where the shapes allow, so
    that |x| is about 1 however ill-conditioned A is. ``params``: (name, choices) drawn."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            drawn = tuple((name, draw(st.sampled_from(choices))) for name, choices in params)
            n, batch = draw(st.integers(0, MAX_N)), draw(st.sampled_from(batches))
            lower = dict(drawn).get("lower", True)
            values = [_matrix(draw, draw(st.sampled_from(kinds)), (*batch, n, n), dtype, lower)]
            with np.errstate(all="ignore"):
                if rhs:
                    k = draw(st.integers(0, 3))
                    x0 = _unit(draw, draw(st.sampled_from([(n,), (n, k), (*batch, n, k)])))
                    a = np.nan_to_num(_system(values[0], dict(drawn), rhs))
                    values.append(a @ x0 if not batch or x0.ndim == 3 else x0)
                values = tuple(v.astype(dtype) for v in values)
            return Case(values, tuple((None,) * v.ndim for v in values), drawn)

        return cases()

    return factory
