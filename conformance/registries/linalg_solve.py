"""Linear solvers: triangular, Cholesky-factor, general, symmetric and positive-definite
systems, well-conditioned and ill-conditioned (the factorisations, determinants and
inverses they rest on are in ``linalg``; the converter's rules in
``converter/ops/linalg_solve.py``).

A system's matrix keeps the structure its row is about in the special-value grid (None): its
right-hand side takes the special values.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from conformance.jax_records import on_jax
from conformance.registries.linalg import (
    FLOAT_PAIR,
    FLOATS,
    LOWER,
    SOLVE_TOL,
    UNIT,
    ill_tol,
    jax_linalg_dtype,
    lapack_singular,
    one_by_one,
    zero_batch,
    zero_signs_determined,
)
from conformance.registry import (
    JAX_BACKENDS,
    NUMBA_BACKENDS,
    ONNX_BACKENDS,
    REWRITTEN_ONNX,
    Blame,
    Row,
    fixed_in,
)
from conformance.strategies import fixed
from conformance.strategies.matrices import square_systems
from conformance.strategies.products import Unit, drawn_from


def solve_singular_result(example):
    """Solve.perform answers a singular system with ``np.full(a.shape, nan, a.dtype)``
    (the default rewrites may replace the Solve, so pytensor-c-opt differs as ONNX does)."""
    return {"backends": (*ONNX_BACKENDS, "pytensor-c-opt", *NUMBA_BACKENDS),
            "blame": Blame.PYTENSOR,
            "reason": "Solve.perform returns nan shaped and typed like a (float16 stays float16), "
                      "not like its output, when scipy finds a singular (or, for pos, not "
                      "positive definite) matrix",
            "match": r"shape=|gives float16|pytensor-py raised ValueError: could not broadcast",
            "when": lambda case: case.values[1].shape != case.values[0].shape
            or case.values[0].dtype == np.float16, "example": example}


def reads_other_triangle(case) -> bool:
    """A matrix right-hand side (the rewrite takes no vector) and, with lower=False, a lower
    triangle of a that is not the transpose of its upper one (the triangle to read)."""
    return case.values[1].ndim >= 2 and _upper_triangle_asked_and_differs(case)


def reads_other_triangle_of_vector(case) -> bool:
    """:func:`reads_other_triangle` for a vector right-hand side."""
    return case.values[1].ndim == 1 and _upper_triangle_asked_and_differs(case)


def _upper_triangle_asked_and_differs(case) -> bool:
    """lower=False, and a's lower triangle is not the transpose of its upper one."""
    a = case.values[0]
    lower = np.swapaxes(np.tril(a), -1, -2)
    return not dict(case.params)["lower"] and not np.array_equal(np.triu(a), lower,
                                                                  equal_nan=True)


def cho_signs_determined(case) -> bool:
    """:func:`zero_signs_determined`, with the factor's diagonal positive."""
    return zero_signs_determined(case) and (one_by_one(case) or bool(
        (np.diagonal(case.values[0], 0, -2, -1) > 0).all()))


def zero_on_diagonal(case) -> bool:
    a = case.values[0]
    return not dict(case.params)["unit_diagonal"] and bool(
        (np.diagonal(a, 0, -2, -1) == 0).any())


# PyTensor's JAX dispatch (up to its main branch, August 2026) calls jax.scipy's solvers,
# which check nothing: a singular system is solved by IEEE arithmetic, where perform returns
# nan (for Solve, shaped like a: the record solve_singular_result describes)
JAX_TRIANGULAR_SINGULAR = {
    "backends": JAX_BACKENDS, "dtypes": FLOAT_PAIR, "blame": Blame.PYTENSOR,
    "versions": "pytensor>=3",
    "reason": "JAX's solve_triangular divides by a zero on the diagonal only in the rows that "
              "reach it (others stay finite) where SolveTriangular.perform returns all nan",
    "match": r"but pytensor-py=nan", "when": zero_on_diagonal,
    "example": fixed([[0.0, 0.0], [0.0, 1.0]], [0.0, 0.0],
                     params=[("lower", True), ("trans", 1), ("unit_diagonal", False)]),
}


JAX_SOLVE_SINGULAR = {
    **JAX_TRIANGULAR_SINGULAR, "when": lapack_singular,
    "reason": "JAX's solve (an LU that checks no pivot) gives nan only in the rows that reach "
              "a zero pivot (others stay finite) where Solve.perform returns all nan",
    "example": fixed([[0.0, 0.0], [0.0, -4.0]], [[0.0, 0.0], [0.0, 0.0]],
                     params=[("lower", True)]),
}


def asymmetric(case) -> bool:
    a = case.values[0]
    return not np.array_equal(a, np.swapaxes(a, -1, -2), equal_nan=True)


JAX_SOLVE_SYM_BOTH_TRIANGLES = {
    "backends": JAX_BACKENDS, "dtypes": FLOAT_PAIR, "blame": Blame.PYTENSOR,
    "versions": "pytensor>=3",
    "reason": "jax.scipy.linalg.solve ignores lower for assume_a='sym' (an LU of the whole of "
              "a, though its docs say one triangle is read), so the other triangle counts",
    "match": r"abs err", "when": asymmetric,
    "example": fixed([[1.0, 5.0], [0.0, 1.0]], [1.0, 1.0], params=[("lower", True)]),
}


def jax_singular_result(example) -> dict:
    return on_jax(solve_singular_result(example), dtypes=FLOAT_PAIR, versions="pytensor>=3")


# scipy's solve(assume_a='sym') factorises LDL^T (sytrf), the converter LU: an infinite
# entry of b meets inf - inf in other sums (x = (-inf, inf, nan, nan) against all nan for
# b = (-inf, tiny, ...)), an order nothing defines; a nan spreads alike through both.
SYM_RHS = drawn_from("nan")


#: the *_illcond rows' right-hand sides: x = A^-1 b grows by ILL_COND for any b but the
#: A @ x0 the factory builds, so their grid holds only values without a magnitude
NO_MAGNITUDE = Unit(min_value=0.0, max_value=0.0)


TRIANGULAR = (LOWER, ("trans", (0, 1)), ("unit_diagonal", (False, True)))


SINGULAR_VECTOR_RHS = fixed([[1.0, 0.0], [0.0, 0.0]], [1.0, 1.0], params=[("lower", False)])


C_OPT = ("pytensor-c-opt",)
#: pytensor-c-opt on PyTensor 3 (bounded further with fixed_in)
ON_C_OPT_3 = {"backends": C_OPT, "versions": "pytensor>=3"}


POS_1X1 = {"backends": (*ONNX_BACKENDS, "pytensor-c-opt", *NUMBA_BACKENDS),
            "blame": Blame.PYTENSOR,
            "reason": "scipy.linalg.solve divides a 1x1 system without checking that a > 0 "
                      "(assume_a='pos'); larger ones not positive definite give nan",
            "match": "=nan but pytensor-py=", "when": lambda case: case.values[0].shape[-1] == 1,
            "example": fixed([[-2.0]], [1.0], params=[("lower", False)])}


NOT_PD_VECTOR_RHS = fixed([[1.0, 0.0], [0.0, -1.0]], [1.0, 1.0], params=[("lower", False)])


# the default rewrites (on JAX too, where a float16 system does not show it)
PSD_SOLVE_LOWER = {
    "backends": ("pytensor-c-opt", "pytensor-numba-opt", *REWRITTEN_ONNX),
    "blame": Blame.PYTENSOR, "versions": "pytensor>=3", "cause": "psd-solve-cholesky-lower",
    "reason": "the default rewrites solve assume_a='pos', lower=False through a Cholesky of a's "
              "lower triangle, not the upper one asked for",
    "when": reads_other_triangle,
    "example": fixed([[2.0, 1.0], [5.0, 2.0]], [[1.0], [1.0]], params=[("lower", False)]),
}


# 3.3's rewrite takes a vector right-hand side too (3.0.7 and 2.38 leave it to Solve: measured)
PSD_SOLVE_LOWER_VECTOR = {
    **PSD_SOLVE_LOWER, "versions": "pytensor>=3.3", "when": reads_other_triangle_of_vector,
    "example": fixed([[2.0, 1.0], [5.0, 2.0]], [1.0, 1.0], params=[("lower", False)]),
}


def _solve(assume_a):
    return lambda a, b, lower: pt.linalg.solve(a, b, assume_a=assume_a, lower=lower)


def _solve_triangular(a, b, lower, trans, unit_diagonal):
    return pt.linalg.solve_triangular(a, b, lower=lower, trans=trans,
                                      unit_diagonal=unit_diagonal)


ROWS = [
    Row("solve_triangular", _solve_triangular,
        square_systems(("triangular", "triangular_singular"), rhs="tri", params=TRIANGULAR),
        FLOATS, tol=SOLVE_TOL, signed_zeros=zero_signs_determined, grid=(None, UNIT))
    .xfail(**zero_batch(True, lower=True, trans=0, unit_diagonal=False))
    .xfail(**on_jax(zero_batch(True, lower=True, trans=0, unit_diagonal=False)))
    .xfail(**jax_linalg_dtype(fixed([[1.0]], [1.0], params=[("lower", True), ("trans", 0),
                                                           ("unit_diagonal", False)]),
                              ("float16",)))
    .xfail(**JAX_TRIANGULAR_SINGULAR),
    Row("solve_triangular_illcond", _solve_triangular,
        square_systems(("triangular_ill",), rhs="tri", params=TRIANGULAR, batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL), signed_zeros=zero_signs_determined,
        grid=(None, NO_MAGNITUDE)),
    Row("cho_solve", lambda c, b, lower: pt.linalg.cho_solve((c, lower), b),
        square_systems(("factor",), rhs="cho", params=(LOWER,)), FLOATS, tol=SOLVE_TOL,
        signed_zeros=cho_signs_determined, grid=(None, UNIT))
    .xfail(**zero_batch(True, lower=True)).xfail(**on_jax(zero_batch(True, lower=True)))
    .xfail(**jax_linalg_dtype(fixed([[1.0]], [1.0], params=[("lower", True)]), ("float16",))),
    Row("cho_solve_illcond", lambda c, b, lower: pt.linalg.cho_solve((c, lower), b),
        square_systems(("factor_ill",), rhs="cho", params=(LOWER,), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL), signed_zeros=cho_signs_determined,
        grid=(None, NO_MAGNITUDE)),
    Row("solve", _solve("gen"), square_systems(("general", "singular"), rhs="gen",
                                               params=(LOWER,)), FLOATS, tol=SOLVE_TOL,
        signed_zeros=zero_signs_determined, grid=(None, UNIT))
    # not on pytensor-c-opt, whose rewrites replace this Solve (2.38, 3.0.7 and 3.3.8 alike)
    .xfail_apart(solve_singular_result(SINGULAR_VECTOR_RHS), backends=("pytensor-c-opt",),
                 before=None)
    .xfail(**zero_batch(True, lower=False))
    .xfail(**on_jax(zero_batch(True, lower=False), dtypes=FLOAT_PAIR))
    .xfail(**jax_singular_result(SINGULAR_VECTOR_RHS)),
    Row("solve_illcond", _solve("gen"),
        square_systems(("general_ill",), rhs="gen", params=(LOWER,), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL), signed_zeros=zero_signs_determined,
        grid=(None, NO_MAGNITUDE)),
    Row("solve_sym", _solve("sym"), square_systems(("symmetric", "symmetric_singular"),
                                                   rhs="sym", params=(LOWER,)),
        FLOATS, tol=SOLVE_TOL, signed_zeros=one_by_one, grid=(None, SYM_RHS))
    # not on pytensor-c-opt, whose rewrites replace this Solve (2.38, 3.0.7 and 3.3.8 alike)
    .xfail_apart(solve_singular_result(SINGULAR_VECTOR_RHS), backends=("pytensor-c-opt",),
                 before=None)
    .xfail(**zero_batch(True, lower=False))
    .xfail(**on_jax(zero_batch(True, lower=False), dtypes=FLOAT_PAIR))
    .xfail(**jax_singular_result(SINGULAR_VECTOR_RHS)).xfail(**JAX_SOLVE_SYM_BOTH_TRIANGLES)
    .xfail(**JAX_SOLVE_SINGULAR),
    Row("solve_pos", _solve("pos"), square_systems(("spd", "not_pd", "singular_pd"), rhs="sym",
                                                   params=(LOWER,)), FLOATS, tol=SOLVE_TOL,
        signed_zeros=zero_signs_determined, grid=(None, UNIT))
    # pytensor-c-opt shows these where Solve.perform still runs after the default rewrites:
    # from PyTensor 3.3 on, on 3.0.7 only for the dtypes named, on 2.38 never (measured)
    .xfail_apart(solve_singular_result(NOT_PD_VECTOR_RHS), backends=C_OPT, before=None,
                 since="3.3")
    .xfail(**fixed_in({**solve_singular_result(NOT_PD_VECTOR_RHS), **ON_C_OPT_3}, "3.3",
                      ("float16",)))
    .xfail(**zero_batch(True, lower=False))
    .xfail_apart(POS_1X1, backends=C_OPT, before=None, since="3.3")
    .xfail(**fixed_in({**POS_1X1, **ON_C_OPT_3}, "3.3", ("float64",)))
    .xfail(**on_jax(POS_1X1, dtypes=FLOAT_PAIR, versions="pytensor>=3"))
    .xfail(**PSD_SOLVE_LOWER).xfail(**PSD_SOLVE_LOWER_VECTOR)
    .xfail(**on_jax(PSD_SOLVE_LOWER, backends=("pytensor-jax-opt",), dtypes=FLOAT_PAIR))
    .xfail(**on_jax(zero_batch(True, lower=False), dtypes=FLOAT_PAIR))
    .xfail(**jax_singular_result(NOT_PD_VECTOR_RHS)),
]
