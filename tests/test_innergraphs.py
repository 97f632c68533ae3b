"""OpFromGraph inlined for the C batches: the inlined graph computes what the op computes on
the backend that compiles it, with and without rewrites."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.mode import Mode

from conformance.compile.innergraphs import inlined
from converter import compat, function_graph

# inf - inf is nan; PyTensor's rewrites fold x - x to zeros first
VALUES = np.array([np.inf, 1.0])


def graph():
    a = pt.dvector("a")
    x = pt.dvector("x")
    return x, OpFromGraph([a], [a - a])(x) * 2


def run(inputs, outputs, optimizer=None):
    fn = pytensor.function(inputs, outputs, mode=Mode(linker="cvm", optimizer=optimizer),
                           accept_inplace=True)
    return fn(VALUES.copy())[0]


def ofg_nodes(outputs) -> list:
    fgraph = pytensor.graph.fg.FunctionGraph(outputs=outputs, clone=False)
    return [n for n in fgraph.apply_nodes if isinstance(n.op, OpFromGraph)]


def test_a_rewritten_graph_inlines_each_inner_graph_as_its_own_function_rewrites_it():
    x, y = graph()
    # the optimizing C backend: the outer graph rewritten, the op's inner function too
    want = run([x], [y], "fast_run")
    np.testing.assert_array_equal(want, [0.0, 0.0])
    rewritten = function_graph(pytensor.function([x], y, mode=Mode(linker="py",
                                                                   optimizer="fast_run")))
    assert ofg_nodes(rewritten[1]), "the outer rewrites keep the op"
    inputs, outputs = inlined(*rewritten, rewritten=True)
    assert not ofg_nodes(outputs)
    np.testing.assert_array_equal(run(inputs, outputs), want)
    assert ofg_nodes(rewritten[1]), "the rewritten graph itself is left as it was"


def test_an_unrewritten_graph_inlines_the_inner_graph_as_built():
    x, y = graph()
    inputs, outputs = inlined([x], [y])
    assert not ofg_nodes(outputs)
    # as the unoptimized backend runs the op: inf - inf
    np.testing.assert_array_equal(run(inputs, outputs), [np.nan, 0.0])


@pytest.mark.skipif(compat.builds("inner_graph_baked_by_outer"),
                    reason="from PyTensor 3.3 on the outer rewrites bake the inner graph")
def test_the_inner_graph_is_rewritten_as_the_ops_own_function_rewrites_it_but_not_linked():
    from copy import copy

    from pytensor.compile.mode import get_mode

    from conformance.compile.innergraphs import _rewritten_inner

    x = pt.matrix("x", dtype="float32")
    op = pt.pad(x, [[1, 3], [2, 0]], mode="reflect").owner.op  # Scans inside: slow to link
    inputs, outputs = _rewritten_inner(op)
    # the op's own compile, linked (by the Python linker, whose rewrites the batches take)
    linked = copy(op)
    linked.kwargs = {**op.kwargs, "mode": Mode(
        linker="py", optimizer=get_mode(op.kwargs.get("mode")).provided_optimizer)}
    linked._fn = None
    want_inputs, want_outputs = function_graph(linked.fn)
    assert any(n.op.__class__.__name__ == "Scan" for n in linked.fn.maker.fgraph.apply_nodes)
    assert len(inputs) == len(want_inputs)
    # each Scan compiles its own inner graph when it runs (PyTensor 2.38 rewrites it in place
    # then), so the outer graphs are compared
    assert outer(outputs) == outer(want_outputs)


@pytest.mark.skipif(not compat.builds("inner_graph_baked_by_outer"),
                    reason="before PyTensor 3.3 the op rewrites its inner graph itself")
def test_an_inner_graph_the_outer_rewrites_baked_is_taken_as_it_is():
    from conformance.compile.innergraphs import _rewritten_inner

    x, y = graph()
    rewritten = function_graph(pytensor.function([x], y, mode=Mode(linker="py",
                                                                   optimizer="fast_run")))
    [node] = ofg_nodes(rewritten[1])
    inputs, outputs = _rewritten_inner(node.op)
    # the outer fast_run rewrites folded a - a to zeros inside the op
    assert "Sub" not in outer(outputs), outer(outputs)
    assert len(inputs) == 1


def outer(outputs) -> str:
    return pytensor.dprint(outputs, file="str", print_type=True).split("Inner graphs:")[0]


def test_an_input_that_is_also_an_output_stays_itself_beside_an_inner_graph():
    from conformance.compile.innergraphs import without_inner_rewrites

    # a random graph's output may be one of its inputs (specify_shape(z, ()) returns z)
    x, y = graph()
    z = pt.dvector("z")
    outputs = without_inner_rewrites([z, y], "py")
    assert outputs[0] is z and outputs[1] is not y
    fn = pytensor.function([x, z], outputs, mode=Mode(linker="py", optimizer=None))
    np.testing.assert_array_equal(fn(VALUES.copy(), VALUES[::-1].copy())[0], VALUES[::-1])
