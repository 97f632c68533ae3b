"""Judging a converter other than the project's: a clean refusal is "unsupported", per layout,
and never hides a wrong value elsewhere in the row; a refusal never agrees with PyTensor
raising; an invalid model is the converter's fault; blame ignores expected divergences; a
bundle replays with the converter that made it; the project's own converter may not refuse
its rows. The converters are in tests/partial_converter.py, tests/invalid_model_converter.py
and tests/refusing_project_converter.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytensor.tensor as pt
import pytest
from hypothesis import strategies as st
from pytensor.raise_op import Assert

from conformance.core.harness import CaseOutcome, CellOutcome, Harness, Spec, Verdict
from conformance.core.oracle import Comparison
from conformance.registry import Blame, Case, Known, Row
from converter.errors import UnsupportedOpError

ROOT = Path(__file__).resolve().parents[1]
TEST = "conformance/test_conformance.py::test_op"
ENV = dict(os.environ, PYTHONPATH=f"{ROOT / 'tests'}{os.pathsep}{ROOT}")


def conformance(tmp_path: Path, converter: str, tests, *args):
    """A derandomized (ci) run of ``tests`` (row[dtype] ids) at the default opset."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
           "-n", "0", "-rs", "--opsets", "default", "--report-dir", str(tmp_path),
           "--converter", converter, *(f"{TEST}[{t}]" for t in tests), *args]
    env = dict(ENV, CONFORMANCE_PROFILE="ci")
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def results(folder: Path) -> dict[str, dict]:
    return {t["test"]: t for t in json.loads((folder / "results.json").read_text())["tests"]}


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "isolate"])
def test_a_wrong_value_behind_a_refused_simplest_layout_is_found_and_shrunk(tmp_path, isolate):
    # refuses_0d refuses exp's simplest layout (a 0-d input) and emits Log for Exp elsewhere
    proc = conformance(tmp_path, "partial_converter:refuses_0d", ["exp[float64]"],
                       *(["--isolate"] if isolate else []))
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    test = results(tmp_path)["exp[float64]"]
    failure = test["failure"]
    assert test["outcome"] == "failed", test["outcome"]
    assert "onnxruntime: out[0]=-inf but pytensor-py=1.0" in failure["message"], failure
    assert "NotImplementedError" not in failure["message"], failure["message"]
    assert failure["blame"] == "converter"
    # shrunk past the refused 0-d layout to the smallest one it converts
    assert failure["input_shapes"] == [[1]] and failure["inputs"] == [[0.0]], failure
    unsupported = test["unsupported"]
    assert unsupported["layouts"] == ["exp(float64[])"], unsupported
    assert unsupported["examples"] > 0 and unsupported["converted"] > 0, unsupported
    assert "NotImplementedError: refuses_0d" in unsupported["message"]
    cell = test["backends"]["onnxruntime"]
    assert cell["unsupported"] > 0 and cell["fail"] > 0, cell
    if not isolate:
        bundle = Path(failure["bundle"])
        meta = json.loads((bundle / "meta.json").read_text())
        assert meta["converter"] == {"spec": "partial_converter:refuses_0d", "version": None}
        replay = [sys.executable, "-m", "conformance", "repro", str(bundle)]
        again = subprocess.run(replay, cwd=ROOT, env=ENV, capture_output=True, text=True)
        assert again.returncode == 1 and "still failing; blame: converter" in again.stdout, (
            again.stdout + again.stderr)
        ours = subprocess.run([*replay, "--converter", "converter:to_onnx"], cwd=ROOT, env=ENV,
                              capture_output=True, text=True)
        assert ours.returncode == 0 and "the failure is gone" in ours.stdout, ours.stdout


def test_a_partial_converter_is_judged_on_what_it_converts(tmp_path):
    # all but add are refused (not Elemwise). The others have active records on the ONNX
    # backends (scalar_add's on pytensor-c too) whose examples were refused: unjudged, not a
    # strict XPASS; and no record excuses a refusal, not even solve's, whose match
    # ("shape=") the refusal's text happens to hold
    tests = ["add[float64]", "sum[float64]", "sum[int64]", "max[bool]", "scalar_add[float16]",
             "solve[float16]"]
    proc = conformance(tmp_path, "partial_converter:to_onnx", tests)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 passed, 5 skipped" in proc.stdout, proc.stdout[-1500:]
    found = results(tmp_path)
    assert found["add[float64]"]["outcome"] == "passed"
    for tid in tests[1:]:
        assert found[tid]["outcome"] == "unsupported", (tid, found[tid].get("failure"))
        assert found[tid]["unsupported"]["converted"] == 0
        assert "UnsupportedOpError" in found[tid]["unsupported"]["message"]
        assert found[tid]["backends"]["onnxruntime"]["unsupported"] == found[tid]["examples"]
    assert "unsupported: the converter under test refused all" in proc.stdout
    html = (tmp_path / "conformance.html").read_text()
    assert 'data-outcome="unsupported"' in html
    assert 'class="unsupported" data-b="onnxruntime"' in html


def test_a_wrong_rule_of_a_partial_converter_fails_the_run(tmp_path):
    proc = conformance(tmp_path, "partial_converter:to_onnx", ["maximum[float64]"])
    assert proc.returncode == 1, proc.stdout[-3000:]
    failure = results(tmp_path)["maximum[float64]"]["failure"]
    # Min in place of Max: the shrunk case is a zero beside a positive number (1.0, or a
    # small magnitude of the value strategies' ladder)
    assert re.search(r"onnxruntime: out=0\.0 but pytensor-py=(1\.0|1e-\d+) ", failure["message"]), \
        failure["message"]
    assert failure["blame"] == "converter", failure


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "isolate"])
def test_an_invalid_model_is_blamed_on_the_converter(tmp_path, isolate):
    # ONNX Runtime refuses the model and the reference evaluator runs it: unchecked, the
    # harness would blame onnxruntime
    proc = conformance(tmp_path, "invalid_model_converter:to_onnx", ["exp[float64]"],
                       *(["--isolate"] if isolate else []))
    assert proc.returncode == 1, proc.stdout[-3000:]
    failure = results(tmp_path)["exp[float64]"]["failure"]
    assert failure["blame"] == "converter", failure
    assert "InvalidModel: the converter's model fails onnx.checker.check_model(full_check=True)" \
        in failure["message"], failure["message"]


def test_the_project_converter_may_not_refuse_a_row_it_claims(tmp_path):
    proc = conformance(tmp_path, "refusing_project_converter:to_onnx", ["exp[float64]"])
    assert proc.returncode == 1, proc.stdout[-3000:]
    test = results(tmp_path)["exp[float64]"]
    assert test["outcome"] == "failed"
    message = test["failure"]["message"]
    assert message.startswith("converter.to_onnx refused"), message
    assert "a row it claims" in message and "UnsupportedOpError" in message
    assert test["failure"]["blame"] == "converter"


# -- in-process: a refusal or a failed conversion never agrees with PyTensor raising ----------

RAISING = Row("always_raises", lambda x: Assert("x must be negative")(x, pt.all(pt.lt(x, 0))),
              lambda dtype: st.nothing(), ("float64",))
CASE = Case((np.ones(2),), ((None,),))
SPEC = Spec(RAISING, "float64", 18, ("pytensor-py", "onnxruntime"))


def _refuses(inputs, outputs, *, opset):
    raise UnsupportedOpError(outputs[0].owner.op, [i.type for i in inputs], "not today")


def _crashes(inputs, outputs, *, opset):
    raise ValueError("the converter is broken")


def test_a_refusal_is_unsupported_not_agreement_with_the_reference_raising():
    outcome = Harness(_refuses).run(SPEC, CASE)
    assert isinstance(outcome.expected, AssertionError)
    (verdict,) = outcome.verdicts
    assert verdict.outcome is CellOutcome.UNSUPPORTED, verdict
    assert not outcome.unexpected and outcome.conversion_error is None


def test_a_failed_conversion_is_not_agreement_with_the_reference_raising():
    outcome = Harness(_crashes).run(SPEC, CASE)
    (verdict,) = outcome.verdicts
    assert verdict.outcome is CellOutcome.FAIL, verdict
    assert "a failed conversion is not agreement" in verdict.comparison.message
    assert outcome.blame is Blame.CONVERTER


def test_blame_ignores_backends_whose_divergence_was_recorded():
    c_record = Known(("pytensor-c",), "a recorded C divergence", Blame.PYTENSOR,
                     example=lambda dtype: CASE)
    verdicts = [Verdict("pytensor-c", Comparison(False, "c"), c_record, (c_record,)),
                Verdict("onnxruntime", Comparison(False, "ort")),
                Verdict("onnx-reference", Comparison(False, "ref"))]
    outcome = CaseOutcome(SPEC, CASE, None, {}, verdicts)
    assert outcome.blame is Blame.CONVERTER
