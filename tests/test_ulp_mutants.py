"""Textbook log1p and expm1, ``log(1 + x)`` and ``exp(x) - 1``, are right on every special
value and inside any absolute tolerance, yet wrong by up to millions of ulps at small |x|:
the derandomized ``ci`` run must fail on them, blame whoever computes them (the converter,
tests/cancelling_converter.py; PyTensor's Numba dispatch, tests/inject_numba_cancellation.py)
and shrink to a small magnitude; the rows themselves pass. Only those rows and the backends
each check needs run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST = "conformance/test_conformance.py::test_op"


def conformance(tests, backends, tmp_path: Path, extra=()):
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'tests'}{os.pathsep}{ROOT}",
           "CONFORMANCE_PROFILE": "ci"}
    # a cache of the run's own: these runs fail on purpose, which a user's next run in the
    # checkout must not inherit
    cmd = [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:randomly",
           "-o", f"cache_dir={tmp_path.parent / '.pytest_cache'}", "--report-dir", str(tmp_path),
           "--backends", ",".join(backends), *extra, *(f"{TEST}[{t}]" for t in tests)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    doc = json.loads((tmp_path / "results.json").read_text())
    return proc, {t["test"]: t for t in doc["tests"]}


def magnitudes(failure: dict) -> list[float]:
    """The magnitudes of the (shrunk) failing case's inputs."""
    return [abs(float(v)) for x in failure["inputs"]
            for v in np.ravel(np.asarray(x, dtype=object)).tolist()]


def assert_caught(proc, found: dict, tests, blame: str, backend: str):
    assert proc.returncode == 1, proc.stdout[-3000:]
    for test in tests:
        record = found[test]
        failure = record["failure"]
        assert record["outcome"] == "failed" and failure["blame"] == blame, (test, failure)
        # the oracle's words, the error in ulps beside the absolute one
        assert f"{backend}: " in failure["message"] and "abs err" in failure["message"], failure
        assert " ulp > 4 ulp)" in failure["message"], failure["message"]
        shrunk = magnitudes(failure)
        assert len(shrunk) <= 2 and any(0 < m < 1e-3 for m in shrunk), (test, failure["inputs"])


def test_textbook_formulas_in_the_converter_fail_blamed_on_the_converter(tmp_path):
    tests = ("log1p[float32]", "log1p[float64]", "expm1[float32]", "expm1[float64]")
    proc, found = conformance(tests, ("pytensor-py", "onnxruntime", "onnx-reference"), tmp_path,
                              extra=("--converter", "cancelling_converter:textbook"))
    assert_caught(proc, found, tests, "converter", "onnxruntime")


def test_textbook_kernels_in_numba_fail_blamed_on_pytensor(tmp_path):
    """float64 only: Numba computes a float32 log(1.0 + x) in double, which is close to right."""
    tests = ("log1p[float64]", "expm1[float64]")
    proc, found = conformance(tests, ("pytensor-py", "pytensor-numba", "onnxruntime"), tmp_path,
                              extra=("-p", "inject_numba_cancellation"))
    assert_caught(proc, found, tests, "pytensor", "pytensor-numba")
    assert all("onnxruntime:" not in found[t]["failure"]["message"] for t in tests)


@pytest.mark.parametrize("tests", [("log1p[float32]", "log1p[float64]", "expm1[float32]",
                                    "expm1[float64]")])
def test_the_rows_pass_unmutated(tmp_path, tests):
    proc, found = conformance(
        tests, ("pytensor-py", "pytensor-numba", "onnxruntime", "onnx-reference"), tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert all(found[t]["outcome"] == "passed" for t in tests), {t: found[t] for t in tests}
