"""Divergences of PyTensor's JAX backend that many rows share, declared once: keyword sets for
``Row.xfail`` (backends, blame, cause, reason, match) to which a row adds its dtypes and
example. Each is PyTensor's JAX dispatch returning something other than what its graph
declares; what JAX does by design (zero signs, subnormals, graphs jit cannot trace) is the
backend's declared semantics instead (conformance.backends.jax).
"""

from __future__ import annotations

from conformance.registry import JAX_BACKENDS, Blame
from conformance.strategies import fixed

#: the oracle's message for a dtype that differs (any output)
DTYPE_DIFFERS = r"out\d*\.dtype=\w+, but pytensor-py gives \w+"


def dtype_differs(example, dtypes, *, cause: str, reason: str,
                  backends: tuple[str, ...] = JAX_BACKENDS) -> dict:
    """A result of another dtype than the graph declares (PyTensor's JAX dispatch returns
    what jax.numpy gives and casts nothing): ``example`` a dtype -> Case function (or the
    values of one, for :func:`fixed`)."""
    return {"backends": backends, "dtypes": tuple(dtypes), "blame": Blame.PYTENSOR,
            "cause": cause, "reason": reason, "match": DTYPE_DIFFERS,
            "example": example if callable(example) else fixed(*example)}


def int_to_float32(*values, dtypes=("int32", "uint32")) -> dict:
    """Integer (or bool) operands of a float op whose graph declares float64: jax.numpy's
    promotion gives float32 (int32 and uint32 operands, or narrower ones of a division)."""
    return dtype_differs(_example(values), dtypes, cause="jax-elemwise-dtype",
                         reason="JAX computes a float op of integer or bool operands in float32 "
                                "(jax.numpy's promotion), where the graph declares float64")


def elemwise_dtype(*values, dtypes, what: str) -> dict:
    """Another Elemwise whose result keeps jax.numpy's dtype (``what`` says which)."""
    return dtype_differs(_example(values), dtypes, cause="jax-elemwise-dtype",
                         reason=f"JAX returns jax.numpy's dtype for {what}, not the graph's")


def _example(values: tuple):
    """The values of a :func:`fixed` example, or one dtype -> Case function."""
    return values[0] if len(values) == 1 and callable(values[0]) else values


def on_jax(record: dict, backends: tuple[str, ...] = JAX_BACKENDS, **changes) -> dict:
    """``record`` (of the Python reference's own fault, or of a rewrite, for other backends)
    as a record of its own for the JAX backends, so that a run of these alone judges it."""
    return {**record, "backends": backends, **changes}


def without_jax(backends: tuple[str, ...]) -> tuple[str, ...]:
    """``backends`` but the JAX pair: for a record of a zero's sign, which the JAX backends
    do not promise (their declared semantics), so it can never show there."""
    return tuple(b for b in backends if b not in JAX_BACKENDS)


def subnormal_intermediate(what: str, example, *, when, dtypes,
                           backends: tuple[str, ...] = JAX_BACKENDS) -> dict:
    """A result that JAX's flush-to-zero mode changes through an intermediate value (the
    harness judges flushed inputs and results, not what a kernel computes on the way)."""
    return {"backends": backends, "dtypes": tuple(dtypes), "blame": Blame.PYTENSOR,
            "cause": "jax-subnormal-intermediate",
            "reason": f"JAX flushes a subnormal intermediate to zero: {what}",
            "match": r"abs err", "when": when,
            "example": example if callable(example) else fixed(*example)}


#: The JAX backend's root causes, as ``conformance upstream`` titles them (its CAUSES).
CAUSES = {
    "jax-mode-unique-0d":
        "the JAX mode's Unique of a 0-d operand with indices, inverse and counts fails an "
        "assertion (a float64 output type)",
    "jax-mode-bool-sum":
        "the JAX mode sums bools in int64 whatever acc_dtype says: sum([True, True], "
        "acc_dtype=bool) is 2 where PyTensor's bool accumulator gives 1",
    "jax-elemwise-dtype":
        "the JAX backend returns an Elemwise's result in jax.numpy's dtype, never cast to the "
        "one the graph declares: int32/uint32 (and for true_div narrower) operands of float ops "
        "give float32 for float64, floor/ceil/trunc keep integers, 3+ operand add/mul (jnp.sum "
        "and jnp.prod of a stack) and 0-d bool add/mul (Python's sum and *) widen to int64",
    "jax-constant-dtype":
        "the JAX backend hands a 0-d constant to jax as a Python scalar (jax_typify of a 0-d "
        "ndarray is .item()): zeros_like, ones_like, alloc_diag and any node the JAX mode folds "
        "to a constant take JAX's default dtype (int64, float64), and a uint64 constant above "
        "2**63 raises OverflowError",
    "jax-careduce-dtype":
        "the JAX backend's CAReduce casts its result to the accumulator dtype (acc_dtype), not "
        "the output dtype, and returns an operand reduced over no axis as it is: sum, prod, "
        "mean, var, std, einsum of narrow ints and float16/float32 come out in another dtype",
    "jax-careduce-scalar-op":
        "the JAX backend's CAReduce looks up a jax.lax function named after the scalar op: for "
        "ProdWithoutZeros (mul_without_zeros) it raises AttributeError, for a fused Composite "
        "UnboundLocalError, instead of NotImplementedError",
    "jax-softmax-grad-dtype":
        "the JAX backend's SoftmaxGrad of float16 or float32 returns a wider dtype than the "
        "graph declares",
    "jax-linalg-dtype":
        "the JAX backend's linalg ops return jax.numpy's float dtype (det of int32 is float32, "
        "cho_solve and solve_triangular of float16 stay float16) where the graph declares "
        "another",
    "jax-searchsorted-dtype":
        "the JAX backend's searchsorted returns jnp.searchsorted's int32 indices where the "
        "graph declares int64",
    "jax-searchsorted-sorter":
        "the JAX backend's searchsorted with a sorter passes it as jnp.searchsorted's third "
        "positional argument (side), which jit takes as a static argument and cannot hash",
    "jax-shape-0d":
        "the JAX backend's Shape of a 0-d tensor is jnp.shape's empty tuple, which becomes a "
        "float64 array where the graph declares int64",
    "jax-split-one":
        "the JAX backend's Split into one part returns jnp.split's list, which the output copy "
        "refuses (TypeError: copy requires ndarray)",
    "jax-unique-lax-numpy":
        "the JAX backend's Unique calls jnp.lax_numpy._unique1d, which jax no longer has "
        "(AttributeError)",
    "jax-check-dropped":
        "the JAX backend drops CheckAndRaise (Assert) with a warning: a false condition "
        "returns the value instead of raising",
    "jax-index-unchecked":
        "the JAX backend checks no index: jax clamps an out-of-range read to the nearest "
        "element and drops an out-of-range write, where PyTensor raises IndexError",
    "jax-inc-subtensor-bool":
        "the JAX backend's inc_subtensor of bools raises TypeError (jax.numpy's add does not "
        "take bool) where PyTensor increments bools with an or",
    "jax-inc-ignore-duplicates":
        "the JAX backend's inc_subtensor ignores ignore_duplicates=True: an element named "
        "twice by the index gets y twice (.at[].add), where x[idx] += y adds it once",
    "jax-boolean-set-switch":
        "the JAX rewrite of a boolean-mask set/inc (jax_boolean_indexing_set_or_inc) makes it "
        "a switch, whose runtime-broadcast check refuses a y that numpy broadcasts",
    "jax-reshape-minus-one-empty":
        "the JAX mode reshapes an empty broadcast batch of a matmul with a -1, and "
        "jnp.reshape divides by the zero size (ZeroDivisionError)",
    "jax-scan-zero-steps":
        "the JAX mode's Scan of zero steps aborts the process while XLA compiles it "
        "(SmallVector unable to grow: a length of -1) or fails an assertion",
    "jax-mode-moment-0d":
        "the JAX mode's rewrites make var and std of a 0-d operand 0, also of nan and inf",
    "jax-int-division-by-zero":
        "the JAX backend's integer division by zero gives -1 (XLA leaves it implementation-"
        "defined) where numpy, PyTensor's Python backend, gives 0",
    "jax-int-power-exponent":
        "jax.numpy's integer power (the JAX backend's pow) reads only 6 bits of the exponent: "
        "2 ** 64 is 1 and 2 ** 70 is 64, where the wrapped power is 0",
    "jax-softplus-negates":
        "the JAX backend's softplus computes x + exp(-x) with -x in the operand's dtype: it "
        "wraps for unsigned integers (softplus(uint8 18) is inf) and raises for bools",
    "jax-sinh-cosh-accuracy":
        "jax's float64 sinh and cosh are off by up to ~250 ulp for |x| above ~16.7",
    "jax-gamma-accuracy":
        "jax's gamma is exp(gammaln(x)) with a sign: off by up to ~1e-5 relative in float32 "
        "and ~4e-13 in float64 (10! comes out 362881 in float32)",
    "jax-gammaln-minus-inf":
        "jax's gammaln is +inf at -inf (as libm's lgamma), where PyTensor's Python Op (scipy) "
        "gives -inf",
    "jax-digamma-zero":
        "jax's digamma is nan at 0, where PyTensor's Python Op (scipy) gives -inf at +0 and "
        "+inf at -0",
    "jax-subnormal-intermediate":
        "jax computes with subnormals flushed to zero (its documented FTZ/DAZ mode), so "
        "functions that pass through a subnormal intermediate differ beyond flushing their "
        "operands and results: arcsin of x below twice the smallest normal is 0, arctan2 of "
        "two subnormals nan, pow of a subnormal base off",
    "jax-softmax-int":
        "jax.nn.softmax of an integer array starts its max from -inf cast to the integer dtype "
        "(0 for int8/int16, a huge value for uint64): int8/int16 rows of negatives whose exp "
        "underflows, and every uint64 row, come out nan (the JAX backend's Softmax calls it)",
    "jax-int-overflow-assumed":
        "XLA compiles int32/int64 arithmetic as if it could not overflow (LLVM's nsw): "
        "clip(x * x, 0, 127) of an x whose square wraps negative returns the wrapped value "
        "unclipped",
    "jax-cholesky-nan-triangle":
        "the JAX backend's cholesky of a matrix that is not positive definite is nan in its "
        "triangle and 0 in the other, where the Op (on_error='nan') gives nan throughout",
    "jax-inv-singular":
        "the JAX backend's inv of a singular matrix returns inf or nan where numpy (PyTensor's "
        "Python Op) raises LinAlgError",
    "jax-fill-diagonal-nd":
        "the JAX backend's fill_diagonal of an N-d cube (N > 2) fills more than the elements "
        "a[i, ..., i] that numpy.fill_diagonal fills",
}
