"""Where only ONNX Runtime fails, blame reads what it raised: a missing kernel
(NOT_IMPLEMENTED) is its gap; a model it refuses at load (INVALID_ARGUMENT, INVALID_GRAPH,
FAIL), or at run because the model breaks a spec rule the kernel enforces (Clip's scalar
``min``), is the converter's. The injected converter is tests/nonscalar_clip_converter.py."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conformance.backends import BACKENDS, Graph
from conformance.backends.ort_status import OrtError, Stage, Status, broken_rule
from conformance.core.blame import classify
from conformance.registry import Blame

ROOT = Path(__file__).resolve().parents[1]
TEST = "conformance/test_conformance.py::test_op"
ALL = [b for b in BACKENDS if b != "pytensor-py"]
PLAIN = ["onnxruntime", "onnxruntime-noopt"]
CLIP_RULE = "Clip's input 'min' must be a scalar (a tensor of empty shape)"
#: ONNX Runtime's status and the node it names first, then the rule the model breaks there
REFUSED = ("Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running "
           "Clip node. Name:'' (the model breaks the ONNX spec on these inputs: "
           f"{CLIP_RULE}, but ")


def error(status: Status, stage: Stage, broken: str | None = None) -> OrtError:
    return OrtError.named("Fail", status, stage, f"[ONNXRuntimeError] : 1 : {status} : x",
                          broken)


@pytest.mark.parametrize(("raised", "blame"), [
    ({b: error(Status.NOT_IMPLEMENTED, Stage.LOAD) for b in PLAIN}, Blame.ONNXRUNTIME),
    ({b: error(Status.NOT_IMPLEMENTED, Stage.RUN) for b in PLAIN}, Blame.ONNXRUNTIME),
    ({b: error(Status.INVALID_GRAPH, Stage.LOAD) for b in PLAIN}, Blame.CONVERTER),
    ({b: error(Status.INVALID_ARGUMENT, Stage.LOAD) for b in PLAIN}, Blame.CONVERTER),
    ({b: error(Status.FAIL, Stage.LOAD) for b in PLAIN}, Blame.CONVERTER),
    ({b: error(Status.RUNTIME_EXCEPTION, Stage.LOAD) for b in PLAIN}, Blame.ONNXRUNTIME),
    # a kernel failing on a model that breaks no rule: ONNX Runtime's
    ({b: error(Status.FAIL, Stage.RUN) for b in PLAIN}, Blame.ONNXRUNTIME),
    ({b: error(Status.INVALID_ARGUMENT, Stage.RUN) for b in PLAIN}, Blame.ONNXRUNTIME),
    ({b: error(Status.FAIL, Stage.RUN, "a rule") for b in PLAIN}, Blame.CONVERTER),
    # a value that differs says nothing about the model
    ({b: [np.zeros(1)] for b in PLAIN}, Blame.ONNXRUNTIME),
], ids=["not-implemented-load", "not-implemented-run", "invalid-graph-load",
        "invalid-argument-load", "fail-load", "runtime-exception-load", "fail-run",
        "invalid-argument-run", "fail-run-rule-broken", "wrong-value"])
def test_blame_reads_onnxruntimes_status(raised, blame):
    assert classify(PLAIN, ALL, actual=raised) is blame


def test_a_load_refusal_by_the_optimized_session_alone_is_the_optimizers():
    raised = {"onnxruntime": error(Status.INVALID_GRAPH, Stage.LOAD), "onnxruntime-noopt": [],
              "onnx-reference": []}
    assert classify(["onnxruntime"], ALL, actual=raised) is Blame.ONNXRUNTIME_OPTIMIZER
    # without a session that loads it, nothing says the model is fine (the default backends)
    default = [b for b in ALL if b != "onnxruntime-noopt"]
    assert classify(["onnxruntime"], default, actual=raised) is Blame.CONVERTER


def test_a_broken_rule_at_run_is_the_converters_in_any_session():
    raised = {"onnxruntime": error(Status.FAIL, Stage.RUN, "a rule")}
    assert classify(["onnxruntime"], ALL, actual=raised) is Blame.CONVERTER
    assert classify(["onnxruntime"], ALL) is Blame.ONNXRUNTIME_OPTIMIZER


def _model(node: onnx.NodeProto, inputs: list, output) -> onnx.ModelProto:
    graph = helper.make_graph([node], "g", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _raised(model: onnx.ModelProto, values) -> BaseException:
    graph = Graph([], [], lambda inputs, outputs, *, opset: model)
    with pytest.raises(OrtError) as info:
        BACKENDS["onnxruntime"].prepare(graph, 21)(values)
    return info.value


def test_a_missing_kernel_stays_onnxruntimes():
    # ONNX Runtime's CPU provider has no float64 Erf: the session is refused at load
    x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [None])
    y = helper.make_tensor_value_info("y", TensorProto.DOUBLE, [None])
    raised = _raised(_model(helper.make_node("Erf", ["x"], ["y"]), [x], y), [np.ones(2)])
    assert (raised.status, raised.stage, raised.refuses_model) == (
        Status.NOT_IMPLEMENTED, Stage.LOAD, False)
    assert type(raised).__name__ == "NotImplemented"  # as ONNX Runtime's, for records' match
    assert "NOT_IMPLEMENTED" in str(raised)
    actual = {"onnxruntime": raised, "onnxruntime-noopt": raised}
    assert classify(PLAIN, ALL, actual=actual) is Blame.ONNXRUNTIME


def _clip(min_shape: list) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None])
    lo = helper.make_tensor_value_info("lo", TensorProto.FLOAT, min_shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])
    return _model(helper.make_node("Clip", ["x", "lo"], ["y"]), [x, lo], y)


def test_a_non_scalar_clip_min_refused_at_run_is_the_converters():
    model = _clip([None, None])  # the checker cannot tell: only the run's shapes show it
    raised = _raised(model, [np.ones((2, 2), np.float32), np.zeros((1, 1), np.float32)])
    assert (raised.status, raised.stage, raised.refuses_model) == (
        Status.FAIL, Stage.RUN, True)
    assert f"{CLIP_RULE}, but 'lo' has shape [1, 1]" in raised.broken
    assert f"{type(raised).__name__}: {raised}".startswith(
        f"{REFUSED}'lo' has shape [1, 1]) Status Message: "), str(raised)
    assert classify(["onnxruntime"], ["onnxruntime", "onnx-reference"],
                    actual={"onnxruntime": raised}) is Blame.CONVERTER
    # carried whole from a child process (--isolate)
    again = pickle.loads(pickle.dumps(raised))
    assert (type(again).__name__, again.status, again.stage, again.broken, str(again)) == (
        "Fail", raised.status, raised.stage, raised.broken, str(raised))


def test_the_rule_is_looked_for_on_the_runs_shapes_in_the_node_onnxruntime_names():
    model = _clip([None, None])
    assert CLIP_RULE in broken_rule(model, [(2, 2), (1, 1)])
    assert broken_rule(model, [(2, 2), ()]) is None
    assert broken_rule(model, [(2, 2), (1, 1)], "Add") is None  # ONNX Runtime named an Add
    # strict shape inference on the bound shapes: operands that cannot broadcast
    a, b = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [None]) for n in "ab")
    add = _model(helper.make_node("Add", ["a", "b"], ["c"]), [a, b],
                 helper.make_tensor_value_info("c", TensorProto.FLOAT, [None]))
    assert broken_rule(add, [(2,), (2,)]) is None
    assert "strict shape inference on these input shapes fails" in broken_rule(add, [(2,), (3,)])
    assert broken_rule(add, [(2,), (3,)], "Add") is not None
    assert broken_rule(add, [(2,), (3,)], "Clip") is None


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "isolate"])
def test_a_spec_invalid_clip_that_onnxruntime_rejects_is_blamed_on_the_converter(
        tmp_path, isolate):
    """The reference evaluator runs the model, ONNX Runtime refuses it at run time: without
    reading its status and the rule, the harness would blame onnxruntime."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
           "-n", "0", "--opsets", "default", "--report-dir", str(tmp_path),
           "--converter", "nonscalar_clip_converter:to_onnx", f"{TEST}[clip[float32]]",
           *(["--isolate"] if isolate else [])]
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'tests'}{os.pathsep}{ROOT}",
               CONFORMANCE_PROFILE="ci")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    test = {t["test"]: t for t in doc["tests"]}["clip[float32]"]
    assert test["outcome"] == "failed", test
    failure = test["failure"]
    assert failure["blame"] == "converter", failure
    message = failure["message"]
    assert f"onnxruntime raised {REFUSED}" in message, message
    assert "onnx-reference" not in message, message  # the reference evaluator ran it
