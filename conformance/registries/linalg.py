"""Linear algebra: diagonals, determinants, factorisations, solvers and inverses (the
products are in ``blas``).

Matrices are drawn by ``conformance.strategies.matrices``: well-conditioned, singular and
ill-conditioned systems, each with the tolerance its condition number allows.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from hypothesis import strategies as st
from pytensor.tensor import basic as ptb
from pytensor.tensor.blockwise import Blockwise

from conformance.jax_records import dtype_differs, on_jax
from conformance.registries.blas import SMALL_INTS, rounding
from conformance.registry import (
    JAX_BACKENDS,
    NUMBA_BACKENDS,
    ONNX_BACKENDS,
    ORT_BACKENDS,
    Blame,
    Composes,
    Row,
    Tol,
)
from conformance.strategies import ANY, dtypes, fixed
from conformance.strategies.matrices import ILL_COND, MAX_N, square_systems
from conformance.strategies.products import (
    ALLOC_DIAGONALS,
    alloc_diagonal_operands,
    diagonal_operands,
    square_operands,
)

try:  # PyTensor 3
    from pytensor.tensor.linalg import SLogDet
except ImportError:  # PyTensor 2.x
    from pytensor.tensor.nlinalg import SLogDet

FLOATS, ALL = dtypes.FLOATS, dtypes.ALL
FLOAT_PAIR = ("float32", "float64")


# -- factorisations and solvers ------------------------------------------------------
# (the matrices themselves are drawn by conformance.strategies.matrices)
def has_zero_cross(case) -> bool:
    a = case.values[0]
    return a.size > 0 and bool((a == 0).all(axis=-1).any())


def empty_batch(case) -> bool:
    return any(0 in v.shape[:-2] for v in case.values)


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
    a, b = case.values
    lower = np.swapaxes(np.tril(a), -1, -2)
    return (b.ndim >= 2 and not dict(case.params)["lower"]
            and not np.array_equal(np.triu(a), lower, equal_nan=True))


def zero_batch(rhs: bool, **params) -> dict:
    """Blockwise.perform runs a core op without a gufunc_spec through np.vectorize, which
    raises on a length-0 batch axis (Det and MatrixInverse have one)."""
    values = (np.zeros((0, 2, 2)), np.zeros(2)) if rhs else (np.zeros((0, 2, 2)),)
    return {"backends": (*ONNX_BACKENDS, *NUMBA_BACKENDS), "blame": Blame.PYTENSOR,
            "reason": "Blockwise.perform raises NotImplementedError on a length-0 batch axis "
                      "(np.vectorize with zero size)",
            "match": "pytensor-py raised NotImplementedError: vectorize with zero size",
            "when": empty_batch, "example": fixed(*values, params=list(params.items()))}


def no_float16(op: str) -> dict:
    return {"backends": ONNX_BACKENDS, "dtypes": ("float16",), "blame": Blame.PYTENSOR,
            "reason": f"{op} accepts float16 but perform raises (numpy.linalg has no float16)",
            "cause": "nlinalg-perform-float16",
            "match": "pytensor-py raised (TypeError|ValueError)",
            "example": fixed([[1.0, 2.0], [3.0, 4.0]])}


def jax_linalg_dtype(example, dtypes_) -> dict:
    return dtype_differs(example, dtypes_, cause="jax-linalg-dtype",
                         reason="JAX's linalg returns jax.numpy's float dtype (float32 for int32, "
                                "float16 kept), not the one the graph declares")


def one_by_one(case) -> bool:
    """A 1x1 system: its result is one division or square root, whose zero sign IEEE fixes.
    The solve_sym and inv rows judge zero signs only there: LAPACK's sytrf/sytrs (LDL^T with
    Bunch-Kaufman pivots) and getri (the inverse of U, then of L) divide before they
    subtract, so a -0.0 quotient (+0.0 over a negative pivot) becomes a running value that
    a zero term keeps or flips by the order of operations (-0.0 - (+0.0) is -0.0,
    -0.0 - (-0.0) is +0.0); the converter's LU subtracts first. Both orders are
    IEEE-correct: of [[-5, -1], [-1, -5]] x = (0, 0), sytrs gives (+0.0, -0.0), LU -0.0s."""
    return case.values[0].shape[-1] <= 1


def zero_signs_determined(case) -> bool:
    """Whether every zero of a Cholesky factor, an LU solve or a substitution has one
    IEEE-correct sign: a 1x1 system, or no operand holds a -0.0 or a nonzero entry below
    sqrt(tiny). These algorithms subtract before they divide, so a running value starts as
    an operand entry and every zero it meets, without a -0.0, is +0.0 (x - x rounds to
    +0.0, +0.0 minus any zero is +0.0); quotients (+0.0 over a negative pivot is -0.0)
    enter only products. A -0.0 entry instead keeps or flips its sign by the order of the
    zero terms (-0.0 - (+0.0) is -0.0, -0.0 - (-0.0) is +0.0): OpenBLAS's cho_solve of
    diag(sqrt 3, sqrt 2) and b = (-0.0, -2) gives x[0] = +0.0, the converter -0.0. Near
    the underflow threshold a fused multiply-add leaves a tiny residual where two roundings
    give +0.0 (float32 cho_solve of [[0.063, 0], [1.9e-37, 1]], b = (0.004, 1.2e-38):
    OpenBLAS -0.0 for x[1]). cho_solve also needs c's diagonal positive: a negative one
    makes the first substitution's result the second's running value."""
    if one_by_one(case):
        return True
    tiny = np.sqrt(np.finfo(case.values[0].dtype).tiny)
    return not any(bool(((v == 0) & np.signbit(v)).any() or ((v != 0) & (abs(v) < tiny)).any())
                   for v in case.values)


def cho_signs_determined(case) -> bool:
    """:func:`zero_signs_determined`, with the factor's diagonal positive."""
    return zero_signs_determined(case) and (one_by_one(case) or bool(
        (np.diagonal(case.values[0], 0, -2, -1) > 0).all()))


# numpy's det is sign * exp(logdet), and a zero pivot (getrf) makes the sign +0.0
ORT_DET_ZERO = {
    "backends": ORT_BACKENDS, "dtypes": ("float32",), "blame": Blame.ONNXRUNTIME,
    "reason": "Det of a singular matrix can be -0.0 (of [[-0.0]] it is), where numpy and the "
              "ONNX reference give +0.0 for every singular matrix",
    "match": r"=-0\.0 but pytensor-py=0\.0 \(sign of zero differs\)",
    "when": lambda case: bool((np.linalg.det(case.values[0]) == 0).any()),
    "example": fixed([[-0.0]]),
}


def not_positive_definite(case) -> bool:
    try:
        np.linalg.cholesky(case.values[0].astype(np.float64))
    except np.linalg.LinAlgError:
        return True
    return not np.isfinite(case.values[0]).all()


# PyTensor's JAX backend: a matrix that is not positive definite
JAX_CHOLESKY_NAN = {
    "backends": JAX_BACKENDS, "dtypes": ("float32", "float64"), "blame": Blame.PYTENSOR,
    "cause": "jax-cholesky-nan-triangle",
    "reason": "JAX's cholesky of a matrix that is not positive definite is nan in its triangle "
              "and 0 in the other, where the Op (on_error='nan') gives nan throughout",
    "match": r"=0\.0 but pytensor-py=nan", "when": not_positive_definite,
    "example": fixed([[-2.0, 0.0], [0.0, 2.0]], params=[("lower", True)]),
}


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


def linalg_tol(roundings: float) -> dict[str, Tol]:
    """``roundings * u`` on the output's dtype (float16 input gives float32)."""
    return {d: Tol(atol=roundings * float(np.finfo(d).eps) / 2) for d in FLOAT_PAIR}


def ill_tol(tol: dict[str, Tol], power: int = 1) -> dict[str, Tol]:
    """``tol`` times the *_illcond rows' condition number ILL_COND (``power`` times)."""
    return {d: Tol(rtol=t.rtol * ILL_COND[d] ** power, atol=t.atol * ILL_COND[d] ** power)
            for d, t in tol.items()}


LOWER = ("lower", (True, False))


TRIANGULAR = (LOWER, ("trans", (0, 1)), ("unit_diagonal", (False, True)))


SINGULAR_VECTOR_RHS = fixed([[1.0, 0.0], [0.0, 0.0]], [1.0, 1.0], params=[("lower", False)])


POS_1X1 = {"backends": (*ONNX_BACKENDS, "pytensor-c-opt", *NUMBA_BACKENDS),
            "blame": Blame.PYTENSOR,
            "reason": "scipy.linalg.solve divides a 1x1 system without checking that a > 0 "
                      "(assume_a='pos'); larger ones not positive definite give nan",
            "match": "=nan but pytensor-py=", "when": lambda case: case.values[0].shape[-1] == 1,
            "example": fixed([[-2.0]], [1.0], params=[("lower", False)])}


NOT_PD_VECTOR_RHS = fixed([[1.0, 0.0], [0.0, -1.0]], [1.0, 1.0], params=[("lower", False)])


INV_SINGULAR = {"backends": ONNX_BACKENDS, "blame": Blame.CONVERTER, "dtypes": FLOAT_PAIR,
                "reason": "semantic gap: np.linalg.inv raises on a singular matrix, ONNX cannot "
                          "raise and the model returns nan",
                "match": "pytensor-py raised LinAlgError", "when": has_zero_cross,
                "example": fixed([[1.0, 0.0], [0.0, 0.0]])}


# Well-conditioned systems have |x| about 1, and LU, Cholesky and substitution are backward
# stable: two of them differ by about n * cond * u, which 64 u bounds (substitution is
# componentwise stable). A determinant has that relative error, log|det| that absolute one.
# The *_illcond rows scale it by ILL_COND, the inverse (entries up to ILL_COND) once more.
SOLVE_TOL = linalg_tol(MAX_N * 16)


DET_RTOL = {d: Tol(rtol=MAX_N * 16 * float(np.finfo(d).eps) / 2) for d in FLOAT_PAIR}


def _solve(assume_a):
    return lambda a, b, lower: pt.linalg.solve(a, b, assume_a=assume_a, lower=lower)


def _solve_triangular(a, b, lower, trans, unit_diagonal):
    return pt.linalg.solve_triangular(a, b, lower=lower, trans=trans,
                                      unit_diagonal=unit_diagonal)


DET_TOL = rounding(27, 6)  # n <= 3: LU's n**3 roundings, |det| <= 3! for entries in [-1, 1]


def _diagonal_params(shape: tuple):
    return st.tuples(st.integers(-2, 2), st.permutations(range(len(shape)))).map(
        lambda p: (("offset", p[0]), ("axis1", p[1][0]), ("axis2", p[1][1])))


def _diagonal_shape(shapes, params) -> tuple:
    (shape,), k, a1, a2 = shapes, params["offset"], params["axis1"], params["axis2"]
    length = max(0, min(shape[a1] + min(k, 0), shape[a2] - max(k, 0)))
    return (*(n for i, n in enumerate(shape) if i not in (a1, a2)), length)


def _alloc_diagonal_params(shape: tuple):
    return st.sampled_from([p for rank, *p in ALLOC_DIAGONALS if rank == len(shape)]).map(
        lambda p: (("offset", p[0]), ("axis1", p[1]), ("axis2", p[2])))


def _alloc_diagonal_shape(shapes, params) -> tuple:
    """v's last axis becomes a diagonal (longer by |offset|) across axis1 and axis2; its
    other axes fill the remaining places in order."""
    (shape,) = shapes
    side, rest = shape[-1] + abs(params["offset"]), iter(shape[:-1])
    return tuple(side if i in (params["axis1"], params["axis2"]) else next(rest)
                 for i in range(len(shape) + 1))


ROWS = [
    Row("extract_diag", lambda x, offset, axis1, axis2: pt.diagonal(x, offset, axis1, axis2),
        diagonal_operands, ALL,
        compose=Composes(domains=(ANY,), params=_diagonal_params, shape=_diagonal_shape,
                         accepts=lambda shape: len(shape) >= 2)),
    Row("alloc_diag", lambda v, offset, axis1, axis2: ptb.alloc_diag(v, offset, axis1, axis2),
        alloc_diagonal_operands, ALL,
        compose=Composes(domains=(ANY,), params=_alloc_diagonal_params,
                         shape=_alloc_diagonal_shape, accepts=lambda shape: 1 <= len(shape) <= 2))
    .xfail(**dtype_differs(fixed([1], params=[("offset", 0), ("axis1", 0), ("axis2", 1)]),
                           ("int8", "int16", "int32", "uint8", "uint16", "uint32", "uint64",
                            "float16", "float32"), cause="jax-constant-dtype",
                           reason="JAX gets a 0-d constant as a Python scalar, so a fill of one "
                                  "takes JAX's default dtype (int64, float64)")),
    Row("det", pt.linalg.det, square_operands, ALL, tol=DET_TOL)
    .xfail(backends=ONNX_BACKENDS, dtypes=SMALL_INTS, blame=Blame.PYTENSOR,
           reason="Det's output type is float32 for small ints but perform returns float64",
           match="dtype=float32, but pytensor-py gives float64", example=fixed([[1, 0], [0, 1]]),
           versions="pytensor>=3")
    .xfail(**no_float16("Det"))
    .xfail(backends=NUMBA_BACKENDS, dtypes=("bool", "int8", "int16", "uint8", "uint16"),
           blame=Blame.PYTENSOR, cause="numba-det-narrow-int",
           reason="Numba's det of a bool or 8/16-bit integer matrix returns float32 where "
                  "PyTensor declares float64", match=r"out\.dtype=float32",
           versions="pytensor>=3", example=fixed([[1]]))
    .xfail(backends=JAX_BACKENDS, dtypes=SMALL_INTS, blame=Blame.PYTENSOR,
           reason="Det's output type is float32 for small ints but perform returns float64",
           match="dtype=float32, but pytensor-py gives float64", example=fixed([[1, 0], [0, 1]]),
           versions="pytensor>=3")
    .xfail(**jax_linalg_dtype(fixed([[1]]), ("int32", "uint32"))).xfail(**ORT_DET_ZERO)
    .xfail(**on_jax(no_float16("Det"))),
    Row("det_matrices", pt.linalg.det, square_systems(("general", "singular")), FLOATS,
        tol=DET_RTOL).xfail(**no_float16("Det")).xfail(**on_jax(no_float16("Det")))
    .xfail(**ORT_DET_ZERO),
    Row("det_illcond", pt.linalg.det, square_systems(("general_ill",), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(DET_RTOL)),
    Row("slogdet", lambda a: Blockwise(SLogDet())(a), square_systems(("general", "singular")),
        FLOATS, tol=SOLVE_TOL).xfail(**no_float16("SLogDet"))
    .xfail(**on_jax(no_float16("SLogDet"))),
    Row("slogdet_illcond", lambda a: Blockwise(SLogDet())(a),
        square_systems(("general_ill",), batches=[()]), FLOAT_PAIR, tol=ill_tol(SOLVE_TOL)),
    Row("cholesky", lambda a, lower: pt.linalg.cholesky(a, lower=lower),
        square_systems(("spd", "not_pd", "singular_pd", "nonfinite_pd"), params=(LOWER,)),
        FLOATS, tol=SOLVE_TOL, signed_zeros=zero_signs_determined)
    .xfail(**zero_batch(False, lower=True))
    .xfail(**on_jax(zero_batch(False, lower=True), dtypes=FLOAT_PAIR)).xfail(**JAX_CHOLESKY_NAN)
    .xfail(backends=ONNX_BACKENDS, blame=Blame.PYTENSOR,
           reason="LAPACK's potrf (OpenBLAS, in scipy's wheels) scales a column by 1/pivot with "
                  "scal, which writes +0.0 for a 0 factor: -1 / inf gives +0.0, not -0.0",
           match=r"=-0\.0 but pytensor-py=0\.0 \(sign of zero differs\)",
           when=lambda case: np.isposinf(np.diagonal(case.values[0], 0, -2, -1)).any(),
           example=fixed([[np.inf, -1.0], [-1.0, 3.0]], params=[("lower", True)])),
    Row("cholesky_illcond", lambda a, lower: pt.linalg.cholesky(a, lower=lower),
        square_systems(("spd_ill",), params=(LOWER,), batches=[()]), FLOAT_PAIR,
        tol=ill_tol(SOLVE_TOL), signed_zeros=zero_signs_determined),
    Row("solve_triangular", _solve_triangular,
        square_systems(("triangular", "triangular_singular"), rhs="tri", params=TRIANGULAR),
        FLOATS, tol=SOLVE_TOL, signed_zeros=zero_signs_determined)
    .xfail(**zero_batch(True, lower=True, trans=0, unit_diagonal=False))
    .xfail(**on_jax(zero_batch(True, lower=True, trans=0, unit_diagonal=False)))
    .xfail(**jax_linalg_dtype(fixed([[1.0]], [1.0], params=[("lower", True), ("trans", 0),
                                                           ("unit_diagonal", False)]),
                              ("float16",)))
    .xfail(**JAX_TRIANGULAR_SINGULAR),
    Row("solve_triangular_illcond", _solve_triangular,
        square_systems(("triangular_ill",), rhs="tri", params=TRIANGULAR, batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL), signed_zeros=zero_signs_determined),
    Row("cho_solve", lambda c, b, lower: pt.linalg.cho_solve((c, lower), b),
        square_systems(("factor",), rhs="cho", params=(LOWER,)), FLOATS, tol=SOLVE_TOL,
        signed_zeros=cho_signs_determined)
    .xfail(**zero_batch(True, lower=True)).xfail(**on_jax(zero_batch(True, lower=True)))
    .xfail(**jax_linalg_dtype(fixed([[1.0]], [1.0], params=[("lower", True)]), ("float16",))),
    Row("cho_solve_illcond", lambda c, b, lower: pt.linalg.cho_solve((c, lower), b),
        square_systems(("factor_ill",), rhs="cho", params=(LOWER,), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL), signed_zeros=cho_signs_determined),
    Row("solve", _solve("gen"), square_systems(("general", "singular"), rhs="gen",
                                               params=(LOWER,)), FLOATS, tol=SOLVE_TOL,
        signed_zeros=zero_signs_determined)
    .xfail(**solve_singular_result(SINGULAR_VECTOR_RHS))
    .xfail(**zero_batch(True, lower=False))
    .xfail(**on_jax(zero_batch(True, lower=False), dtypes=FLOAT_PAIR))
    .xfail(**jax_singular_result(SINGULAR_VECTOR_RHS)),
    Row("solve_illcond", _solve("gen"),
        square_systems(("general_ill",), rhs="gen", params=(LOWER,), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL), signed_zeros=zero_signs_determined),
    Row("solve_sym", _solve("sym"), square_systems(("symmetric", "symmetric_singular"),
                                                   rhs="sym", params=(LOWER,)),
        FLOATS, tol=SOLVE_TOL, signed_zeros=one_by_one)
    .xfail(**solve_singular_result(SINGULAR_VECTOR_RHS))
    .xfail(**zero_batch(True, lower=False))
    .xfail(**on_jax(zero_batch(True, lower=False), dtypes=FLOAT_PAIR))
    .xfail(**jax_singular_result(SINGULAR_VECTOR_RHS)).xfail(**JAX_SOLVE_SYM_BOTH_TRIANGLES),
    Row("solve_pos", _solve("pos"), square_systems(("spd", "not_pd", "singular_pd"), rhs="sym",
                                                   params=(LOWER,)), FLOATS, tol=SOLVE_TOL,
        signed_zeros=zero_signs_determined)
    .xfail(**solve_singular_result(NOT_PD_VECTOR_RHS))
    .xfail(**zero_batch(True, lower=False))
    .xfail(**POS_1X1).xfail(**on_jax(POS_1X1, dtypes=FLOAT_PAIR, versions="pytensor>=3"))
    .xfail(backends=("pytensor-c-opt", "pytensor-numba-opt", "onnxruntime-rewritten"),
           blame=Blame.PYTENSOR, versions="pytensor>=3", cause="psd-solve-cholesky-lower",
           reason="the default rewrites solve assume_a='pos', lower=False through a Cholesky "
                  "of a's lower triangle, not the upper one asked for",
           when=reads_other_triangle,
           example=fixed([[2.0, 1.0], [5.0, 2.0]], [[1.0], [1.0]], params=[("lower", False)]))
    .xfail(**on_jax(zero_batch(True, lower=False), dtypes=FLOAT_PAIR))
    .xfail(**jax_singular_result(NOT_PD_VECTOR_RHS)),
    Row("inv", pt.linalg.inv, square_systems(("general", "singular")), FLOATS, tol=SOLVE_TOL,
        signed_zeros=one_by_one)
    .xfail(**INV_SINGULAR).xfail(**no_float16("MatrixInverse"))
    .xfail(backends=JAX_BACKENDS, dtypes=FLOAT_PAIR, blame=Blame.PYTENSOR,
           cause="jax-inv-singular",
           reason="JAX's inv of a singular matrix returns inf or nan where numpy raises "
                  "LinAlgError", match="but pytensor-py raised LinAlgError",
           example=fixed([[0.0]])),
    Row("inv_illcond", pt.linalg.inv, square_systems(("general_ill",), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL, power=2), signed_zeros=one_by_one),
]
