"""Control flow: ``pytensor.scan`` (sequences, non-sequences, recurrences of one and
several taps, per-step outputs, while loops, nested scans, gradients, shared variables)
and ``ifelse`` (several outputs, branches of different shapes, conditions of any dtype).

Step counts and sequence lengths are drawn from 0 up, so zero and one step are common.

Gradients (``pytensor.grad`` through a scan) are rows of their own: their backward scans
carry mit-mot outputs, which PyTensor's Scan runs under a VM linker only, so the Python
reference runs those inner graphs by a VM of Python thunks (``conformance/compile/innergraphs.py``).
A shared variable read by a step is a row too: the converter makes it an initializer.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from hypothesis import strategies as st
from pytensor.scan.utils import until

from conformance.jax_records import dtype_differs
from conformance.registry import NUMBA_BACKENDS, ORT_BACKENDS, REWRITTEN_ONNX, Blame, Case, Row
from conformance.strategies import ANY, Domain, arrays, dtypes
from converter import compat

ifelse = compat.lookup("ifelse")

FLOATS = ("float32", "float64")
#: recurrences multiply: values stay small enough that a few steps cannot overflow float16
SMALL = Domain(-4.0, 4.0)
MAX_STEPS = 6


def _case(*values, params=()) -> Case:
    values = tuple(np.asarray(v) for v in values)
    return Case(values, tuple((None,) * v.ndim for v in values), tuple(params))


def _scan(*args, **kwargs):
    return pytensor.scan(*args, return_updates=False, **kwargs)


def _steps(draw) -> np.ndarray:
    return np.asarray(draw(st.integers(0, MAX_STEPS)), dtype=np.int64)


# -- case factories --------------------------------------------------------------------


def sequences(*, domain: Domain = SMALL, min_len: int = 0):
    """One vector of length ``min_len``..MAX_STEPS (the scanned sequence)."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            n = draw(st.integers(min_len, MAX_STEPS))
            return _case(draw(arrays(dtype, (n,), domain)))

        return cases()

    return factory


TAP_SETS = ((-1, -2), (-3, -1), (-2,))


def initial_taps(dtype: str):
    """Initial values for one of ``TAP_SETS`` and an int64 step count."""

    @st.composite
    def cases(draw):
        taps = draw(st.sampled_from(TAP_SETS))
        start = draw(arrays(dtype, (-min(taps),), SMALL))
        return _case(start, _steps(draw), params=(("taps", taps),))

    return cases()


def start_and_steps(dtype: str):
    """A 0-d start value and an int64 step count."""

    @st.composite
    def cases(draw):
        return _case(draw(arrays(dtype, (), SMALL)), _steps(draw))

    return cases()


def rows_and_weights(dtype: str, domain: Domain = SMALL):
    """A sequence of 0..MAX_STEPS rows of 3 and a (2, 3) weight matrix."""

    @st.composite
    def cases(draw):
        n = draw(st.integers(0, MAX_STEPS))
        return _case(draw(arrays(dtype, (n, 3), domain)), draw(arrays(dtype, (2, 3), domain)))

    return cases()


WELL_CONDITIONED = Domain(-0.5, 0.5)


def small_rows_and_weights(dtype: str):
    return rows_and_weights(dtype, WELL_CONDITIONED)


CONDITION_DTYPES = ("bool", "int8", "uint64", "float64")


def condition_and_vector(dtype: str):
    """A 0-d condition of one of CONDITION_DTYPES (any value: nan and 0 included) and a
    vector of length 0..4."""

    @st.composite
    def cases(draw):
        cond = draw(arrays(draw(st.sampled_from(CONDITION_DTYPES)), ()))
        n = draw(st.integers(0, 4))
        return _case(cond, draw(arrays(dtype, (n,))))

    return cases()


# -- graphs ----------------------------------------------------------------------------


def cumulative(x):
    return _scan(lambda xi, acc: acc + xi, sequences=[x],
                 outputs_info=[pt.zeros((), dtype=x.dtype)])


def recurrence(start, steps, *, taps):
    weights = (1.0, 0.5, -0.25)[:len(taps)]

    def step(*previous):  # weights in the values' dtype: a float16 recurrence stays float16
        terms = [pt.constant(w, dtype=p.dtype) * p for w, p in zip(weights, previous, strict=True)]
        return pt.add(*terms) if len(terms) > 1 else terms[0]

    out = _scan(step, outputs_info=[dict(initial=start, taps=list(taps))], n_steps=steps)
    return out, out[-1:]


def doubling_until(start, steps):
    def step(acc):
        new = acc * 2 + 1
        return [new, new - acc], until(new > 20)

    acc, gain = _scan(step, outputs_info=[start, None], n_steps=steps)
    return acc, gain


def nested(x):
    def outer(xi, acc):
        inner = _scan(lambda j, c: c * xi + j, sequences=[pt.arange(3, dtype=x.dtype)],
                      outputs_info=[acc])
        return inner[-1]

    return _scan(outer, sequences=[x], outputs_info=[pt.ones((), dtype=x.dtype)])


def per_step(xs, w):
    hs = _scan(lambda xr, w: pt.tanh(w @ xr), sequences=[xs], non_sequences=[w])
    return hs, hs.sum(0)


def last_two_rows(x):
    rows = _scan(lambda xi: pt.stack([xi, xi * 2]), sequences=[x])
    return rows[-2:]


def two_outputs(cond, x):
    return ifelse(cond, [x * 2, x + 3], [x - 1, x * x])


def unequal_branches(cond, x):
    return ifelse(cond, x[:2], pt.concatenate([x, x]))


def shared_weight(x):
    """A step that reads a shared variable (PyTensor passes it to Scan as a non-sequence)."""
    w = pytensor.shared(np.asarray(0.5, dtype=x.dtype), name="w")
    return _scan(lambda xi, h: w * h + xi, sequences=[x],
                 outputs_info=[pt.zeros((), dtype=x.dtype)])


def grad_of_recurrence(x, w):
    """d/dx and d/dw of sum(h**2), h[t] = w * h[t-1] + x[t]: a backward scan with a mit-mot
    output, a sequence and a non-sequence."""
    hs = _scan(lambda xi, h, w: w * h + xi, sequences=[x],
               outputs_info=[pt.zeros((), dtype=x.dtype)], non_sequences=[w])
    return pytensor.grad((hs**2).sum(), [x, w])


def grad_of_taps(start, steps, *, taps):
    """d/dstart of sum(y**2) for a recurrence over ``taps``: a mit-mot of several taps."""
    ys, _ = recurrence(start, steps, taps=taps)
    return pytensor.grad((ys**2).sum(), start)


def grad_of_per_step(xs, w):
    """d/dw of the per-step tanh network's sum: a nit-sot's gradient, matrices carried.
    Its cases keep tanh's argument within +-0.75 (WELL_CONDITIONED): the gradient's
    1 - tanh**2 cancels where tanh saturates, magnifying a backend's one-ulp tanh error
    far beyond float32's tolerance (ONNX Runtime's tanh at 4 is off by 1.9e-6 there)."""
    hs, _ = per_step(xs, w)
    return pytensor.grad(hs.sum(), w)


def underflowing_terms(dtype: str) -> Case:
    """x = [-tiny, tiny], w = 0: the w-gradient's one term, 2 * tiny * -tiny, is -0.0."""
    tiny = np.finfo(dtype).tiny
    return _case(np.array([-tiny, tiny], dtype), np.zeros((), dtype))


def sequence_and_weight(dtype: str):
    """A vector of length 0..MAX_STEPS and a 0-d weight."""

    @st.composite
    def cases(draw):
        n = draw(st.integers(0, MAX_STEPS))
        return _case(draw(arrays(dtype, (n,), SMALL)), draw(arrays(dtype, (), SMALL)))

    return cases()


# -- rows ------------------------------------------------------------------------------


def float16_subnormal(case) -> bool:
    """A float16 input holds a subnormal (a product of it may round to a signed zero)."""
    x = case.values[0]
    return x.dtype == np.float16 and bool(((x != 0) & (np.abs(x) < 2.0**-14)).any())


def holds_negative_zero(case) -> bool:
    """The start values hold a -0.0 (a step's terms may then all be -0.0)."""
    x = case.values[0]
    return bool(np.signbit(x[x == 0]).any())


def zero_steps(case) -> bool:
    """The scan runs no step: its sequence (the first input) is empty, or its step count
    (the 0-d int64 input) is 0."""
    first = case.values[0]
    counts = [v for v in case.values if v.dtype == np.int64 and v.ndim == 0]
    return (first.ndim >= 1 and first.shape[0] == 0) or any(v == 0 for v in counts)


def no_product_underflows(case) -> bool:
    """Whether no product w[i, k] * xr[k] of a step's w @ xr underflows. One that does
    leaves the zero's sign to how a backend adds: ONNX Runtime's MatMul keeps the sign of
    the exact, tiny product (w = -5.6e-133, xr = 2.2e-308 gives -0.0, as a fused
    multiply-add does), numpy's dot (PyTensor's Python Dot) adds the rounded -0.0 products
    to a +0.0 and gives +0.0; zero signs are judged on the other cases."""
    xs, w = (np.asarray(v, dtype=np.longdouble) for v in case.values)
    tiny = np.finfo(case.values[0].dtype).tiny
    terms = xs[:, None, :] * w[None, :, :]  # (step, output, term), in long double's range
    return not ((terms != 0) & (abs(terms) < tiny)).any()


def fewer_than_two_steps(case) -> bool:
    return case.values[0].shape[0] < 2


def reference_zero_steps(example) -> dict:
    return {
        "backends": ("onnx-reference",), "blame": Blame.ONNX_REFERENCE, "when": zero_steps,
        "reason": "the ONNX reference's Loop stacks scan outputs with np.vstack, which raises "
                  "after zero iterations (ONNX Runtime returns empty outputs)",
        "match": "need at least one array to concatenate",
        "example": example,
    }


# The JAX mode's Scan of zero steps: XLA aborts the process compiling it (a buffer of length
# -1: "SmallVector unable to grow"), or the outputs fail an assertion.
JAX_ZERO_STEPS = {
    "backends": ("pytensor-jax-opt",), "blame": Blame.PYTENSOR, "cause": "jax-scan-zero-steps",
    "reason": "the JAX mode's Scan of zero steps aborts the process in XLA's compiler (a "
              "length of -1) or fails an assertion",
    "match": "crashed the process|raised AssertionError", "when": zero_steps,
}


def _fixed(*values, params=()):
    """A dtype -> Case function: floats get the test's dtype, ints stay int64."""
    def make(dtype: str) -> Case:
        arrays_ = [np.asarray(v, dtype=np.int64 if isinstance(v, int) else dtype)
                   for v in values]
        return _case(*arrays_, params=params)
    return make


#: hs.sum(0) of float32 per-step outputs: a Sum with PyTensor's float64 accumulator, which
#: the JAX backend returns uncast (the JAX linker alone declines the scan's slicing graph)
JAX_SUM_DTYPE = {
    **dtype_differs(_fixed(np.ones((1, 3)), np.ones((2, 3))), ("float32",),
                    backends=("pytensor-jax-opt",), cause="jax-careduce-dtype",
                    reason="JAX returns the per-step outputs' sum in its float64 accumulator's "
                           "dtype, not the graph's float32"),
    "match": r"out1\.dtype=float64, but pytensor-py gives float32",
}
#: rows[-2:] of a per-step output: PyTensor 3's scan_save_mem sizes its buffer to 2 rows
#: whatever the step count (as scan_last_rows's C and Numba records show), and the JAX Scan
#: asserts that the trace of one step fills it
JAX_SHORT_TRACE = {
    "backends": ("pytensor-jax-opt",), "blame": Blame.PYTENSOR, "versions": "pytensor>=3",
    "cause": "jax-scan-nitsot-buffer",
    "reason": "the JAX mode's Scan of one step fails an assertion: scan_save_mem keeps a "
              "2-row buffer for rows[-2:], which the one-row trace does not fill",
    "match": r"pytensor-jax-opt raised AssertionError:  but pytensor-py returned",
    "when": lambda case: case.values[0].shape[0] == 1,
}


ROWS = [
    Row("scan_cumulative", cumulative, sequences(), (*dtypes.FLOATS, "int32", "int64"),
        grid=(SMALL,))
    .xfail(**reference_zero_steps(_fixed([])))
    .xfail(**JAX_ZERO_STEPS, example=_fixed([])),
    Row("scan_taps", recurrence, initial_taps, dtypes.FLOATS, grid=(SMALL,))
    .xfail(**reference_zero_steps(_fixed([1.0, 2.0], 0, params=(("taps", (-1, -2)),))))
    .xfail(backends=("onnxruntime", "onnxruntime-noopt", *REWRITTEN_ONNX),
           dtypes=("float16",), blame=Blame.ONNXRUNTIME, cause="ort-float16-loop-zero-sign",
           reason="in a float16 Loop body ONNX Runtime gives 1*0 + 0.5*(-2**-24) = -0.0, "
                  "where rounding each op to float16 (the reference evaluator) gives 0.0",
           match=r"\(sign of zero differs\)", when=float16_subnormal,
           example=_fixed([-2.0**-24, 0.0], 1, params=(("taps", (-1, -2)),)))
    .xfail(backends=("pytensor-c-opt",), dtypes=("float16",), blame=Blame.PYTENSOR,
           cause="scalar-add-impl-sum",
           reason="the rewrites fuse the step's weighted sum into a float16 Composite, which "
                  "has no C code: its Python impl sums from int 0, so -0.0 + -0.0 gives +0.0",
           match=r"pytensor-c-opt: out0?(\[[\d, ]*\])?=0\.0 but pytensor-py=-0\.0 \(sign of zero",
           when=holds_negative_zero,
           example=_fixed([-0.0, 0.0, -0.0], 1, params=(("taps", (-3, -1)),))),
    Row("scan_until", doubling_until, start_and_steps, FLOATS, grid=(SMALL,))
    .xfail(**reference_zero_steps(_fixed(1.0, 0))),
    Row("scan_nested", nested, sequences(), FLOATS, grid=(SMALL,))
    .xfail(**reference_zero_steps(_fixed([])))
    .xfail(**JAX_ZERO_STEPS, example=_fixed([]))
    .xfail(backends=("pytensor-numba-opt",), blame=Blame.PYTENSOR, versions="pytensor<3",
           cause="numba-238-nested-scan",
           reason="PyTensor 2.38's Numba linker computes the nested scan wrong (each outer "
                  "step returns its input) once the NUMBA mode's rewrites ran under the Python "
                  "linker, as the harness rewrites before 3.3; mode='NUMBA' itself computes it "
                  "right",
           match=r"pytensor-numba-opt: out\[\d+\]=", when=lambda case: case.values[0].size > 0,
           example=_fixed([0.0])),
    Row("scan_per_step", per_step, rows_and_weights, FLOATS, signed_zeros=no_product_underflows,
        grid=(SMALL, SMALL))
    .xfail(**reference_zero_steps(_fixed(np.zeros((0, 3)), np.ones((2, 3)))))
    .xfail(backends=("pytensor-jax-opt",), blame=Blame.PYTENSOR, when=zero_steps,
           reason="PyTensor's Scan returns a per-step output of zero steps with shape "
                  "(0,) * ndim whatever its static shape; the JAX mode's keeps the static (0, 2)",
           match=r"out0\.shape=\(0, 2\), but pytensor-py gives \(0, 0\)",
           example=_fixed(np.zeros((0, 3)), np.ones((2, 3))))
    .xfail(**JAX_SUM_DTYPE),
    Row("scan_last_rows", last_two_rows, sequences(), FLOATS, grid=(SMALL,))
    .xfail(**reference_zero_steps(_fixed([])))
    .xfail(backends=NUMBA_BACKENDS, blame=Blame.PYTENSOR, when=zero_steps,
           reason="Numba's Scan gives rows[-2:] of a zero-step per-step output another shape "
                  "than its Python Scan's (0, 0): (0, 2) on PyTensor 2.38, (2, 2) on 3.x",
           match=r"out\.shape=\((0|2), 2\), but pytensor-py gives \(0, 0\)",
           example=_fixed([]))
    .xfail(backends=ORT_BACKENDS, blame=Blame.PYTENSOR, when=zero_steps,
           reason="PyTensor's Scan returns a per-step output of zero steps with shape "
                  "(0,) * ndim whatever its static shape (its own comment: 'plainly wrong, "
                  "should use static shape'); the converted model keeps the static (0, 2)",
           match=r"out\.shape=\(0, 2\), but pytensor-py gives \(0, 0\)",
           example=_fixed([]))
    # not pytensor-onnx: the ONNX mode's rewrites keep the scan's whole trace (measured)
    .xfail(backends=("pytensor-c-opt", *NUMBA_BACKENDS, "onnxruntime-rewritten"),
           blame=Blame.PYTENSOR, versions="pytensor>=3", when=fewer_than_two_steps,
           reason="compiled scans (C after scan_save_mem, Numba even without rewrites) return "
                  "2 rows for rows[-2:] of a per-step vector after fewer steps, zeros added",
           match=r"out\.shape=\(2, 2\)", example=_fixed([1.0]))
    .xfail(**JAX_ZERO_STEPS, example=_fixed([]))
    .xfail(**JAX_SHORT_TRACE, example=_fixed([1.0])),
    Row("scan_grad", grad_of_recurrence, sequence_and_weight, FLOATS, grid=(SMALL, SMALL))
    .xfail(**reference_zero_steps(_fixed([], 0.5)))
    .xfail(backends=("pytensor-c-opt",), blame=Blame.PYTENSOR,
           reason="with the default rewrites (the backward scan's inner graph rewritten too) "
                  "a gradient term that underflows to -0.0 keeps its sign, where the "
                  "unrewritten graph's sum gives +0.0",
           match=r"\(sign of zero differs\)", example=underflowing_terms),
    Row("scan_grad_taps", grad_of_taps, initial_taps, FLOATS, grid=(SMALL,))
    .xfail(**reference_zero_steps(_fixed([1.0, 2.0], 0, params=(("taps", (-1, -2)),)))),
    Row("scan_grad_per_step", grad_of_per_step, small_rows_and_weights, FLOATS,
        grid=(WELL_CONDITIONED, WELL_CONDITIONED))
    .xfail(**reference_zero_steps(_fixed(np.zeros((0, 3)), np.ones((2, 3)))))
    # not pytensor-onnx: its rewrites leave the backward scan as it is (measured on 2.38)
    .xfail(backends=("pytensor-c-opt", "onnxruntime-rewritten"), blame=Blame.PYTENSOR,
           versions="pytensor<3", when=zero_steps,
           reason="PyTensor 2.38's default rewrites give the gradient of a zero-step scan a "
                  "backward scan of one step over an empty sequence: PyTensor raises, and "
                  "the model converted from that rewritten graph reads out of bounds",
           match=r"required number of steps is 1|indices element out of data bounds",
           example=_fixed(np.zeros((0, 3)), np.ones((2, 3))))
    .xfail(backends=("pytensor-numba",), blame=Blame.PYTENSOR, versions="pytensor<3",
           when=zero_steps,
           reason="PyTensor 2.38's Numba backend raises on the gradient of a zero-step scan "
                  "(a vectorized input of mismatched length)",
           match=r"incompatible shape in axis 0",
           example=_fixed(np.zeros((0, 3)), np.ones((2, 3))))
    .xfail(backends=("pytensor-numba-opt",), blame=Blame.PYTENSOR, versions="pytensor<3",
           when=zero_steps,
           reason="PyTensor 2.38's Numba backend after the default rewrites gives the gradient "
                  "of a zero-step scan from its weights (1 for 1, nan for nan; no step: 0)",
           match=r"but pytensor-py=0\.0",
           example=_fixed(np.zeros((0, 3)), np.full((2, 3), np.nan))),
    Row("scan_shared", shared_weight, sequences(), FLOATS, grid=(SMALL,))
    .xfail(**reference_zero_steps(_fixed([])))
    .xfail(**JAX_ZERO_STEPS, example=_fixed([])),
    # the condition is free too: any value of its dtype, nan and 0 included
    Row("ifelse_outputs", two_outputs, condition_and_vector,
        (*dtypes.FLOATS, "int32", "int64"), grid=(ANY, ANY)),
    Row("ifelse_shapes", unequal_branches, condition_and_vector,
        (*dtypes.FLOATS, "int64"), grid=(ANY, ANY)),
]
