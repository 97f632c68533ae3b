"""Softmax family and sorting."""

from __future__ import annotations

import math

import numpy as np
import pytensor
from hypothesis import strategies as st
from pytensor.tensor.sort import argsort, sort
from pytensor.tensor.special import log_softmax, softmax

from conformance import versions
from conformance.jax_records import dtype_differs, int_to_float32, on_jax
from conformance.registries.reductions import axis_cases, c_0d, ort131_uint32
from conformance.registry import (
    C_BACKENDS,
    JAX_BACKENDS,
    NOT_REFERENCE,
    NUMBA_BACKENDS,
    ORT_BACKENDS,
    REWRITTEN_ONNX,
    Blame,
    Case,
    Composes,
    Row,
    Tol,
    fixed_in,
)
from conformance.strategies import ANY, Domain, arrays, dtypes, fixed
from conformance.strategies.composing import same_or_flat_shape, same_shape, single_axis_params

ONNX_BACKENDS = (*ORT_BACKENDS, "onnx-reference")
NUMERIC, FLOATS = dtypes.NUMERIC, dtypes.FLOATS

# PyTensor 2.38's softmax takes one axis or None; a tuple of axes came with 3.0
SOFTMAX_LAYOUTS = ((0, None), (1, -1), (2, 0), (2, None),
                   *([(3, (0, 2))] if versions.holds("pytensor>=3") else []))
SORT_LAYOUTS = ((1, -1), (1, None), (2, 0), (2, None), (3, 1))

# float16: PyTensor rounds exp, the float32 sum and the quotient to float16 separately;
# ONNX Runtime's Softmax keeps float32 inside. Two float16 ulps apart, not one.
SOFTMAX_TOL = {"float16": Tol(rtol=2e-3, atol=1e-3)}

# The inner max of a 64-bit integer softmax is PyTensor's C max, which goes through double:
# a max that rounds up makes x - max(x) wrap. The uint64 example stays in range (2**62 + 1023
# becomes 2**62 + 1024): uint64's top, converted back from 2**64, came out right on an AVX-512
# CPU. int64's top becomes 2**63, which x86 converts back to INT64_MIN.
INT64_MAX_ROUNDS = {
    "backends": C_BACKENDS, "dtypes": ("int64", "uint64"), "blame": Blame.PYTENSOR,
    "reason": "softmax's inner C max takes 64-bit integers through double, so values near the "
              "top wrap",
    "match": "abs err", "when": lambda case: bool((abs(case.values[0] / 2**53) >= 1).any()),
    "example": lambda d: fixed([np.iinfo(d).max, -1] if d == "int64" else [2**62 + 1023, 0],
                               params=[("axis", -1)])(d),
    "versions": "pytensor>=3",  # 2.38: the converter refuses integer Softmax
    "cause": "maximum-minimum-c-double",
}
# The softmax of a length-0 axis is empty (what ONNX returns), but PyTensor's inner graph
# takes the axis' max first, which has no identity: numpy (float16) and C both raise.
EMPTY_AXIS = {
    "backends": ONNX_BACKENDS, "blame": Blame.PYTENSOR,
    "reason": "PyTensor's softmax raises on a length-0 axis (its max has no identity) where "
              "the result is simply empty, as ONNX returns it",
    "match": "pytensor-py raised ValueError: (zero-size array|Input of CAReduce)",
    "when": lambda case: any(v.size == 0 for v in case.values),
}
# Numba returns the empty result on 3.x; on 2.38 its float kernels raise as Python's code
# does on a 1-d input only, and return it empty from 2-d on (measured on both backends)
EMPTY_AXIS_NUMBA = {**EMPTY_AXIS, "backends": NUMBA_BACKENDS, "versions": "pytensor>=3"}
EMPTY_2D_NUMBA_238 = {**EMPTY_AXIS, "backends": NUMBA_BACKENDS, "versions": "pytensor<3",
                      "dtypes": ("float32", "float64"),
                      "when": lambda case: any(v.size == 0 and v.ndim >= 2 for v in case.values)}
# Run without rewrites, as the C backend runs every graph, softmax's inner max meets the C
# code generation bug of a 0-d Max (3.x only: 2.38's Softmax is a C op of its own).
C_ZERO_D = {**c_0d("softmax's inner max"), "versions": "pytensor>=3"}
# ...and so does the rewritten graph from 3.3 on, whose rewrites no longer fold a 0-d softmax
C_ZERO_D_OPT = {**c_0d("the rewritten softmax's inner max (kept from 3.3 on)",
                      ("pytensor-c-opt",)), "versions": "pytensor>=3.3"}
# The default rewrites fold a 0-d softmax's x - max(x) to 0 (3.x: 2.38's Softmax is an op).
ZERO_D_FOLD = {
    "backends": ("pytensor-c-opt",), "dtypes": dtypes.FLOATS, "blame": Blame.PYTENSOR,
    "reason": "0-d softmax: the default rewrites fold x - max(x) to 0, so inf/nan give 1 where "
              "the graph gives nan (inf - inf)",
    "match": r"out=(1\.0|-0\.0) but pytensor-py=nan",
    "when": lambda case: case.values[-1].ndim == 0,
    "example": fixed(np.inf, params=[("axis", None)]), "versions": "pytensor>=3",
}
# PyTensor 3's Numba Softmax and LogSoftmax of a 0-d operand skip x - max(x) as well.
NUMBA_ZERO_D_NONFINITE = {
    "backends": NUMBA_BACKENDS, "dtypes": dtypes.FLOATS, "blame": Blame.PYTENSOR,
    "cause": "numba-softmax-0d-nonfinite", "versions": "pytensor>=3",
    "reason": "Numba's 0-d softmax and log_softmax of inf or nan are 1 and a zero (-0.0; "
              "+0.0 from 3.3 on), where the graph's x - max(x) gives nan",
    "match": r"out=(1\.0|-?0\.0) but pytensor-py=nan",
    "when": lambda case: case.values[0].ndim == 0 and not np.isfinite(case.values[0]).all(),
    "example": fixed(np.inf, params=[("axis", None)]),
}
# ...and so does its gradient, through that softmax of 1 (dy - dy * 1 is 0).
NUMBA_GRAD_ZERO_D_NONFINITE = {
    **NUMBA_ZERO_D_NONFINITE,
    "reason": "Numba's 0-d softmax gradient at an inf or nan x is 0 (its softmax there is 1), "
              "where the graph's x - max(x) gives nan",
    "match": r"out=-?0\.0 but pytensor-py=nan",
    "when": lambda case: case.values[1].ndim == 0 and not np.isfinite(case.values[1]).all(),
    "example": fixed(1.0, np.inf, params=[("axis", None)]),
}
LOG_ZERO_D_FOLD = {
    "backends": ("pytensor-c-opt",), "dtypes": dtypes.FLOATS, "blame": Blame.PYTENSOR,
    "reason": "0-d log_softmax: the default rewrites fold it to -0.0; "
              "x - max(x) - log(sum(exp(x - max(x)))) is +0.0",
    "match": r"=-0\.0 but pytensor-py=0\.0 \(sign of zero", "versions": "pytensor>=3",
    "when": lambda case: case.values[0].ndim == 0,
    "example": fixed(0.0, params=[("axis", None)]),
}
# PyTensor 2.38 only: its C Softmax and LogSoftmax (not 3.x's inner graphs) fail on any
# size-0 input, and its C Softmax refuses integer input outright.
C_EMPTY_238 = {
    "backends": C_BACKENDS, "dtypes": ("float32", "float64"), "blame": Blame.PYTENSOR,
    "versions": "pytensor<3", "match": r"MemoryError: failed to create (Log)?Softmax iterator",
    "reason": "PyTensor 2.38's C (Log)Softmax raises MemoryError on a size-0 input",
    "when": lambda case: any(v.size == 0 for v in case.values),
    "example": fixed([[]], params=[("axis", 0)]),
}
C_INT_238 = {
    "backends": C_BACKENDS, "dtypes": dtypes.INTS, "blame": Blame.PYTENSOR,
    "versions": "pytensor<3", "match": "TypeError: not a float",
    "reason": "PyTensor 2.38's C Softmax raises 'not a float' on integer input",
    "example": fixed([1, 2], params=[("axis", -1)]),
}
# 2.38's Python LogSoftmax makes the element beside a +inf -inf; its C code, 3.x and ONNX
# give nan. C has no float16 LogSoftmax and runs the Python code there, and ONNX Runtime's
# float64 LogSoftmax gives -inf too (ORT_LOG_SOFTMAX_INF): both agree with it, sharing the fault.
LOG_SOFTMAX_INF_238 = {
    "backends": NOT_REFERENCE, "dtypes": dtypes.FLOATS, "blame": Blame.PYTENSOR,
    "versions": "pytensor<3", "match": r"=nan but pytensor-py=-inf",
    "reason": "PyTensor 2.38's LogSoftmax gives -inf, not nan, beside a +inf (3.x gives nan, "
              "as ONNX's log(softmax(x)) does)",
    "example": fixed([0.0, np.inf], params=[("axis", -1)]),
}
# PyTensor 2.38's Numba Softmax of integers is a kernel of its own (3.x builds softmax from
# elemwise ops and a float Max, which Numba compiles as it does the others): it returns an
# empty matrix where the Python code raises on a length-0 axis, does not compile a 0-d input,
# gives float32 for 8-bit input (Python: float16; both under an int8 output type), does not
# normalise along an axis, and does not wrap x - max(x) in the input dtype as Python does.
NUMBA_INT_238 = {"backends": NUMBA_BACKENDS, "dtypes": dtypes.INTS, "blame": Blame.PYTENSOR,
                 "versions": "pytensor<3"}
NUMBA_INT_EMPTY_238 = {**EMPTY_AXIS, **NUMBA_INT_238,  # a vector raises as in Python
                       "example": fixed(np.zeros((0, 2)), params=[("axis", 0)])}
NUMBA_0D_238 = {
    **NUMBA_INT_238, "dtypes": None, "cause": "numba-softmax-0d", "match": "raised TypingError",
    "reason": "PyTensor 2.38's Numba Softmax, LogSoftmax and SoftmaxGrad cannot compile a 0-d "
              "input (TypingError)",
    "when": lambda case: case.values[0].ndim == 0,
    "example": fixed(3, params=[("axis", None)]),
}
NUMBA_INT8_DTYPE_238 = {
    **NUMBA_INT_238, "dtypes": ("int8", "uint8"), "cause": "numba-softmax-int8-float32",
    "match": r"out\.dtype=float32, but pytensor-py gives float16",
    "reason": "PyTensor 2.38's Numba Softmax of 8-bit integers returns float32 where its "
              "Python code returns float16 (the output type says int8)",
    "example": fixed([1, 2], params=[("axis", -1)]),
}
# 8-bit input is left out of the value records: its float32 output fails first, on the dtype.
WIDER_INTS = tuple(d for d in dtypes.INTS if not d.endswith("8"))


def along_an_axis(case: Case) -> bool:
    """A softmax of a matrix or more along given axes (not over all elements)."""
    return case.values[0].ndim >= 2 and dict(case.params).get("axis") is not None


def max_difference_wraps(case: Case) -> bool:
    """Whether x - max(x) wraps in x's integer dtype on some slice softmax normalises."""
    x = case.values[0]
    if x.size == 0:
        return False
    axis = dict(case.params).get("axis")
    wide = x.astype(object)
    span = np.asarray(wide.max(axis=axis) - wide.min(axis=axis))
    return bool((span > -int(np.iinfo(x.dtype).min) if x.dtype.kind == "i" else span > 0).any())


NUMBA_INT_UNNORMALISED_238 = {
    **NUMBA_INT_238, "dtypes": WIDER_INTS, "cause": "numba-softmax-int-axis-unnormalised",
    "match": r"=\S+ but pytensor-py=", "when": along_an_axis,
    "reason": "PyTensor 2.38's Numba Softmax of an integer matrix along an axis does not "
              "divide by the sum (softmax([[0, 1]], axis=-1) is [[0.37, 1.0]])",
    "example": fixed([[0, 1]], params=[("axis", -1)]),
}
NUMBA_INT_WRAP_238 = {
    **NUMBA_INT_238, "dtypes": ("int16", "int32", "uint16", "uint32"),
    "cause": "numba-softmax-int-no-wrap", "match": r"=\S+ but pytensor-py=",
    "when": max_difference_wraps,
    "reason": "PyTensor 2.38's Numba Softmax of 16/32-bit integers computes x - max(x) "
              "wider than the input dtype, where its Python code wraps",
    "example": lambda d: fixed([np.iinfo(d).max, np.iinfo(d).min], params=[("axis", -1)])(d),
}


REFERENCE_LOG_OF_SOFTMAX = {
    "backends": ("onnx-reference",), "dtypes": dtypes.FLOATS,
    "blame": Blame.ONNX_REFERENCE, "match": "abs err",
    "reason": "the reference evaluator's LogSoftmax is log(softmax(x)), losing the far tail",
    "example": fixed([0.0, 745.0], params=[("axis", -1)]),
}
ORT_LOG_SOFTMAX_INF = {
    "backends": ORT_BACKENDS, "dtypes": ("float64",), "blame": Blame.ONNXRUNTIME,
    "reason": "float64 LogSoftmax gives -inf, not nan, beside a +inf (inf - max(x) is nan)",
    "match": r"=-inf but pytensor-py=nan", "example": fixed([0.0, np.inf], params=[("axis", -1)]),
    "versions": "pytensor>=3",  # PyTensor 2.38 gives -inf as well (LOG_SOFTMAX_INF_238)
}


def softmax_grad(dy, x, axis):
    """The gradient of softmax: SoftmaxGrad in PyTensor 2, its elementwise pullback in 3."""
    sm = softmax(x, axis=axis)
    return pytensor.grad(None, x, known_grads={sm: dy})


# The gradient is softmax * (dy - sum(dy * softmax)): for equal dy the difference cancels to
# 0 with a rounding error near eps * max|dy|, which depends on the order of the sum and not on
# any backend. |dy| <= 1 keeps that error within the row's tolerance; x keeps every value.
GRAD_DOMAIN = Domain(-1, 1)


def grad_cases(dtype: str):
    @st.composite
    def cases(draw):
        rank, axis = draw(st.sampled_from(SOFTMAX_LAYOUTS))
        shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
        dy, x = draw(arrays(dtype, shape, GRAD_DOMAIN)), draw(arrays(dtype, shape, ANY))
        return Case((dy, x), ((None,) * rank,) * 2, (("axis", axis),))

    return cases()


def one_term_sums(case) -> bool:
    """Whether the gradient's sum has at most one term. A longer sum cancels against dy to
    a residual of rounding; where that residual, or softmax times it, underflows to zero, the
    zero's sign follows the order a backend sums and multiplies in (PyTensor's rewrites
    reorder it) and the precision it computes in (ONNX Runtime computes float16 in float32),
    so zero signs are judged on one-term sums only."""
    dy, axis = case.values[0], dict(case.params)["axis"]
    axes = range(dy.ndim) if axis is None else np.atleast_1d(axis)
    return math.prod(dy.shape[a] for a in axes) <= 1


def has_ties(case) -> bool:
    """True when some slice along the sort axis holds equal values (nan counts as equal)."""
    (x,), axis = case.values, dict(case.params)["axis"]
    x = x.ravel() if axis is None else np.moveaxis(x, axis, -1)
    s = np.sort(x, axis=-1)
    same = (s[..., 1:] == s[..., :-1]) | (np.isnan(s[..., 1:]) & np.isnan(s[..., :-1]))
    return bool(same.any())


QUICKSORT_TIES = {
    "backends": ONNX_BACKENDS, "blame": Blame.CONVERTER, "when": has_ties,
    "reason": "semantic gap: kind='quicksort' orders ties as numpy's unstable SIMD sort "
              "happens to; the converter's TopK order is the stable one",
    "match": "exact match required",
    "example": fixed([1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0] * 2,
                     params=[("axis", -1)]),
    # numpy's quicksort is x86-simd-sort where the CPU has AVX2 or AVX-512, introsort elsewhere
    "cpu": "x86 CPUs where numpy's argsort runs x86-simd-sort (AVX2, AVX-512)",
}
# Numba's own quicksort orders ties as neither numpy's SIMD sort nor a stable sort does.
NUMBA_QUICKSORT_TIES = {
    **QUICKSORT_TIES, "backends": NUMBA_BACKENDS, "blame": Blame.PYTENSOR,
    "cause": "numba-argsort-ties",
    "reason": "kind='quicksort' orders ties as the implementation happens to: Numba's "
              "quicksort and numpy's (PyTensor's Python and C) disagree",
}
ZERO_PATTERN = np.array([1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0] * 2)
QUICKSORT_ZEROS = {
    "backends": ONNX_BACKENDS, "dtypes": dtypes.FLOATS, "blame": Blame.CONVERTER,
    "when": has_ties,
    "reason": "semantic gap: kind='quicksort' orders -0.0 and 0.0 (equal) as numpy's unstable "
              "SIMD sort happens to; the converter's TopK keeps their order",
    "match": r"\(sign of zero differs\)",
    "example": fixed(np.where(ZERO_PATTERN == 1, 0.0, -0.0), params=[("axis", -1)]),
    "cpu": QUICKSORT_TIES["cpu"],
}

# In random graphs: one axis or None (PyTensor 2.38 takes no tuple); float32/float64 inputs
# of rank >= 1 with elements (the records of empty and 0-d inputs stay out), finite and
# within +-30 (the reference evaluator's log(softmax) loses the far tail; nan and inf are
# the records' business).
SOFTMAX_GRAPHS = Composes(domains=(Domain(-30, 30, allow_nan=False, allow_inf=False),),
                          params=single_axis_params, shape=same_shape,
                          dtypes=("float32", "float64"),
                          accepts=lambda shape: len(shape) > 0 and all(shape))
# dy and x of one shape; dy in [-1, 1], so that dy - sum(dy * softmax(x)), whose error
# (summation order, an ulp of exp) scales with |dy|, stays within the float32 tolerance
# where it cancels.
SOFTMAX_GRAD_GRAPHS = Composes(domains=(Domain(-1, 1, allow_nan=False),
                                        *SOFTMAX_GRAPHS.domains), params=single_axis_params,
                               shape=same_shape, dtypes=SOFTMAX_GRAPHS.dtypes,
                               accepts=SOFTMAX_GRAPHS.accepts, pairs=lambda a, b: a == b)
# Random graphs judge no zero signs: floats compose despite QUICKSORT_ZEROS.
SORTS = Composes(domains=(ANY,), params=single_axis_params, shape=same_or_flat_shape,
                 accepts=lambda shape: len(shape) > 0, dtypes=dtypes.ALL)

ROWS = [
    Row("softmax", lambda x, axis: softmax(x, axis=axis),
        axis_cases(layouts=SOFTMAX_LAYOUTS), NUMERIC, tol=SOFTMAX_TOL,
        compose=SOFTMAX_GRAPHS, grid=(ANY,))
    .xfail(**EMPTY_AXIS, dtypes=dtypes.FLOATS, example=fixed([], params=[("axis", -1)]))
    # on 2.38 the converter refuses integer Softmax, and a refusal is not a divergence
    .xfail(**EMPTY_AXIS, dtypes=dtypes.INTS, versions="pytensor>=3",
           example=fixed([], params=[("axis", -1)]))
    .xfail(**C_ZERO_D).xfail(**C_ZERO_D_OPT).xfail(**fixed_in(ZERO_D_FOLD, "3.3"))
    .xfail(**INT64_MAX_ROUNDS)
    .xfail(**C_EMPTY_238).xfail(**C_INT_238)
    .xfail(**ort131_uint32("softmax's inner max",
                           fixed([2**32 - 1, 0, 0, 0], params=[("axis", -1)]), match="abs err"))
    .xfail(backends=ONNX_BACKENDS, dtypes=dtypes.INTS, blame=Blame.PYTENSOR, versions="pytensor<3",
           reason="PyTensor 2.38's Softmax declares an integer output for integer input but "
                  "returns floats, so the converter refuses it",
           match="UnsupportedOpError", example=fixed([1, 2], params=[("axis", -1)]))
    .xfail(**on_jax(EMPTY_AXIS), example=fixed([], params=[("axis", -1)]))
    .xfail(**NUMBA_INT_EMPTY_238).xfail(**NUMBA_0D_238)
    .xfail(**EMPTY_2D_NUMBA_238, example=fixed(np.zeros((0, 2)), params=[("axis", 0)]))
    .xfail(**fixed_in(NUMBA_ZERO_D_NONFINITE, "3.3")).xfail(**NUMBA_INT8_DTYPE_238)
    .xfail(**NUMBA_INT_UNNORMALISED_238).xfail(**NUMBA_INT_WRAP_238)
    .xfail(**int_to_float32(fixed([1, 2], params=[("axis", -1)])))
    .xfail(backends=JAX_BACKENDS, dtypes=("int8", "int16", "uint64"), blame=Blame.PYTENSOR,
           cause="jax-softmax-int",
           reason="jax.nn.softmax of integers starts its max from -inf cast to the integer "
                  "dtype (0 for int8/int16, huge for uint64): negative int8/int16 rows whose "
                  "exp underflows, and any uint64 row, give nan",
           match=r"=nan but pytensor-py=",
           when=lambda case: case.values[0].dtype == np.uint64 or bool(
               (case.values[0] < 0).any()),
           example=lambda d: fixed([0, 0] if d == "uint64" else [-88, -88],
                                   params=[("axis", -1)])(d))
    .xfail(**EMPTY_AXIS_NUMBA, example=fixed([], params=[("axis", -1)])),
    # Integer inputs convert too, but PyTensor's own C backend takes minutes on the first
    # int8 LogSoftmax call (its inner graph compiles in the default mode), so floats only.
    Row("log_softmax", lambda x, axis: log_softmax(x, axis=axis),
        axis_cases(layouts=SOFTMAX_LAYOUTS), FLOATS, tol=SOFTMAX_TOL,
        compose=SOFTMAX_GRAPHS, grid=(ANY,))
    .xfail(**EMPTY_AXIS, example=fixed([], params=[("axis", -1)])).xfail(**C_ZERO_D)
    .xfail(**C_ZERO_D_OPT)
    # 3.3's rewrites no longer fold a 0-d log_softmax: its C code raises there (C_ZERO_D)
    .xfail(**fixed_in(ZERO_D_FOLD, "3.3")).xfail(**fixed_in(LOG_ZERO_D_FOLD, "3.3"))
    .xfail(**REFERENCE_LOG_OF_SOFTMAX)
    # 3.3's rewritten graphs (the default mode's, the ONNX mode's) give nan there
    .xfail_apart(ORT_LOG_SOFTMAX_INF, backends=REWRITTEN_ONNX, before="3.3")
    .xfail(**C_EMPTY_238)
    .xfail_apart({**LOG_SOFTMAX_INF_238, "dtypes": ("float16", "float32")},
                 backends=C_BACKENDS, before=None, dtypes=("float16",), shared=True)
    .xfail_apart({**LOG_SOFTMAX_INF_238, "dtypes": ("float64",)}, backends=ORT_BACKENDS,
                 before=None, shared=True)
    .xfail(**NUMBA_0D_238)
    # 3.3's Numba log_softmax keeps the graph's nan unrewritten; its rewrites still fold it
    .xfail(**fixed_in(NUMBA_ZERO_D_NONFINITE, "3.3"))
    .xfail(**{**NUMBA_ZERO_D_NONFINITE, "backends": ("pytensor-numba-opt",),
              "versions": "pytensor>=3.3"})
    .xfail_apart(dict(backends=ORT_BACKENDS, dtypes=("float64",), blame=Blame.ONNXRUNTIME,
                      reason="float64 LogSoftmax of a vector holding nan gives numbers beside "
                             "the nan (log_softmax([0, nan]) = [46.05, nan]); float32 gives nan "
                             "throughout", match=r"but pytensor-py=nan",
                      when=lambda case: bool(np.isnan(case.values[0]).any()),
                      example=fixed([0.0, np.nan], params=[("axis", -1)])),
                 backends=REWRITTEN_ONNX, before="3.3")
    .xfail(**on_jax(EMPTY_AXIS), example=fixed([], params=[("axis", -1)]))
    .xfail(**EMPTY_AXIS_NUMBA, example=fixed([], params=[("axis", -1)]))
    .xfail(**EMPTY_2D_NUMBA_238, example=fixed(np.zeros((0, 2)), params=[("axis", 0)])),
    Row("softmax_grad", softmax_grad, grad_cases, FLOATS, tol=SOFTMAX_TOL,
        compose=SOFTMAX_GRAD_GRAPHS, signed_zeros=one_term_sums, grid=(GRAD_DOMAIN, ANY))
    .xfail(**EMPTY_AXIS, example=fixed([], [], params=[("axis", -1)]))
    .xfail(**{**C_ZERO_D, "example": fixed(1.0, 1.0, params=[("axis", None)])})
    .xfail(**{**C_ZERO_D_OPT, "example": fixed(1.0, 1.0, params=[("axis", None)])})
    .xfail(**fixed_in(NUMBA_GRAD_ZERO_D_NONFINITE, "3.3"))
    .xfail(**{**NUMBA_0D_238, "example": fixed(1.0, 1.0, params=[("axis", None)])})
    .xfail(backends=("pytensor-c-opt", *REWRITTEN_ONNX), blame=Blame.PYTENSOR,
           reason="0-d softmax gradient: the default rewrites fold it to +0.0, where "
                  "dy * sm - sm * sum(dy * sm) keeps dy's -0.0 (and gives nan for inf)",
           match=r"=0\.0 but pytensor-py=(-0\.0 \(sign of zero|nan)", versions="pytensor>=3",
           when=lambda case: case.values[0].ndim == 0,
           example=fixed(-0.0, 0.0, params=[("axis", None)]))
    .xfail(**{**C_EMPTY_238, "example": fixed([[]], [[]], params=[("axis", 0)])})
    .xfail(**on_jax(EMPTY_AXIS), example=fixed([], [], params=[("axis", -1)]))
    .xfail(**dtype_differs(fixed(1.0, 1.0, params=[("axis", None)]), ("float16", "float32"),
                           cause="jax-softmax-grad-dtype",
                           reason="JAX's SoftmaxGrad of float16 or float32 comes out wider "
                                  "than the graph declares"))
    .xfail(**EMPTY_AXIS_NUMBA, example=fixed([], [], params=[("axis", -1)]))
    .xfail(**EMPTY_2D_NUMBA_238,
           example=fixed(np.zeros((0, 2)), np.zeros((0, 2)), params=[("axis", 0)])),
    Row("sort", lambda x, axis: sort(x, axis=axis), axis_cases(layouts=SORT_LAYOUTS),
        dtypes.ALL,
        compose=SORTS, grid=(ANY,))
    .xfail(**QUICKSORT_ZEROS),
    Row("argsort", lambda x, axis: argsort(x, axis=axis), axis_cases(layouts=SORT_LAYOUTS),
        dtypes.ALL, grid=(ANY,))
    .xfail(**QUICKSORT_TIES).xfail(**NUMBA_QUICKSORT_TIES),
    Row("argsort_stable", lambda x, axis: argsort(x, axis=axis, kind="stable"),
        axis_cases(layouts=SORT_LAYOUTS), dtypes.ALL,
        compose=SORTS, grid=(ANY,)),
]
