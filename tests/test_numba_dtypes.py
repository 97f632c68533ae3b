"""How many of a row's dtypes the Numba backends judge: the default run caps them at each row's
first dtype (a cold Numba compile costs a second or two a cell), any other choice of backends
judges every dtype, and the run's summary says what Numba compiled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conformance.backends import NUMBA_DTYPE_ORDER, numba_dtypes, without_numba_beyond
from conformance.session.plugin import parse_numba_dtypes

ROOT = Path(__file__).resolve().parents[1]
TEST = "conformance/test_conformance.py::test_op"
DEFAULT = ("pytensor-py", "pytensor-c", "pytensor-numba-opt", "onnxruntime")


def test_float64_first_then_int64_and_float32():
    assert numba_dtypes(("int8", "float32", "float64", "int64"), 1) == ("float64",)
    assert numba_dtypes(("int8", "float32", "float64", "int64"), 2) == ("float64", "int64")
    assert numba_dtypes(("bool", "uint8", "int8"), 1) == ("int8",)  # no float64 or int64
    assert numba_dtypes(("float16", "bool"), None) == ("bool", "float16")
    assert set(NUMBA_DTYPE_ORDER) >= {"float16", "float32", "float64", "bool", "uint64"}


def test_only_the_numba_backends_leave_the_capped_dtypes():
    names = ("pytensor-py", "pytensor-c", "pytensor-numba", "pytensor-numba-opt", "onnxruntime")
    row = ("float32", "float64")
    assert without_numba_beyond(names, "float64", row, 1) == names
    assert without_numba_beyond(names, "float32", row, 1) == (
        "pytensor-py", "pytensor-c", "onnxruntime")
    assert without_numba_beyond(names, "float32", row, None) == names


@pytest.mark.parametrize(("text", "backends", "expected"), [
    ("auto", "default", 1), ("auto", "all", None), ("auto", "pytensor-py,pytensor-numba", None),
    ("auto", "default,pytensor-numba", None), ("all", "default", None), ("3", "default", 3),
])
def test_auto_caps_only_the_default_set(text, backends, expected):
    assert parse_numba_dtypes(text, backends) == expected


@pytest.mark.parametrize("text", ["0", "-1", "some", "1.5", ""])
def test_a_bad_count_names_what_is_allowed(text):
    with pytest.raises(pytest.UsageError, match=r"--numba-dtypes=.*number >= 1, 'all' or 'auto'"):
        parse_numba_dtypes(text, "default")


def run(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    # an empty compile directory, so that Numba compiles and the summary counts it
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CONFORMANCE_PROFILE": "ci",
           "PYTENSOR_FLAGS": f"base_compiledir={tempfile.mkdtemp(dir=tmp_path)}"}
    cmd = [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:randomly", "-p",
           "no:cacheprovider", "--report-dir", str(tmp_path / "report"), "--opsets", "default",
           *extra, f"{TEST}[exp[float32]]", f"{TEST}[exp[float64]]"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return proc, json.loads((tmp_path / "report" / "results.json").read_text())


def test_the_default_run_judges_numba_on_the_first_dtype_and_counts_its_compiles(tmp_path):
    # the default backend set, as a user runs it (no --backends)
    proc, doc = run(tmp_path)
    cells = {t["test"]: t["backends"] for t in doc["tests"]}
    assert "pytensor-numba-opt" in cells["exp[float64]"], cells["exp[float64]"]
    assert "pytensor-numba-opt" not in cells["exp[float32]"], cells["exp[float32]"]
    assert doc["run"]["numba_dtypes"] == "1"
    assert doc["run"]["numba_functions_compiled"] >= 1, doc["run"]
    assert doc["run"]["numba_compile_seconds"] > 0, doc["run"]
    assert "Numba functions compiled: " in proc.stdout, proc.stdout[-2000:]


def test_naming_the_backends_judges_every_dtype(tmp_path):
    _, doc = run(tmp_path, "--backends", ",".join(DEFAULT))
    cells = {t["test"]: t["backends"] for t in doc["tests"]}
    assert all("pytensor-numba-opt" in cells[t] for t in ("exp[float32]", "exp[float64]")), cells
    assert doc["run"]["numba_dtypes"] == "all"
