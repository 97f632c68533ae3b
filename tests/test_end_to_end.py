"""The whole pipeline judged from outside: a deliberately wrong converter rule must make the
conformance run fail, with a shrunk counterexample in the terminal, the results and the report,
and a repro bundle that replays."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = "conformance/test_conformance.py"


def conformance(*args, tmp_path: Path, converter="converter:to_onnx", env=None):
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'tests'}{os.pathsep}{ROOT}",
               CONFORMANCE_PROFILE="ci", **(env or {}))
    # pytest's cache next to the report folder, never the checkout's: a test run's rows would
    # change where the next real run places them (conformance.session.schedule); later -o wins
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly",
           "-o", f"cache_dir={tmp_path.parent / '.pytest_cache'}",
           "--report-dir", str(tmp_path), "--converter", converter, *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("broken")
    proc = conformance("-n", "0", f"{TESTS}::test_op[exp[float64]]", "--opsets", "default",
                       tmp_path=tmp, converter="broken_converter:to_onnx")
    return proc, tmp


def test_wrong_rule_fails_the_run_with_a_shrunk_counterexample(broken_run):
    proc, tmp = broken_run
    assert proc.returncode == 1, proc.stdout[-3000:]
    out = proc.stdout
    assert "Falsifying example" in out or "Failing test case" in out
    assert "@reproduce_failure" in out
    assert "onnxruntime: out=-inf but pytensor-py=1.0" in out
    assert "blame: converter" in out
    (test,) = json.loads((tmp / "results.json").read_text())["tests"]
    failure = test["failure"]
    # exp and log first differ everywhere, so shrinking must reach the smallest case: one 0-d zero.
    assert failure["input_shapes"] == [[]] and failure["inputs"] == [0.0]
    assert failure["blame"] == "converter"
    html = (tmp / "conformance.html").read_text()
    assert "exp[float64]" in html and "exp(float64[])" in html and failure["repro"] in html


def test_the_bundle_replays_and_keeps_failing(broken_run):
    _, tmp = broken_run
    bundle = tmp / "repro" / "exp-float64"
    assert (bundle / "model.onnx").is_file() and (bundle / "inputs.npz").is_file()
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'tests'}{os.pathsep}{ROOT}")
    replay = [sys.executable, "-m", "conformance", "repro", str(bundle)]
    # the bundle records the converter that made it, and replays with it by default
    still = subprocess.run(replay, cwd=ROOT, env=env, capture_output=True, text=True)
    assert still.returncode == 1 and "blame: converter" in still.stdout, still.stdout
    fixed = subprocess.run([*replay, "--converter", "converter:to_onnx"], cwd=ROOT, env=env,
                           capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stdout
    standalone = subprocess.run([sys.executable, str(bundle / "repro.py")], capture_output=True,
                                text=True)
    assert standalone.returncode == 1 and "still disagrees" in standalone.stdout


def test_xdist_and_serial_runs_give_the_same_outcomes(tmp_path):
    select = [f"{TESTS}::test_op[add[int8]]", f"{TESTS}::test_op[add[float32]]",
              "--opsets", "default"]
    serial = conformance("-n", "0", *select, tmp_path=tmp_path / "serial")
    parallel = conformance("-n", "2", *select, tmp_path=tmp_path / "parallel")
    assert serial.returncode == parallel.returncode == 0, serial.stdout[-2000:]

    def outcomes(folder):
        doc = json.loads((folder / "results.json").read_text())
        return {t["test"]: t["outcome"] for t in doc["tests"]}

    assert outcomes(tmp_path / "serial") == outcomes(tmp_path / "parallel")
    assert len(outcomes(tmp_path / "serial")) == 2


def test_another_opset_leaves_the_pytensor_backends_to_the_first(tmp_path):
    proc = conformance("-n", "0", f"{TESTS}::test_op[matmul[float64]]",
                       f"{TESTS}::test_op[matmul[float64-opset18]]", "--opsets", "default,18",
                       tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    found = {t["test"]: t for t in json.loads((tmp_path / "results.json").read_text())["tests"]}
    first, other = found["matmul[float64]"], found["matmul[float64-opset18]"]
    assert {"pytensor-c", "pytensor-c-opt"} <= set(first["backends"])
    assert set(other["backends"]) == {"onnxruntime", "onnx-reference", "onnxruntime-rewritten",
                                      "pytensor-onnx"}
    # a record only pytensor-c-opt shows is judged at the first opset, and the other one,
    # where c-opt does not run, neither judges it nor fails for want of it
    reason = "the default rewrites reshape an empty batch"
    assert any(k["reason"].startswith(reason) for k in first["known"]), first["known"]
    assert not any(k["reason"].startswith(reason) for k in other["known"]), other["known"]
    # whether the other opset sees a divergence at all depends on its cases' values
    assert first["outcome"] == "xfailed" and other["outcome"] in ("xfailed", "passed"), (
        first["outcome"], other["outcome"])
