"""ONNX Runtime runs a chain of float16 nodes in float32 and rounds once where it ends: a
declared semantic of its backends (``Semantics.widens``), judged against PyTensor's own graph
rebuilt in float32 (conformance.compile.widened), never against the converted model. The ONNX
reference evaluator computes float16 node by node and does not declare it: it is what catches
a converter that widens by mistake."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest

import converter
from conformance.backends import BACKENDS
from conformance.compile.widened import rounded, widened, widened_values
from conformance.core.harness import Harness, Spec
from conformance.registry import Case, Row
from conformance.strategies import ANY, elemwise

W = {"float16": "float32"}
ORT = ("onnxruntime", "onnxruntime-noopt", "onnxruntime-rewritten", "pytensor-onnx")
#: onnxruntime-rewritten and pytensor-onnx judge canonical cases only
JUDGED = ORT[:2]
#: x * y overflows float16 in the first element (90000), not in the second; x * y / z does not
VALUES = (np.array([300.0, 2.0], np.float16), np.array([300.0, 3.0], np.float16),
          np.array([60000.0, 4.0], np.float16))
ROW = Row("exp_x_times_y_over_z", lambda x, y, z: pt.exp(x * y / z), elemwise(ANY, ANY, ANY),
          ("float16",))
CASE = Case(VALUES, ((None,),) * 3)


def _python_linker(inputs, outputs, values):
    import pytensor
    from pytensor.compile.mode import Mode

    fn = pytensor.function(inputs, outputs, mode=Mode(linker="py", optimizer=None))
    return fn(*values)


def test_the_widened_graph_computes_the_float32_graph_rounded_once():

    x, y, z = (pt.tensor(n, dtype="float16", shape=(None,)) for n in "xyz")
    out = x * y / z
    (narrow,) = _python_linker([x, y, z], [out], VALUES)
    assert np.isinf(narrow[0]), "per node, float16's x * y overflows"
    inputs, outputs = widened([x, y, z], [out], W)
    assert [v.dtype for v in inputs] == ["float32"] * 3 and outputs[0].dtype == "float32"
    wide = _python_linker(inputs, outputs, widened_values(VALUES, W))
    (once,) = rounded(wide, ["float16"], [narrow])
    x32, y32, z32 = (v.astype(np.float32) for v in VALUES)
    assert once.dtype == np.float16
    np.testing.assert_array_equal(once, (x32 * y32 / z32).astype(np.float16))
    assert once[0] == np.float16(1.5)


def test_only_rounding_changes_the_sign_of_a_zero():
    """numpy's float32 maximum of opposite zeros picks the other zero than its float16 one:
    an exact zero keeps the reference's sign; a tiny value rounded to zero keeps its own."""
    x, y = pt.tensor("x", dtype="float16", shape=(None,)), pt.tensor("y", dtype="float16",
                                                                     shape=(None,))
    outs = [pt.maximum(x, y), x * y + np.float16(0.0)]
    values = (np.array([0.0, -(2.0**-13)], np.float16), np.array([-0.0, 2.0**-13], np.float16))
    narrow = _python_linker([x, y], outs, values)
    assert narrow[0][0] == 0 and not np.signbit(narrow[0][0]), "float16 max gives x1, +0.0"
    assert narrow[1][1] == 0 and not np.signbit(narrow[1][1]), "-0.0 (underflow) + 0.0"
    inputs, outputs = widened([x, y], outs, W)
    wide = _python_linker(inputs, outputs, widened_values(values, W))
    assert np.signbit(wide[0][0]), "numpy's float32 max gives x2, -0.0"
    maximum, product = rounded(wide, ["float16"] * 2, narrow)
    assert maximum[0] == 0 and not np.signbit(maximum[0]), "an exact zero keeps the reference's"
    assert product[1] == 0 and np.signbit(product[1]), "-2**-26 rounded once is -0.0"


def _judge(convert, backends=("pytensor-py", *JUDGED, "onnx-reference")):
    outcome = Harness(convert).run(Spec(ROW, "float16", 18, backends), CASE)
    return outcome, {v.backend: v.comparison for v in outcome.verdicts}


def test_onnx_runtime_s_float32_chain_is_right_and_the_reference_evaluator_s_too():
    outcome, verdicts = _judge(converter.to_onnx)
    assert np.isinf(outcome.expected[0][0]), "the reference overflows"
    for name in JUDGED:
        assert np.isfinite(outcome.actual[name][0][0]), f"{name} computes the chain in float32"
        assert verdicts[name].ok, verdicts[name].message
    assert verdicts["onnx-reference"].ok, verdicts["onnx-reference"].message


def _exp_to_log(inputs, outputs, *, opset):
    from model_corruption import exp_to_log

    return exp_to_log(converter.to_onnx(inputs, outputs, opset=opset))


def test_a_wrong_conversion_fails_on_onnx_runtime_and_the_reference_evaluator():
    _, verdicts = _judge(_exp_to_log)
    for name in (*JUDGED, "onnx-reference"):
        assert not verdicts[name].ok, name
    message = verdicts["onnxruntime"].message
    # log(1.5) where the reference overflows to exp(inf) and the float32 chain gives exp(1.5)
    assert "out[0]=0.4055" in message and "but pytensor-py=inf" in message, message
    assert message.endswith("nor does it agree with pytensor-py on the graph with float16 "
                            "computed in float32: out[0]=4.48046875"), message


def _widening_converter(inputs, outputs, *, opset):
    """Converts the graph computed in float32 behind float16 inputs and outputs: a converter
    that widens by mistake."""
    from pytensor.graph.replace import graph_replace

    wide_inputs, wide_outputs = widened(inputs, outputs, W)
    casts = {w: pt.cast(x, w.dtype) for w, x in zip(wide_inputs, inputs, strict=True)}
    narrow = [pt.cast(w, o.dtype) for w, o in zip(wide_outputs, outputs, strict=True)]
    return converter.to_onnx(inputs, graph_replace(narrow, casts), opset=opset)


def test_only_the_reference_evaluator_catches_a_converter_that_widens():
    _, verdicts = _judge(_widening_converter, ("pytensor-py", "onnxruntime", "onnx-reference"))
    assert verdicts["onnxruntime"].ok, "indistinguishable from what ONNX Runtime declares"
    assert not verdicts["onnx-reference"].ok
    assert "out[0]=4.48046875 but pytensor-py=inf" in verdicts["onnx-reference"].message


@pytest.mark.parametrize("name", ORT)
def test_the_onnx_runtime_backends_declare_float16_computed_in_float32(name):
    semantics = BACKENDS[name].semantics
    assert semantics.widens == W and "float32" in semantics.source


def test_no_other_backend_declares_widening():
    assert not BACKENDS["onnx-reference"].semantics.widens
    assert all(not b.semantics.widens for n, b in BACKENDS.items() if n not in ORT)
