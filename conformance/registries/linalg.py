"""Linear algebra: diagonals, determinants, factorisations, solvers and inverses (the
products are in ``blas``).

Matrices are drawn by ``conformance.strategies.matrices``: well-conditioned, singular and
ill-conditioned systems, each with the tolerance its condition number allows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from hypothesis import strategies as st
from pytensor.tensor import basic as ptb
from pytensor.tensor.blockwise import Blockwise

from conformance.jax_records import dtype_differs, on_jax
from conformance.registries.blas import SMALL_INTS
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
    Unit,
    alloc_diagonal_operands,
    diagonal_operands,
    drawn_from,
    square_operands,
)
from conformance.strategies.values import small_magnitudes
from converter import compat

SLogDet = compat.lookup("SLogDet")

FLOATS, ALL = dtypes.FLOATS, dtypes.ALL
FLOAT_PAIR = ("float32", "float64")


# -- factorisations and solvers ------------------------------------------------------
# (the matrices themselves are drawn by conformance.strategies.matrices)
def lapack_singular(case) -> bool:
    """getrf meets an exact zero pivot (np.linalg.inv raises): a zero row, or a zero that
    elimination leaves (of subnormal entries, say)."""
    try:
        np.linalg.inv(case.values[0])
    except np.linalg.LinAlgError:
        return True
    return False


def empty_batch(case) -> bool:
    return any(0 in v.shape[:-2] for v in case.values)


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


# PyTensor 2.38 converts to a float16 ONNX Det, which the reference evaluator (numpy) cannot
# compute either: it raises with PyTensor there. From 3 on the graph casts to float32 first.
DET_FLOAT16_APART = {"backends": ("onnx-reference",), "before": None, "since": "3"}


def numba_nonfinite(op: str) -> dict:
    """The LU grids hold no nan or inf (LU_FINITE): the example shows it."""
    return {"backends": NUMBA_BACKENDS, "dtypes": FLOAT_PAIR, "blame": Blame.PYTENSOR,
            "cause": "numba-linalg-nonfinite",
            "reason": f"{op}'s Numba kernel (numba's numpy.linalg) raises LinAlgError on a nan "
                      "or inf entry where perform returns nan or inf",
            "match": r"pytensor-numba(-opt)? raised LinAlgError: Array must not contain infs",
            "when": lambda case: not np.isfinite(case.values[0]).all(),
            "example": fixed([[np.inf]])}


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


# numpy's det is sign * exp(logdet), and a zero pivot (getrf) makes the sign +0.0
#: where the records of OpenBLAS's LAPACK hold: a machine whose numpy and scipy link another
#: LAPACK (Accelerate on macOS, MKL) shows them as "does not show here", not as a strict XPASS
OPENBLAS = "numpy's and scipy's wheels on Linux and Windows (their bundled OpenBLAS LAPACK)"


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


def rounding(roundings: int, magnitude: float) -> dict[str, Tol]:
    """Per-float-dtype tolerance for two results that are each within ``roundings * u *
    magnitude`` of the exact value, ``magnitude`` bounding the sum of |terms| a priori (a
    determinant's terms have signs: det(|A|) bounds nothing, its permanent would)."""
    return {d: Tol(atol=2 * roundings * magnitude * float(np.finfo(d).eps) / 2) for d in FLOATS}


def linalg_tol(roundings: float) -> dict[str, Tol]:
    """``roundings * u`` on the output's dtype (float16 input gives float32)."""
    return {d: Tol(atol=roundings * float(np.finfo(d).eps) / 2) for d in FLOAT_PAIR}


def ill_tol(tol: dict[str, Tol], power: int = 1) -> dict[str, Tol]:
    """``tol`` times the *_illcond rows' condition number ILL_COND (``power`` times)."""
    return {d: Tol(rtol=t.rtol * ILL_COND[d] ** power, atol=t.atol * ILL_COND[d] ** power)
            for d, t in tol.items()}


# -- special-value grids --------------------------------------------------------------
# A matrix whose structure the row is about (positive definite, triangular with its
# diagonal away from 0, a Cholesky factor, ill-conditioned) keeps it (None): special values
# there make an arbitrary matrix, which the plain rows' grids cover. Free operands take the
# special values in the range the factories draw, [-1, 1] with nan and +-inf: the
# tolerances rest on |x| about 1, which a 2.5 or the dtype's max would break.
UNIT = drawn_from("any")


@dataclass(frozen=True)
class NormalUnit(Unit):
    """:class:`Unit` without nan, infinities, subnormals and the ladder of small magnitudes
    (a matrix of them has a log|det| in the hundreds, whose rounding is more than the
    tolerances, resting on |x| about 1, allow)."""

    allow_nan: bool = False
    allow_inf: bool = False

    def contains(self, value, dtype) -> bool:
        subnormal = dtype.kind == "f" and 0 < abs(value) < np.finfo(dtype).tiny
        small = dtype.kind == "f" and float(value) in small_magnitudes(dtype)
        return not (subnormal or small) and super().contains(value, dtype)


# A matrix that LU factorises (det, slogdet, inv) takes finite normal values only. A nan
# (or one inf - inf makes) meets the pivot search, where nothing defines what comes out:
# LAPACK's idamax never picks a nan after a number, ONNX leaves ArgMax of nan unspecified,
# numpy's det is 0 once some pivot is exactly 0 whatever nan the others hold (of
# [[0, -0, 1], [-1, .5, -.5], [nan, inf, -inf]]: 0.0, the pivots' product nan). A subnormal
# has fewer bits than the rounding unit the tolerances count in (elimination among them
# leaves a last pivot of 1e-45 where other roundings leave 0); OpenBLAS's subnormal
# pivots, which tiny entries still make, are OPENBLAS_SUBNORMAL_PIVOT.
LU_FINITE = NormalUnit()


def det_entries(dtype: str):
    """det's grid domain: LU_FINITE, integers in [-1, 1] as square_operands draws them."""
    return LU_FINITE if np.dtype(dtype).kind == "f" else drawn_from(bounded=True)(dtype)


def meets_subnormal_pivot(case) -> bool:
    """LU with partial pivoting (getf2's, dividing by each pivot) meets a nonzero pivot
    below the smallest normal number."""
    a = np.array(case.values[0], dtype=np.result_type(case.values[0], np.float32))
    n, tiny = a.shape[-1], np.finfo(a.dtype).tiny
    with np.errstate(all="ignore"):
        for m in a.reshape(-1, n, n):
            for k in range(n):
                p = k + int(np.argmax(np.abs(m[k:, k])))
                m[[k, p]] = m[[p, k]]
                if 0 < abs(m[k, k]) < tiny:
                    return True
                if m[k, k] != 0:
                    m[k + 1:, k] /= m[k, k]
                    m[k + 1:, k + 1:] -= np.outer(m[k + 1:, k], m[k, k + 1:])
    return False


# the OpenBLAS in numpy's and scipy's wheels, whose getf2 tests a pivot against a threshold
# before dividing by it (cf. OpenMathLib/OpenBLAS#3924, #3980); reference LAPACK divides
OPENBLAS_SUBNORMAL_PIVOT = {
    "backends": ONNX_BACKENDS, "dtypes": ("float64",), "blame": Blame.PYTENSOR,
    "cause": "openblas-getf2-subnormal-pivot",
    "reason": "numpy's float64 LU (OpenBLAS getf2) leaves the multipliers of a subnormal pivot "
              "undivided: det([[d, 1], [d, 2]]) is 2d for d = 5e-324, not d",
    "when": meets_subnormal_pivot, "example": fixed([[5e-324, 1.0], [5e-324, 2.0]]),
    "cpu": OPENBLAS,
}
# det 2.2e-308 / 2 (its LU's second pivot): numpy's slogdet is (-1, -inf), inv nan and -inf
SUBNORMAL_PIVOT = fixed([[0.0, 0.0, 1.0], [-1.0, 0.5, -0.5],
                         [2.2250738585072014e-308, -2.2250738585072014e-308, 0.0]])
FLOAT32_TINY = float(np.finfo(np.float32).tiny)
#: the same matrix in float32: its LU's second pivot is float32's tiny / 2
SUBNORMAL_PIVOT_32 = fixed([[0.0, 0.0, 1.0], [-1.0, 0.5, -0.5],
                            [FLOAT32_TINY, -FLOAT32_TINY, 0.0]])
NUMBA_INV_SUBNORMAL_PIVOT = {
    **OPENBLAS_SUBNORMAL_PIVOT, "backends": NUMBA_BACKENDS, "dtypes": ("float32", "float64"),
    "example": lambda d: (SUBNORMAL_PIVOT_32 if d == "float32" else SUBNORMAL_PIVOT)(d),
    "reason": "Numba's inv (scipy's OpenBLAS getrf) calls a matrix singular whose LU meets a "
              "subnormal pivot, where numpy's returns values",
    "match": r"raised LinAlgError: Matrix is singular to machine precision",
}
NUMBA_DET_SUBNORMAL_PIVOT = {
    **OPENBLAS_SUBNORMAL_PIVOT, "backends": NUMBA_BACKENDS, "dtypes": ("float32",),
    "reason": "Numba's float32 det (scipy's OpenBLAS getrf) gives -0.0 where the LU meets a "
              "subnormal pivot; numpy's gives 5.9e-39 for this example",
    "match": "abs err", "example": SUBNORMAL_PIVOT_32,
}
NUMBA_SLOGDET_SUBNORMAL_PIVOT = {
    **OPENBLAS_SUBNORMAL_PIVOT, "backends": NUMBA_BACKENDS, "dtypes": ("float32",),
    "reason": "Numba's float32 slogdet (scipy's OpenBLAS getrf) gives (-1, -inf) where the LU "
              "meets a subnormal pivot; numpy's gives (1, -88.03) for this example",
    "match": "abs err", "example": SUBNORMAL_PIVOT_32,
}
#: JAX's LU (jaxlib's LAPACK kernels, scipy's OpenBLAS) gets slogdet right, inv wrong
#: otherwise than numpy
JAX_SUBNORMAL_PIVOT = on_jax(OPENBLAS_SUBNORMAL_PIVOT, example=SUBNORMAL_PIVOT)


LOWER = ("lower", (True, False))


INV_SINGULAR = {"backends": ONNX_BACKENDS, "blame": Blame.CONVERTER, "dtypes": FLOAT_PAIR,
                "reason": "semantic gap: np.linalg.inv raises on a singular matrix, ONNX cannot "
                          "raise and the model returns nan",
                "match": "pytensor-py raised LinAlgError", "when": lapack_singular,
                "example": fixed([[1.0, 0.0], [0.0, 0.0]])}


# Well-conditioned systems have |x| about 1, and LU, Cholesky and substitution are backward
# stable: two of them differ by about n * cond * u, which 64 u bounds (substitution is
# componentwise stable). A determinant has that relative error, log|det| that absolute one.
# The *_illcond rows scale it by ILL_COND, the inverse (entries up to ILL_COND) once more.
SOLVE_TOL = linalg_tol(MAX_N * 16)


DET_RTOL = {d: Tol(rtol=MAX_N * 16 * float(np.finfo(d).eps) / 2) for d in FLOAT_PAIR}


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
                         accepts=lambda shape: len(shape) >= 2), grid=(ANY,)),
    Row("alloc_diag", lambda v, offset, axis1, axis2: ptb.alloc_diag(v, offset, axis1, axis2),
        alloc_diagonal_operands, ALL,
        compose=Composes(domains=(ANY,), params=_alloc_diagonal_params,
                         shape=_alloc_diagonal_shape, accepts=lambda shape: 1 <= len(shape) <= 2),
        grid=(ANY,))
    .xfail(**dtype_differs(fixed([1], params=[("offset", 0), ("axis1", 0), ("axis2", 1)]),
                           ("int8", "int16", "int32", "uint8", "uint16", "uint32", "uint64",
                            "float16", "float32"), cause="jax-constant-dtype",
                           reason="JAX gets a 0-d constant as a Python scalar, so a fill of one "
                                  "takes JAX's default dtype (int64, float64)")),
    Row("det", pt.linalg.det, square_operands, ALL, tol=DET_TOL, grid=(det_entries,))
    .xfail(**numba_nonfinite("Det"))
    .xfail(backends=ONNX_BACKENDS, dtypes=SMALL_INTS, blame=Blame.PYTENSOR,
           reason="Det's output type is float32 for small ints but perform returns float64",
           match="dtype=float32, but pytensor-py gives float64", example=fixed([[1, 0], [0, 1]]),
           versions="pytensor>=3")
    .xfail_apart(no_float16("Det"), **DET_FLOAT16_APART)
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
    # random draws reach subnormal entries too; det's absolute tolerance takes 2d for d, so
    # its example is a singular one whose undivided multipliers make numpy's det -0.0
    .xfail(**{**OPENBLAS_SUBNORMAL_PIVOT, "example": fixed(np.full((3, 3), -2.2250738585e-313))})
    .xfail(**on_jax(no_float16("Det"))),
    Row("det_matrices", pt.linalg.det, square_systems(("general", "singular")), FLOATS,
        tol=DET_RTOL, grid=(LU_FINITE,))
    .xfail_apart(no_float16("Det"), **DET_FLOAT16_APART).xfail(**on_jax(no_float16("Det")))
    .xfail(**OPENBLAS_SUBNORMAL_PIVOT).xfail(**NUMBA_DET_SUBNORMAL_PIVOT)
    .xfail(**ORT_DET_ZERO),
    Row("det_illcond", pt.linalg.det, square_systems(("general_ill",), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(DET_RTOL))
    .xfail(backends=JAX_BACKENDS, dtypes=("float64",), blame=Blame.PYTENSOR,
           cause="jax-det-closed-form", match="abs err",
           reason="jax.numpy.linalg.det takes the cofactor formula for 2x2 and 3x3 matrices, "
                  "which loses cond * u relative accuracy more than an LU",
           when=lambda case: case.values[0].shape[-1] in (2, 3),
           example=fixed([[2.000009, 2.0, 2.0], [2.0, 2.000009, 2.0], [2.0, 2.0, 2.000009]])),
    Row("slogdet", lambda a: Blockwise(SLogDet())(a), square_systems(("general", "singular")),
        FLOATS, tol=SOLVE_TOL, grid=(LU_FINITE,)).xfail(**no_float16("SLogDet"))
    .xfail(**numba_nonfinite("SLogDet")).xfail(**OPENBLAS_SUBNORMAL_PIVOT)
    .xfail(**NUMBA_SLOGDET_SUBNORMAL_PIVOT).xfail(**JAX_SUBNORMAL_PIVOT)
    .xfail(**on_jax(no_float16("SLogDet"))),
    Row("slogdet_illcond", lambda a: Blockwise(SLogDet())(a),
        square_systems(("general_ill",), batches=[()]), FLOAT_PAIR, tol=ill_tol(SOLVE_TOL)),
    Row("cholesky", lambda a, lower: pt.linalg.cholesky(a, lower=lower),
        square_systems(("spd", "not_pd", "singular_pd", "nonfinite_pd"), params=(LOWER,)),
        FLOATS, tol=SOLVE_TOL, signed_zeros=zero_signs_determined, grid=(UNIT,))
    .xfail(**zero_batch(False, lower=True))
    .xfail(**on_jax(zero_batch(False, lower=True), dtypes=FLOAT_PAIR)).xfail(**JAX_CHOLESKY_NAN)
    .xfail(backends=ONNX_BACKENDS, blame=Blame.PYTENSOR,
           reason="LAPACK's potrf (OpenBLAS, in scipy's wheels) scales a column by 1/pivot with "
                  "scal, which writes +0.0 for a 0 factor: -1 / inf gives +0.0, not -0.0",
           cpu=OPENBLAS,
           match=r"=-0\.0 but pytensor-py=0\.0 \(sign of zero differs\)",
           when=lambda case: np.isposinf(np.diagonal(case.values[0], 0, -2, -1)).any(),
           example=fixed([[np.inf, -1.0], [-1.0, 3.0]], params=[("lower", True)])),
    Row("cholesky_illcond", lambda a, lower: pt.linalg.cholesky(a, lower=lower),
        square_systems(("spd_ill",), params=(LOWER,), batches=[()]), FLOAT_PAIR,
        tol=ill_tol(SOLVE_TOL), signed_zeros=zero_signs_determined),
    Row("inv", pt.linalg.inv, square_systems(("general", "singular")), FLOATS, tol=SOLVE_TOL,
        signed_zeros=one_by_one, grid=(LU_FINITE,))
    .xfail(**INV_SINGULAR).xfail(**no_float16("MatrixInverse"))
    .xfail(**numba_nonfinite("MatrixInverse")).xfail(**OPENBLAS_SUBNORMAL_PIVOT)
    .xfail(**NUMBA_INV_SUBNORMAL_PIVOT).xfail(**JAX_SUBNORMAL_PIVOT)
    .xfail(backends=JAX_BACKENDS, dtypes=FLOAT_PAIR, blame=Blame.PYTENSOR,
           cause="jax-inv-singular",
           reason="JAX's inv of a singular matrix returns inf or nan where numpy raises "
                  "LinAlgError", match="but pytensor-py raised LinAlgError",
           example=fixed([[0.0]])),
    Row("inv_illcond", pt.linalg.inv, square_systems(("general_ill",), batches=[()]),
        FLOAT_PAIR, tol=ill_tol(SOLVE_TOL, power=2), signed_zeros=one_by_one),
]
