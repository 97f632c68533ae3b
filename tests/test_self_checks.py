"""The harness judged by injected bugs: it must find them, shrink them, blame the right party,
survive crashes, and write bundles that replay in a fresh clone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST = "conformance/test_conformance.py::test_op"


def conformance(*args, tmp_path: Path, converter="converter:to_onnx", plugins=()):
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'tests'}{os.pathsep}{ROOT}",
               CONFORMANCE_PROFILE="ci")
    # the session's own cache (see test_injected_bugs): these runs fail on purpose
    cmd = [sys.executable, "-m", "pytest", "-n", "0", "--opsets", "default",
           "-o", f"cache_dir={tmp_path.parent / '.pytest_cache'}",
           "--report-dir", str(tmp_path),
           "--converter", converter,
           *(arg for p in plugins for arg in ("-p", p)), *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def failures(folder: Path) -> dict:
    doc = json.loads((folder / "results.json").read_text())
    return {t["test"]: t["failure"] for t in doc["tests"] if t["outcome"] == "failed"}


def test_a_bug_only_composition_shows_is_found_and_shrunk_to_three_nodes(tmp_path):
    proc = conformance(f"{TEST}[mul[float64]]", f"{TEST}[exp[float64]]",
                       f"{TEST}[random_graph[float64]]", "--graph-ops", "exp,mul,add,neg,sqr",
                       "--examples", "300", tmp_path=tmp_path,
                       converter="composition_bug:to_onnx")
    found = failures(tmp_path)
    assert list(found) == ["random_graph[float64]"], proc.stdout[-3000:]
    nodes = dict(found["random_graph[float64]"]["params"])["nodes"]
    assert len(nodes) <= 3, nodes
    assert {n[0] for n in nodes} >= {"exp", "mul"}
    assert 'row_named("exp")' in found["random_graph[float64]"]["code"]


@pytest.mark.parametrize(("where", "blame"), [
    ({"converter": "broken_converter:to_onnx"}, "converter"),
    ({"plugins": ["inject_ort_bug"]}, "onnxruntime"),
    ({"plugins": ["inject_reference_bug"]}, "onnx-reference"),
])
def test_blame_names_where_the_bug_was_injected(tmp_path, where, blame):
    proc = conformance(f"{TEST}[exp[float32]]", tmp_path=tmp_path, **where)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert f"blame: {blame}" in proc.stdout
    assert failures(tmp_path)["exp[float32]"]["blame"] == blame


def test_a_crashing_backend_becomes_a_recorded_failure_with_isolate(tmp_path):
    proc = conformance(f"{TEST}[exp[float64]]", "--isolate", tmp_path=tmp_path,
                       converter="crash_injector:to_onnx")
    assert proc.returncode == 1, proc.stdout[-3000:]
    failure = failures(tmp_path)["exp[float64]"]
    assert "crashed the process (killed by SIGABRT)" in failure["message"]
    assert failure["input_shapes"] == [[]] and failure["blame"] == "onnxruntime"
    assert Path(failure["bundle"], "inputs.npz").is_file()


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs git and a git checkout")
def test_a_bundle_replays_in_a_fresh_clone(tmp_path):
    conformance(f"{TEST}[exp[float64]]", tmp_path=tmp_path / "run",
                converter="broken_converter:to_onnx")
    bundle = tmp_path / "run" / "repro" / "exp-float64"
    moved = shutil.copytree(bundle, tmp_path / "elsewhere" / "bundle")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = dict(os.environ, PYTHONPATH=f"{clone / 'tests'}{os.pathsep}{clone}")
    replay = [sys.executable, "-m", "conformance", "repro", str(moved)]
    still = subprocess.run([*replay, "--converter", "broken_converter:to_onnx"], cwd=clone,
                           env=env, capture_output=True, text=True)
    assert still.returncode == 1 and "blame: converter" in still.stdout, still.stdout
    # a bare replay uses the converter the bundle names; the project's own passes
    bare = subprocess.run(replay, cwd=clone, env=env, capture_output=True, text=True)
    assert bare.returncode == 1 and "blame: converter" in bare.stdout, bare.stdout
    gone = subprocess.run([*replay, "--converter", "converter:to_onnx"], cwd=clone, env=env,
                          capture_output=True, text=True)
    assert gone.returncode == 0 and "the failure is gone" in gone.stdout, gone.stdout


def test_without_isolate_a_crashed_worker_still_counts_in_results_and_report(tmp_path):
    proc = conformance(f"{TEST}[exp[float64]]", f"{TEST}[eq[bool]]", "-n", "2",
                       tmp_path=tmp_path, converter="crash_injector:to_onnx")
    assert proc.returncode == 1, proc.stdout[-3000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    outcomes = {t["test"]: t["outcome"] for t in doc["tests"]}
    assert outcomes == {"exp[float64]": "failed", "eq[bool]": "passed"}, outcomes
    crashed = next(t for t in doc["tests"] if t["test"] == "exp[float64]")
    assert "worker process crashed" in crashed["failure"]["message"]
    assert "1 failed, 1 passed" in proc.stdout
    assert "worker process crashed" in (tmp_path / "conformance.html").read_text()
