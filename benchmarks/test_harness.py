"""Per-example harness overhead: ``Harness.run`` on a prepared graph against a bare loop
calling the same backends (compiled PyTensor functions, an ONNX Runtime session, the
reference evaluator) on the same inputs. A third loop calls the backends' prepared
``Runner`` closures, which splits the overhead into the runners' own guards and copies and
the harness's comparisons and bookkeeping."""

from __future__ import annotations

import pytest
from onnx.reference import ReferenceEvaluator

import converter
from benchmarks.graphs import HARNESS_CASES, ort_session
from conformance.backends import BACKENDS
from conformance.core.harness import Harness, Spec
from conformance.registries import row_named

#: the backends the bare loop calls (the optimized-graph pair of the default run is left out:
#: it would time PyTensor's rewrites and a second session, not the harness)
TIMED = ("pytensor-py", "pytensor-c", "onnxruntime", "onnx-reference")


def _bare_loop(graph, opset: int, values):
    """The same backend calls as the harness makes, without copies, guards or comparisons."""
    py = graph.function("py", None)
    c = graph.function("cvm", None)
    model = graph.onnx_model(opset)
    session, evaluator = ort_session(model), ReferenceEvaluator(model)
    feeds = dict(zip([i.name for i in model.graph.input], values, strict=True))

    def loop():
        return [py(*values), c(*values), session.run(None, feeds), evaluator.run(None, feeds)]

    return loop


def _runners_loop(graph, opset: int, backends, values):
    runners = [graph.runner(BACKENDS[name], opset) for name in backends]
    return lambda: [run(values) for run in runners]


@pytest.mark.parametrize("how", ["harness", "runners", "bare"])
@pytest.mark.parametrize("case_name", HARNESS_CASES)
def test_harness_overhead(benchmark, case_name, how):
    row_name, dtype, make_case = HARNESS_CASES[case_name]
    spec = Spec(row_named(row_name), dtype, converter.default_opset(), TIMED)
    case = make_case(dtype)
    harness = Harness(converter.to_onnx)
    outcome = harness.run(spec, case)  # prepares and compiles everything once
    assert not outcome.unexpected and outcome.conversion_error is None, outcome.failure_message()
    graph = harness.graph(spec, case)
    benchmark.group = f"harness {case_name}"
    benchmark.extra_info.update(kind="harness", case=case_name, how=how)
    if how == "harness":
        benchmark(harness.run, spec, case)
    elif how == "runners":
        benchmark(_runners_loop(graph, spec.opset, spec.backends, case.values))
    else:
        benchmark(_bare_loop(graph, spec.opset, case.values))
