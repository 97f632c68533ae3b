"""The JAX backends (optional: skipped without jax): pytensor-jax-opt compiles what
``mode="JAX"`` compiles, float64 stays float64, and only a graph jit cannot trace is declined."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from conformance.backends import BACKENDS, Declined, Graph
from conformance.backends.jax import SEMANTICS, untraceable
from conformance.core.harness import build_graph
from conformance.core.oracle import compare, flushed, holds_subnormals
from conformance.registries import row_named
from conformance.registry import Tol

pytest.importorskip("jax")


def _printed(fgraph) -> str:
    return pytensor.printing.debugprint(fgraph, file="str", print_type=True)


def _graph(inputs, outputs) -> Graph:
    return Graph(list(inputs), list(outputs), convert=None)


def _registry_graph(name: str, dtype: str, record: int = 0) -> tuple[Graph, tuple]:
    row = row_named(name)
    case = row.known[record].example(dtype) if row.known else None
    inputs, outputs = build_graph(row, case)
    return _graph(inputs, outputs), case.values


@pytest.mark.parametrize(("name", "dtype"), [("scan_per_step", "float64"), ("softmax", "float32"),
                                             ("matmul", "float64")])
def test_jax_opt_compiles_what_the_jax_mode_compiles(name, dtype):
    """The same rewritten graph as ``pytensor.function(..., mode="JAX")`` (a Scan's inner graph
    included: rewriting through the Python linker left a Gemv{inplace} there)."""
    graph, _ = _registry_graph(name, dtype)
    ours = BACKENDS["pytensor-jax-opt"].function(graph).maker.fgraph
    theirs = pytensor.function(graph.inputs, graph.outputs, mode="JAX").maker.fgraph
    # printed (inner graphs included): JAXShapeTuple ops compare by identity
    assert _printed(ours) == _printed(theirs)
    inner = [type(n.op).__name__ for node in ours.toposort()
             for n in getattr(getattr(node.op, "fgraph", None), "apply_nodes", ())]
    assert not any("Gemv" in op or "Gemm" in op for op in inner), inner


def test_float64_is_computed_in_float64():
    x = pt.vector("x", dtype="float64")
    run = _graph([x], [x / 3]).runner(BACKENDS["pytensor-jax"], 0)
    (out,) = run([np.array([1.0])])
    assert out.dtype == np.float64
    assert out[0] == 1.0 / 3, "computed in float32 and widened"


def test_an_op_without_a_jax_implementation_is_declined():
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class NoJax(Op):
        def make_node(self, x):
            return Apply(self, [x], [x.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = inputs[0]

    x = pt.vector("x")
    with pytest.raises(Declined, match="No JAX conversion"):
        _graph([x], [NoJax()(x)]).runner(BACKENDS["pytensor-jax"], 0)


def test_a_value_that_must_be_static_is_declined_on_the_first_call():
    x, n = pt.vector("x"), pt.scalar("n", dtype="int64")
    run = _graph([x, n], [pt.set_subtensor(x[:n], 0.0)]).runner(BACKENDS["pytensor-jax"], 0)
    with pytest.raises(Declined, match="must be static"):
        run([np.ones(3), np.array(2)])


def test_anything_else_the_backend_raises_is_its_result():
    assert not untraceable(ValueError("Non-hashable static arguments are not supported"))
    assert not untraceable(IndexError("index 5 is out of bounds"))
    assert not untraceable(TypeError("unsupported operand"))
    assert untraceable(TypeError("Shapes must be 1D sequences of concrete values of integer type"))


def test_the_declaration_withdraws_zero_signs_only():
    assert not SEMANTICS.signed_zeros
    assert not SEMANTICS.declines, "no dtype is declined: float16 runs on XLA"
    assert BACKENDS["pytensor-jax"].semantics is BACKENDS["pytensor-jax-opt"].semantics


def test_flushed_subnormals_read_as_zeros_of_their_sign():
    tiny32 = np.float32(1e-45)
    values = np.array([tiny32, -tiny32, 1.0, 0.0], np.float32)
    out = flushed(values, frozenset({"float32"}))
    assert out.tolist() == [0.0, 0.0, 1.0, 0.0]
    assert np.signbit(out).tolist() == [False, True, False, False]
    assert flushed(values, frozenset({"float64"})) is values, "another dtype stays as it is"
    assert holds_subnormals([values], frozenset({"float32"}))
    assert not holds_subnormals([np.array([np.finfo(np.float32).smallest_normal])],
                                frozenset({"float32"}))


def test_a_backend_that_flushes_may_return_zero_for_a_subnormal_result():
    expected, actual = [np.array([1e-310, 1.0])], [np.array([0.0, 1.0])]
    tol = Tol(rtol=1e-10, atol=1e-320)
    assert not compare(expected, actual, tol, backend="b").ok, "a subnormal is a value"
    assert compare(expected, actual, tol, backend="b",
                   flushes_subnormals=frozenset({"float64"})).ok
    # a normal number is never read as zero
    assert not compare([np.array([1e-300])], [np.array([0.0])], tol, backend="b",
                       flushes_subnormals=frozenset({"float64"})).ok


def test_a_subnormal_input_read_as_zero_is_judged_right_and_a_wrong_value_is_not():
    """x * 2**60 of a subnormal x: JAX reads x as zero (DAZ), the reference does not, and the
    result is a normal number; the harness compares against the reference on x read as zero."""
    from conformance.core.harness import Harness, Spec
    from conformance.registry import Case, Row
    from conformance.strategies import ANY, elemwise

    row = Row("times_2_60", lambda x: x * np.float64(2.0 ** 60), elemwise(ANY), ("float64",))
    case = Case((np.array([5e-324, 1.0]),), ((None,),))
    spec = Spec(row, "float64", 18, ("pytensor-py", "pytensor-jax"))
    outcome = Harness(lambda *a, **k: None).run(spec, case)
    (verdict,) = outcome.verdicts
    assert verdict.comparison.ok, verdict.comparison.message
    assert outcome.expected[0][0] != 0, "the reference keeps the subnormal"


def test_each_element_may_agree_with_either_reading_of_the_inputs():
    from conformance.core.oracle import either_expectation

    f64 = frozenset({"float64"})
    tol = Tol(rtol=1e-12, atol=0.0)
    expected, alternative = [np.array([-np.inf, 1.0])], [np.array([np.nan, 2.0])]
    # element 0 agrees with the inputs read as zeros, element 1 with the inputs as given
    right = [np.array([np.nan, 1.0])]
    assert compare(either_expectation(expected, alternative, right, tol, f64), right, tol,
                   backend="b").ok
    wrong = [np.array([np.nan, 3.0])]
    assert not compare(either_expectation(expected, alternative, wrong, tol, f64), wrong, tol,
                       backend="b").ok
    assert either_expectation(expected, ValueError("raised"), right, tol, f64) is expected
