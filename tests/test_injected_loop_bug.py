"""A wrong carried dependency in the converter's Loop (tests/injected_loop_bug.py: a one-tap
recurrence reads the value of two steps back) must fail the derandomized ``ci`` run of the
random_graph row, whose graphs hold scans with random step functions, blamed on the
converter and shrunk to one scan of two steps with a small body."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST = "conformance/test_conformance.py::test_op[random_graph[float64]]"
# rows whose repetition changes a value (no x - x, which most steps would turn into a
# constant zero), and the two control kinds that carry a value from step to step
GRAPH_OPS = "neg,abs,add,scan_accumulate,scan_fold"


def run_ci(tmp_path: Path, converter: str | None):
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'tests'}{os.pathsep}{ROOT}",
           "CONFORMANCE_PROFILE": "ci"}
    cmd = [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:randomly",
           "-o", f"cache_dir={tmp_path / '.pytest_cache'}", "--report-dir", str(tmp_path),
           "--graph-ops", GRAPH_OPS, "--examples", "200",
           *(("--converter", converter) if converter else ()), TEST]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def record(folder: Path) -> dict:
    doc = json.loads((folder / "results.json").read_text())
    (found,) = [t for t in doc["tests"] if t["test"] == "random_graph[float64]"]
    return found


def steps_of(node, input_shapes: list) -> int | None:
    """How many steps a carrying scan node runs: its count, or the length of its sequence
    where that is a graph input (None where it is computed)."""
    name, operand_ids, params = node
    if name == "scan_accumulate":
        return dict(params)["steps"]
    first = operand_ids[0]
    return input_shapes[first][0] if first < len(input_shapes) else None


def test_a_wrong_loop_carried_value_fails_the_ci_run_shrunk(tmp_path):
    proc = run_ci(tmp_path, "injected_loop_bug:previous_but_one")
    assert proc.returncode == 1, proc.stdout[-3000:]
    found = record(tmp_path)
    failure = found["failure"]
    assert found["outcome"] == "failed" and failure["blame"] == "converter", failure
    assert "onnxruntime:" in failure["message"], failure["message"]
    nodes = dict(failure["params"])["nodes"]
    scans = [n for n in nodes if n[0] in ("scan_accumulate", "scan_fold")]
    assert scans, nodes
    # shrunk: the scan (and little else) of two steps, which the bug needs, and a small body
    assert len(nodes) <= 2, nodes
    assert steps_of(scans[0], failure["input_shapes"]) in (2, None), (nodes, failure)
    assert len(dict(scans[0][2])["body"]) <= 2, scans[0]


def test_the_same_run_passes_with_the_project_converter(tmp_path):
    """The control run: without the bug the same restricted graphs agree."""
    proc = run_ci(tmp_path, None)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert record(tmp_path)["outcome"] in ("passed", "xfailed")
