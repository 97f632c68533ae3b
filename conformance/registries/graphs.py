"""Random multi-op graphs composed from the elemwise and reduction rows."""

from __future__ import annotations

import warnings
from itertools import combinations

import numpy as np

from conformance.jax_records import DTYPE_DIFFERS
from conformance.registry import JAX_BACKENDS, NOT_REFERENCE, REWRITTEN_ONNX, Blame, Case, Row
from conformance.strategies.graphs import CONTROL, Composer, walk
from conformance.strategies.values import ANY
from converter import compat

# pytensor.tensor.special.xlog1py (its row) exists from PyTensor 3 on
_xlog1py = compat.lookup("xlog1py")

#: Bound to the whole registry by ``conformance.registries`` once it is assembled. Until a
#: run says which backends it judges (the plugin sets ``judged``), the optional JAX pair's
#: records do not keep a row out of graphs: the default and nightly runs leave JAX out.
COMPOSER = Composer()
COMPOSER.judged = frozenset(b for b in NOT_REFERENCE if b not in JAX_BACKENDS)


def repeats_zero_times(case: Case) -> bool:
    """Some node (in a body too) repeats a whole axis zero times with a constant count."""
    return any(name == "repeat_scalar" and dict(params).get("r") == 0
               for name, _, params in walk(dict(case.params)["nodes"]))


def zero_repeat_example(dtype: str) -> Case:
    nodes = (("repeat_scalar", (0,), (("r", 0), ("axis", 0))),)
    return Case((np.ones(1, dtype),), ((1,),), (("nodes", nodes), ("outputs", (1,))))


def _node_values(case: Case, dtype: str) -> list | None:
    """Every node's value on the case's inputs cast to ``dtype`` (Python linker, no
    rewrites), or None where the graph cannot be built or run on that dtype (bit ops on
    floats, say) or raises on those values."""
    import pytensor
    import pytensor.tensor as pt
    from pytensor.compile.mode import Mode

    nodes, n = dict(case.params)["nodes"], len(case.values)
    inputs = [pt.tensor(f"x{i}", dtype=dtype, shape=s) for i, s in enumerate(case.static)]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            outputs = COMPOSER.build(*inputs, nodes=nodes, outputs=range(n, n + len(nodes)))
            run = pytensor.function(inputs, outputs, mode=Mode(linker="py", optimizer=None),
                                    on_unused_input="ignore")  # pruned graphs may skip one
            return run(*(v.astype(dtype) for v in case.values))
    # the graph refuses the dtype, or the reference raises on these values (which the
    # comparison judges, not this predicate)
    except Exception:  # noqa: BLE001
        return None


def overflows_signed(case: Case) -> bool:
    """Some int32 or int64 node overflows: its value differs from that node's value on the
    inputs widened (int32 to int64, exactly; int64 to float64, beyond float64's rounding).
    Narrower ints compute in C's int, where they cannot overflow."""
    dtype = case.values[0].dtype
    if dtype.name not in ("int32", "int64"):
        return False
    narrow = _node_values(case, dtype.name)
    wide = _node_values(case, "int64" if dtype.itemsize < 8 else "float64")
    if narrow is None or wide is None:
        return False
    return any(a.dtype.name in ("int32", "int64") and a.shape == b.shape
               and not np.allclose(a.astype(np.float64), b.astype(np.float64),
                                   rtol=0 if b.dtype.kind == "i" else 1e-12, atol=0)
               for a, b in zip(narrow, wide, strict=True))


def negated_minimum_example(dtype: str) -> Case:
    """xlogy0(-x, y) on the minimum x (which -x leaves as is) and y = 0: +inf by wrapping."""
    values = (np.array(0, dtype), np.array(np.iinfo(dtype).min, dtype))
    nodes = (("neg", (1,), ()), ("xlogy0", (2, 0), ()))
    return Case(values, ((), ()), (("nodes", nodes), ("outputs", (3,))))


def _shared_operands(case: Case) -> set[int]:
    """The values that reach some node through two of its operands (x in x - x, or in
    (x + x) - x), by their ids in the graph."""
    nodes, n = dict(case.params)["nodes"], len(case.values)
    ancestry = [{i} for i in range(n)]
    shared: set[int] = set()
    for k, (_, operand_ids, _) in enumerate(nodes):
        for a, b in combinations(operand_ids, 2):
            shared |= ancestry[a] & ancestry[b]
        ancestry.append({n + k}.union(*(ancestry[i] for i in operand_ids)))
    return shared


#: Reductions that divide by the number of elements reduced.
AVERAGES = ("mean", "var", "std")


def float16_leaves_range(case: Case) -> bool:
    """Some float16 node overflows to an infinity or underflows to zero where the same graph
    in float32 stays finite and nonzero: there ONNX Runtime's float32 arithmetic, handed on
    without the float16 rounding, gives another value."""
    if case.values[0].dtype.name != "float16":
        return False
    narrow, wide = _node_values(case, "float16"), _node_values(case, "float32")
    if narrow is None or wide is None:
        return False
    with np.errstate(all="ignore"):
        return any(a.dtype.name == "float16" and a.shape == b.shape and bool(
            (np.isfinite(b) & (b != 0) & (np.isinf(a) | (a == 0))).any())
            for a, b in zip(narrow, wide, strict=True))


def float16_overflow_example(dtype: str) -> Case:
    """xlogy0(int16(-(-argmin(x + x))) + x, x) with x = [0, 0, -65504]: float16's sum is
    -inf, which the graph's clip of nonfinite operands makes 1 (argmin 0, out[0] 0);
    unrounded, -131008 is clipped to -65504 (argmin 2, out[0] infinite). The harness also
    accepts the graph computed in float32 throughout where it can rebuild it so, which
    xlogy0's inner graph prevents."""
    nodes = (("add", (0, 0), ()), ("argmin", (1,), (("axis", None),)),
             ("cast_int16", (2,), ()), ("neg", (3,), ()), ("add", (4, 0), ()),
             ("xlogy0", (5, 0), ()))
    return Case((np.array([0, 0, -65504], dtype),), ((None,),),
                (("nodes", nodes), ("outputs", (6,))))


def cancels_unlike_finite_math(case: Case) -> bool:
    """Some float value that reaches a node through two operands holds a nan, an infinity
    or a zero (whose sign may go), an average reduces an empty operand, or a variance a
    nonfinite one: where cancelling (x - x to 0, (x + x) - x to x, x == x to True, an
    average's n / n to 1, a one-element variance to 0) changes the result."""
    nodes = dict(case.params)["nodes"]
    values = [*case.values, *(_node_values(case, case.values[0].dtype.name) or ())]
    if len(values) < len(case.values) + len(nodes):
        return False
    if any(_body_cancels(name, params) for name, _, params in nodes):
        # a body's own values are not at hand: any nan, infinity, zero or empty value of
        # the graph may be one that reaches it
        return any(_nonfinite(v) or np.asarray(v).size == 0
                   or (np.asarray(v).dtype.kind in "fc" and (np.asarray(v) == 0).any())
                   for v in values)
    if any(name in AVERAGES and values[ids[0]].size == 0 for name, ids, _ in nodes):
        return True
    # var and std subtract the mean from each element: x - x where an axis has one
    if any(name in AVERAGES[1:] and _nonfinite(values[ids[0]]) for name, ids, _ in nodes):
        return True
    shared = (np.asarray(values[i]) for i in _shared_operands(case))
    return any(_nonfinite(v) or (v.dtype.kind in "fc" and (v == 0).any()) for v in shared)


def _body_cancels(name: str, params: tuple) -> bool:
    """A control node some body of which has an average or a value reaching a node twice."""
    if name not in CONTROL:
        return False
    k = 2 if name == "scan_fold" else 1  # a fold's body takes the value and an item
    bodies = [value for key, value in params if key in ("body", "then", "else")]
    return any(any(n in AVERAGES for n, _, _ in body)
               or _shared_operands(Case((np.zeros(()),) * k, ((),) * k,
                                        (("nodes", body), ("outputs", ()))))
               for body in bodies)


def _nonfinite(v) -> bool:
    v = np.asarray(v)
    return v.dtype.kind in "fc" and not np.isfinite(v).all()


def cancelled_example(dtype: str) -> Case:
    """m - m for m the mean of an empty vector (nan, on any dtype)."""
    nodes = (("mean", (0,), (("axis", None),)), ("sub", (1, 1), ()))
    return Case((np.zeros(0, dtype),), ((None,),), (("nodes", nodes), ("outputs", (2,))))


def square_overflow_example(dtype: str) -> Case:
    """clip(x * x, -2, 2) (exp's guard in a graph) on an x whose square wraps negative."""
    x = {"int32": 46341, "int64": 3037000500}[dtype]  # the least x with x * x > max
    nodes = (("mul", (0, 0), ()), ("exp", (1,), ()))
    return Case((np.array(x, dtype),), ((),), (("nodes", nodes), ("outputs", (2,))))


def jax_dtype_example(dtype: str) -> Case:
    """A one-node graph JAX gives another dtype: x + x of 0-d bools (Python's sum), floor of
    an int64 (kept an integer), else x - x, which the JAX mode folds to a 0-d constant that
    JAX gets as a Python scalar."""
    node = {"bool": "add", "int64": "floor"}.get(dtype, "sub")
    operands = (0,) if node == "floor" else (0, 0)
    return Case((np.array(1, dtype),), ((),), (("nodes", ((node, operands, ()),)),
                                               ("outputs", (1,))))


def long_sort_example(dtype: str) -> Case:
    """sort(x) of 65 elements: the converter's sort gathers along an axis of 65."""
    x = (np.arange(65) % 7).astype(dtype)
    return Case((x,), ((None,),), (("nodes", (("sort", (0,), (("axis", None),)),)),
                                   ("outputs", (1,))))


def _graph_values(case: Case) -> list | None:
    """The inputs and every node's value (Python linker), or None where they cannot be had."""
    nodes = dict(case.params)["nodes"]
    values = [*case.values, *(_node_values(case, case.values[0].dtype.name) or ())]
    return values if len(values) == len(case.values) + len(nodes) else None


def folds_log1p_of_true(case: Case) -> bool:
    """Some xlog1py(x, y) has a bool y that is True where x is not 0, on inputs of static
    shapes only: where the rewrites can fold both operands (y = a == a to True, x = its sum
    over static axes) and the node with them."""
    return not any(None in s for s in case.static) and _log1p_of_true(case)


def log1p_of_true_in_c(case: Case) -> bool:
    """As ``folds_log1p_of_true``, on an input of a non-static shape: x stays a variable,
    so only log1p(True) is folded, to a float32 constant inside a float64 Composite."""
    return any(None in s for s in case.static) and _log1p_of_true(case)


def _log1p_of_true(case: Case) -> bool:
    values = _graph_values(case)
    if values is None:
        return False
    for name, ids, _ in dict(case.params)["nodes"]:
        x, y = (np.asarray(values[i]) for i in ids) if name == "xlog1py" else (None, None)
        if y is not None and y.dtype == np.bool_ and ((x != 0) & y).any():
            return True
    return False


def folded_log1p_example(dtype: str) -> Case:
    """xlog1py(sum(x == x), x == x) of a 0-d x, which the rewrites fold to log(2)."""
    nodes = (("eq", (0, 0), ()), ("sum", (1,), (("axis", None),)), ("xlog1py", (2, 1), ()))
    return Case((np.array(1, dtype),), ((),), (("nodes", nodes), ("outputs", (3,))))


def log1p_of_true_in_c_example(dtype: str) -> Case:
    """The same graph of an x of non-static shape: 3 * log(2) as 2.0794416 in C."""
    nodes = (("eq", (0, 0), ()), ("sum", (1,), (("axis", None),)), ("xlog1py", (2, 1), ()))
    return Case((np.array([1, 2, 3], dtype),), ((None,),),
                (("nodes", nodes), ("outputs", (3,))))


def _log1mexp_pairs(case: Case):
    """(x, log1mexp(x)) for each log1mexp(log1mexp(x)) of the graph, as arrays."""
    values = _graph_values(case)
    nodes, n = dict(case.params)["nodes"], len(case.values)
    if values is None:
        return
    for name, operand_ids, _ in nodes:
        i = operand_ids[0]
        if name == "log1mexp" and i >= n and nodes[i - n][0] == "log1mexp":
            (j,) = nodes[i - n][1]
            yield np.asarray(values[j]), np.asarray(values[i])


def log1mexp_twice_differs(case: Case) -> bool:
    """Some log1mexp(log1mexp(x)) has x = +0.0 (exactly: -0.0) or an x < 0 so small that
    exp(x) underflows and log1mexp(x) is 0 (exactly: -inf)."""
    return any((((x == 0) & ~np.signbit(x)) | ((x < 0) & (y == 0))).any()
               for x, y in _log1mexp_pairs(case))


def log1mexp_twice_negative_zero(case: Case) -> bool:
    """Some log1mexp(log1mexp(x)) has x = -0.0 (the rewrite's Where selects it)."""
    return any(((x == 0) & np.signbit(x)).any() for x, _ in _log1mexp_pairs(case))


#: An x whose exp underflows in log1mexp's result dtype (0 where no x < 0 can be had).
UNDERFLOWING = {"float16": -30.0, "float32": -200.0, "int8": -128, "float64": -800.0,
                "int32": -800, "int64": -800}


def log1mexp_twice_example(dtype: str, x: float | None = None) -> Case:
    """log1mexp(log1mexp(x)) of an x where the rewrite differs (``x``, by default one that
    underflows, else +0.0 for the unsigned dtypes)."""
    x = UNDERFLOWING.get(dtype, 0) if x is None else x
    nodes = (("log1mexp", (0,), ()), ("log1mexp", (1,), ()))
    return Case((np.array([x], dtype),), ((None,),), (("nodes", nodes), ("outputs", (2,))))


LOG1MEXP_TWICE = {
    "backends": ("pytensor-c-opt", "pytensor-numba-opt", *REWRITTEN_ONNX),
    "blame": Blame.PYTENSOR, "when": log1mexp_twice_differs, "example": log1mexp_twice_example,
    "reason": "the rewrites take log1mexp(log1mexp(x)) to x for x <= 0, which differs where "
              "x is +0.0 (exactly -0.0) or exp(x) underflows (exactly -inf)",
}

ROWS = [
    Row("random_graph", COMPOSER.build, COMPOSER.cases,
        ("bool", "int8", "int32", "int64", "uint8", "float16", "float32", "float64"),
        code=COMPOSER.code, signed_zeros=COMPOSER.judges_zero_signs,
        # the graph's first input takes the grid (every graph has one); each node keeps its
        # operands inside the row's domain itself (nan and inf replaced, bounds clipped)
        grid=(ANY,))
    .xfail(backends=("onnxruntime", "onnxruntime-noopt", *REWRITTEN_ONNX),
           dtypes=("float16",), blame=Blame.ONNXRUNTIME, cause="ort-float16-unrounded-cast",
           # PyTensor 2.38 builds xlogy0 without an inner graph, so the harness can widen the
           # example to float32 and accepts ONNX Runtime's value there
           versions="pytensor>=3",
           reason="ONNX Runtime computes a float16 Add, Sub, Mul, Exp or Sqrt in float32 and a "
                  "Cast to float32 after it takes the unrounded value: float16's overflow to "
                  "inf (or underflow to 0) never happens",
           when=float16_leaves_range, example=float16_overflow_example)
    # not onnxruntime-rewritten: PyTensor's rewrites fold a repeat of a constant 0 times
    .xfail(backends=("onnxruntime",), blame=Blame.ONNXRUNTIME_OPTIMIZER,
           cause="ort-expand-elimination-zero",
           reason="ExpandElimination drops an Expand to a constant shape with a 0 where its "
                  "input's length is 1, so repeat(x, 0) of a static length-1 axis keeps it",
           match="onnxruntime raised", when=repeats_zero_times, example=zero_repeat_example)
    .xfail(backends=("pytensor-c-opt",), dtypes=("int32", "int64"), blame=Blame.PYTENSOR,
           reason="a fused Composite's C code lets int32/int64 arithmetic overflow, which C "
                  "leaves undefined: g++ takes x * x to be >= 0 and drops a clip's lower bound",
           when=overflows_signed, example=square_overflow_example)
    # 2.38's rewrites leave the example's wrapped value alone (measured on both backends)
    .xfail(backends=("pytensor-c-opt", *REWRITTEN_ONNX), dtypes=("int32", "int64"),
           blame=Blame.PYTENSOR, versions="pytensor>=3",
           reason="the default rewrites take int32/int64 arithmetic not to overflow: -x * y "
                  "becomes -1.0 * x * y, which differs where -x wraps (x the minimum)",
           when=overflows_signed, example=negated_minimum_example)
    .xfail(backends=("pytensor-c-opt", "pytensor-numba-opt", *REWRITTEN_ONNX),
           blame=Blame.PYTENSOR,
           reason="the default rewrites cancel like terms (x - x to 0, x == x to True, a "
                  "mean's n / n to 1), which holds for finite nonzero x: nan, inf, -0.0 differ",
           when=cancels_unlike_finite_math, example=cancelled_example)
    .xfail(**LOG1MEXP_TWICE,
           dtypes=("int8", "int32", "int64", "float32", "float64"),
           match=r"abs err inf|=0\.0 but pytensor-py=-0\.0 \(sign of zero differs\)")
    # float16: the example does not show on onnxruntime-rewritten alone (measured)
    .xfail(**{**LOG1MEXP_TWICE, "backends": ("pytensor-c-opt", "pytensor-numba-opt")},
           dtypes=("float16",),
           match=r"abs err inf|=0\.0 but pytensor-py=-0\.0 \(sign of zero differs\)")
    .xfail(backends=REWRITTEN_ONNX, dtypes=("float16", "float32", "float64"),
           blame=Blame.ONNXRUNTIME, cause="ort-where-negative-zero",
           reason="log1mexp(log1mexp(x)) is rewritten to a Where selecting x, and ONNX Runtime's "
                  "Where returns +0.0 where it selects a -0.0",
           match=r"=0\.0 but pytensor-py=-0\.0 \(sign of zero differs\)",
           when=log1mexp_twice_negative_zero,
           example=lambda d: log1mexp_twice_example(d, -0.0))
    .xfail(backends=("onnx-reference",), blame=Blame.ONNX_REFERENCE,
           cause="reference-gather-elements-64",
           reason="the reference evaluator's GatherElements uses np.choose, which takes at "
                  "most 64 choices: gathering along an axis longer than 64 raises",
           match="onnx-reference raised ValueError: Need at least 0 and at most 64 array",
           example=long_sort_example)
    .xfail(backends=JAX_BACKENDS, blame=Blame.PYTENSOR,
           dtypes=("bool", "int8", "int32", "int64", "uint8", "float16", "float32"),
           reason="JAX returns another dtype than the graph declares (the rows' JAX dtype "
                  "records; the JAX mode also folds nodes to 0-d constants, which JAX gets as "
                  "Python scalars of its default dtype)",
           match=DTYPE_DIFFERS, example=jax_dtype_example)
    # int32 only: XLA keeps int64's wrapped square here (seen on this machine's CPU)
    .xfail(backends=JAX_BACKENDS, dtypes=("int32",), blame=Blame.PYTENSOR,
           cause="jax-int-overflow-assumed",
           reason="XLA compiles int32/int64 arithmetic as if it cannot overflow: clip(x * x, "
                  "0, 127) of an x whose square wraps negative keeps the wrapped value",
           when=overflows_signed, example=square_overflow_example),
]

if _xlog1py is not None:
    # not pytensor-onnx: the ONNX mode leaves the xlog1py Composite unfolded (measured on
    # 3.0.7 and 2.38)
    ROWS[0] = ROWS[0].xfail(
        backends=("pytensor-numba-opt", "onnxruntime-rewritten"), blame=Blame.PYTENSOR,
        versions="pytensor<3.3",
        reason="the rewrites fold xlog1py(x, True) through its Composite's Python code, where "
               "numpy's log1p of a bool is float16: log(2) becomes 0.693359375",
        match="abs err", when=folds_log1p_of_true, example=folded_log1p_example).xfail(
        backends=("pytensor-c-opt",), blame=Blame.PYTENSOR,
        reason="the rewrites fold log1p(True) in xlog1py to a float32 constant, which a float64 "
               "Composite's C code writes as the text 0.6931472, a different double",
        match="abs err", when=log1p_of_true_in_c, example=log1p_of_true_in_c_example)

# bool and uint8 inputs never underflow exp: only the zero's sign shows, which fast-math Numba
# does not promise (a record of its own, so a run of Numba alone leaves it unjudged)
ROWS[0] = ROWS[0].xfail(**LOG1MEXP_TWICE, dtypes=("bool", "uint8"),
                        match=r"=0\.0 but pytensor-py=-0\.0 \(sign of zero differs\)")
