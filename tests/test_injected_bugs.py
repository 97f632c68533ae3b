"""Converter bugs that show on one special value only (tests/injected_bugs.py): the
derandomized ``ci`` run must fail on each, with a small counterexample that shows the value.

Random draws meet such values by luck; the special-value grid (conformance.strategies.grid)
and the signed-zero oracle make the run find them every time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST = "conformance/test_conformance.py::test_op"


def conformance(*tests, tmp_path: Path, bug: str | None, opsets: str = "default", extra=(),
                env=()):
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'tests'}{os.pathsep}{ROOT}",
           "CONFORMANCE_PROFILE": "ci", **dict(env)}
    # a cache of the session's own, as in test_end_to_end: these runs restrict random graphs
    # and fail on purpose, which a user's next run in the checkout must not inherit
    cmd = [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:randomly", "--opsets", opsets,
           "-o", f"cache_dir={tmp_path.parent / '.pytest_cache'}",
           "--report-dir", str(tmp_path),
           *(("--converter", f"injected_bugs:{bug}") if bug else ()), *extra,
           *(f"{TEST}[{t}]" for t in tests)]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def outcomes(folder: Path) -> dict:
    doc = json.loads((folder / "results.json").read_text())
    return {t["test"]: t for t in doc["tests"]}


def small(failure: dict) -> bool:
    """Shrunk (or, for a grid case, cut down) to at most two elements per input."""
    return all(int(np.prod(s)) <= 2 for s in failure["input_shapes"])


def flat(values) -> list:
    return [float(v) for v in np.ravel(np.asarray(values, dtype=object)).tolist()]


@pytest.mark.parametrize(("bug", "test", "message", "shows"), [
    ("nan_add", "add[float32]", r"=\S+ but pytensor-py=nan", np.isnan),
    ("minus_inf_tanh", "tanh[float64]", r"=1\.0 but pytensor-py=-1\.0",
     lambda v: np.isneginf(v)),
    ("negative_zero_mul", "mul[float64]", r"=0\.0 but pytensor-py=-0\.0 \(sign of zero differs\)",
     lambda v: v == 0),
], ids=["nan", "minus-inf", "negative-zero"])
def test_a_bug_on_one_special_value_fails_the_ci_run(tmp_path, bug, test, message, shows):
    proc = conformance(test, tmp_path=tmp_path, bug=bug)
    assert proc.returncode == 1, proc.stdout[-3000:]
    record = outcomes(tmp_path)[test]
    failure = record["failure"]
    assert record["outcome"] == "failed" and failure["blame"] == "converter", failure
    assert re.search(message, failure["message"]), failure["message"]
    assert small(failure), failure["input_shapes"]
    assert any(shows(np.float64(v)) for x in failure["inputs"] for v in flat(x)), failure["inputs"]


def test_negative_zero_is_caught_through_a_downstream_division(tmp_path):
    """+0.0 for -0.0 turns into +inf for -inf in a random graph; it must shrink to a few
    nodes (a product and what divides by it)."""
    proc = conformance("random_graph[float64]", tmp_path=tmp_path, bug="negative_zero_mul",
                       extra=("--graph-ops", "mul,true_div,reciprocal,neg,exp", "--examples",
                              "300"))
    assert proc.returncode == 1, proc.stdout[-3000:]
    failure = outcomes(tmp_path)["random_graph[float64]"]["failure"]
    nodes = dict(failure["params"])["nodes"]
    assert len(nodes) <= 3, nodes
    assert "mul" in {n[0] for n in nodes}, nodes


def test_a_tie_bug_at_opset_18_fails_that_opset_only(tmp_path):
    proc = conformance("round_half_to_even[float32]", "round_half_to_even[float32-opset18]",
                       tmp_path=tmp_path, bug="tie_round_opset18", opsets="default,18")
    assert proc.returncode == 1, proc.stdout[-3000:]
    found = outcomes(tmp_path)
    # xfailed: PyTensor's own C round_half_to_even loses -0.0 (a record of the row)
    assert found["round_half_to_even[float32]"]["outcome"] in ("passed", "xfailed")
    record = found["round_half_to_even[float32-opset18]"]
    assert record["outcome"] == "failed", record
    failure = record["failure"]
    assert small(failure), failure["input_shapes"]
    (x,) = (flat(v) for v in failure["inputs"])
    assert any(abs(v - np.trunc(v)) == 0.5 for v in x), x


def test_a_negative_index_bug_fails_the_ci_run(tmp_path):
    proc = conformance("subtensor[float32]", tmp_path=tmp_path, bug="negative_index")
    assert proc.returncode == 1, proc.stdout[-3000:]
    failure = outcomes(tmp_path)["subtensor[float32]"]["failure"]
    assert failure["blame"] == "converter", failure
    assert any(v < 0 for i in failure["inputs"][1:] for v in flat(i)), failure["inputs"]


def test_a_saved_failure_survives_the_tests_that_run_after_it(tmp_path):
    """Hypothesis saves a shrunk failure so that the next run starts from it. Every test runs
    the same inner property: sharing one database key, the next test (which passes) would
    replay that failure and delete it as fixed."""
    storage = tmp_path / "hypothesis"
    # a bug the random search cannot miss: Hypothesis saves what it shrinks, not the grid cases
    proc = conformance("add[float32]", "sub[float32]", tmp_path=tmp_path, bug="add_subtracts",
                       env={"HYPOTHESIS_STORAGE_DIRECTORY": str(storage),
                            # dev saves examples, also where Hypothesis sees a CI
                            "CONFORMANCE_PROFILE": "dev", "CI": "true"})
    found = outcomes(tmp_path)
    assert found["add[float32]"]["outcome"] == "failed", proc.stdout[-3000:]
    assert found["sub[float32]"]["outcome"] in ("passed", "xfailed"), found["sub[float32]"]
    saved = [p for p in (storage / "examples").rglob("*") if p.is_file()]
    assert saved, f"no saved example left in {storage / 'examples'} after the run"


def test_a_wrong_numba_kernel_fails_the_ci_run_blamed_on_pytensor(tmp_path):
    """PyTensor's Numba dispatch patched (tests/inject_numba_bug.py: tanh(-inf) = +1.0) in the
    child process where the Numba backends run: the grid's -inf finds it, on both Numba
    backends and no other, so PyTensor is to blame."""
    proc = conformance("tanh[float64]", tmp_path=tmp_path, bug=None,
                       extra=("-p", "inject_numba_bug", "--backends",
                              "pytensor-py,pytensor-numba,pytensor-numba-opt,onnxruntime"))
    assert proc.returncode == 1, proc.stdout[-3000:]
    failure = outcomes(tmp_path)["tanh[float64]"]["failure"]
    assert failure["blame"] == "pytensor", failure
    assert re.search(r"pytensor-numba: \S+=1\.0 but pytensor-py=-1\.0", failure["message"]), \
        failure["message"]
    assert "onnxruntime:" not in failure["message"], failure["message"]
    assert small(failure), failure["input_shapes"]
    assert any(np.isneginf(np.float64(v)) for x in failure["inputs"] for v in flat(x)), \
        failure["inputs"]
