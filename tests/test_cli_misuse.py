"""The ``conformance`` command never answers misuse with a traceback.

One test per known misuse of ``conformance repro`` and ``conformance report``: a wrong
argument is a usage error (exit status 2, argparse's message), an unusable file one line on
stderr naming the problem (exit status 1). ``repro`` never says a failure is gone when no
backend ran.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conformance.cli import main
from conformance.core import inputs, results

ROOT = Path(__file__).resolve().parents[1]

#: A bundle that replays quickly: exp on two float64 values, reference and ONNX Runtime only.
META = {"test": "exp[float64]", "row": "exp", "dtype": "float64", "opset": 18,
        "opset_label": "opset18", "backends": ["pytensor-py", "onnxruntime"],
        "static": [[None]], "params": []}


def make_bundle(folder: Path, meta=None, inputs=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meta.json").write_text(json.dumps(META if meta is None else meta))
    np.savez(folder / "inputs.npz", **(inputs or {"x0": np.array([0.0, 1.0])}))
    return folder


def cli(capsys, *args) -> tuple[int, str, str]:
    """Run the command in-process: an uncaught exception would fail the test by itself."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def refused(code: int, err: str, command: str, *words: str) -> str:
    """The one line saying what is wrong; ``words`` must appear in it."""
    lines = [line for line in err.splitlines() if " warning: " not in line]
    if code == 2:
        line = lines[-1]
        assert line.startswith(f"conformance {command}: error: "), err
    else:
        assert code == 1 and len(lines) == 1, err
        line = lines[0]
        assert line.startswith(f"conformance {command}: "), err
    for word in words:
        assert word in line, (word, line)
    return line


# -- repro -----------------------------------------------------------------------------------

def test_a_valid_bundle_replays_and_the_failure_is_gone(tmp_path, capsys):
    code, out, _ = cli(capsys, "repro", make_bundle(tmp_path / "b"))
    assert code == 0 and "onnxruntime      PASS" in out and "failure is gone" in out


def test_an_empty_folder_is_not_a_bundle(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, _, err = cli(capsys, "repro", tmp_path / "empty")
    refused(code, err, "repro", "not a repro bundle", "no meta.json")
    assert code == 2


def test_an_unknown_bundle_or_test_id(tmp_path, capsys):
    code, _, err = cli(capsys, "repro", "nope[float32]", "--report-dir", tmp_path)
    refused(code, err, "repro", "neither a bundle folder nor a test id")


@pytest.mark.parametrize(("damage", "words"), [
    (lambda f: (f / "inputs.npz").write_bytes((f / "inputs.npz").read_bytes()[:100]),
     ["inputs.npz", "damaged or cut short"]),
    (lambda f: (f / "inputs.npz").unlink(), ["no inputs.npz"]),
    (lambda f: (f / "inputs.npz").write_bytes(b"not an archive"), ["inputs.npz"]),
    (lambda f: np.save(f / "inputs.npz", np.ones(2)) or os.replace(f / "inputs.npz.npy",
                                                                   f / "inputs.npz"),
     ["single .npy array"]),
    (lambda f: np.savez(f / "inputs.npz", x0=np.array([{}], dtype=object)),
     ["x0", "pickles are refused"]),
    (lambda f: np.savez(f / "inputs.npz", y=np.ones(2)), ["expected x0, x1"]),
    (lambda f: np.savez(f / "inputs.npz", x0=np.array(["a"])), ["dtype <U1"]),
    (lambda f: np.savez(f / "inputs.npz", x0=np.ones((2, 2))), ["static[0]=[None]", "[2, 2]"]),
    (lambda f: (f / "meta.json").write_text('{"row": '), ["meta.json", "not valid JSON"]),
    (lambda f: (f / "meta.json").write_bytes(b'{"row": "\xff"}'), ["not UTF-8"]),
    (lambda f: (f / "meta.json").write_text("[" * 5000 + "]" * 5000), ["deeper than"]),
    (lambda f: (f / "meta.json").write_text("[1]"), ["top level is a list"]),
    (lambda f: (f / "meta.json").write_text("{}"), ["has no 'row'"]),
], ids=["truncated-npz", "missing-npz", "garbage-npz", "npy-not-npz", "pickle", "wrong-names",
        "string-array", "wrong-layout", "bad-json", "not-utf8", "deep-json", "not-object",
        "no-keys"])
def test_damaged_bundle_files_are_named(tmp_path, capsys, damage, words):
    folder = make_bundle(tmp_path / "b")
    damage(folder)
    code, out, err = cli(capsys, "repro", folder)
    refused(code, err, "repro", *words)
    assert "gone" not in out


@pytest.mark.parametrize(("key", "value", "words"), [
    ("opset", "18", ["opset is a string ('18')", "integer from 1"]),
    ("dtype", 3, ["dtype is an integer (3)", "'float32'"]),
    ("static", 5, ["static is an integer (5)"]),
    ("params", {"a": 1}, ["params is an object"]),
    ("params", [["axis", {"a": 1}]], ["params[0][1]", "without objects"]),
    ("backends", "onnxruntime", ["backends is a string"]),
    ("row", "nope", ["row 'nope' is not one of the"]),
    ("row", "exq", ["did you mean", "exp?"]),
    ("backends", ["onnxruntime", "tensorflow"], ["['tensorflow'] are unknown"]),
    ("backends", [], ["backends is a list ([])", "non-empty"]),
    ("backends", ["pytensor-py"], ["only the reference", "nothing would be compared"]),
    ("opset", 10_000, ["opset is an integer (10000)"]),
], ids=lambda v: str(v)[:20])
def test_wrong_metadata_is_named_and_never_reported_as_gone(tmp_path, capsys, key, value,
                                                            words):
    folder = make_bundle(tmp_path / "b", {**META, key: value})
    code, out, err = cli(capsys, "repro", folder)
    refused(code, err, "repro", *words)
    assert "gone" not in out


def test_missing_metadata_keys_are_named(tmp_path, capsys):
    meta = {k: v for k, v in META.items() if k != "static"}
    code, _, err = cli(capsys, "repro", make_bundle(tmp_path / "b", meta))
    refused(code, err, "repro", "has no 'static'")


def test_params_the_row_cannot_take_are_named(tmp_path, capsys):
    folder = make_bundle(tmp_path / "b", {**META, "params": [["no_such_param", 1]]})
    code, out, err = cli(capsys, "repro", folder)
    refused(code, err, "repro", "cannot build a graph", "no_such_param")
    assert "gone" not in out


@pytest.mark.parametrize(("converter", "words"), [
    ("nope", ["must look like module:callable"]),
    ("no_such_module_x:f", ["cannot be imported", "no_such_module_x"]),
    ("os:sep", ["has no callable 'sep'"]),
])
def test_a_bad_converter_is_a_usage_error(tmp_path, capsys, converter, words):
    code, _, err = cli(capsys, "repro", make_bundle(tmp_path / "b"), "--converter", converter)
    refused(code, err, "repro", "--converter", *words)


def test_the_command_line_shows_no_traceback_for_a_pickle(tmp_path):
    folder = make_bundle(tmp_path / "b", inputs={"x0": np.array([None, 1], dtype=object)})
    proc = subprocess.run([sys.executable, "-m", "conformance", "repro", str(folder)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and "pickles are refused" in proc.stderr


# -- report ----------------------------------------------------------------------------------

TEST = {"kind": "test", "test": "exp[float32]", "op": "exp", "category": "elemwise",
        "dtype": "float32", "outcome": "passed", "known": [], "failure": None}


def lines(path: Path, *items) -> Path:
    """A .jsonl file: dicts and lists as JSON, bytes and str as they are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(
        (i if isinstance(i, bytes) else (i if isinstance(i, str) else json.dumps(i)).encode())
        + b"\n" for i in items))
    return path


def test_a_valid_results_file_renders(tmp_path, capsys):
    out = tmp_path / "out" / "r.html"
    code, _, err = cli(capsys, "report", lines(tmp_path / "a.jsonl", TEST), "-o", out)
    assert code == 0 and err == "" and "exp[float32]" in out.read_text()


@pytest.mark.parametrize(("items", "words"), [
    ([[1, 2], "3", '"x"'], ["the record is a list ([1, 2]); expected an object"]),
    ([{k: v for k, v in TEST.items() if k != "test"}], ["the record has no 'test'"]),
    ([{**TEST, "outcome": "exploded"}], ["outcome is a string ('exploded')", "'passed'"]),
    ([{**TEST, "test": 7}], ["test is an integer (7)"]),
    ([{**TEST, "failure": {"message": ["a"]}}], ["failure.message is a list"]),
    ([{"kind": "example", "test": "t", "backends": {"ort": ["maybe", 0, 0, 0]}}],
     ["backends.ort[0] is a string ('maybe')"]),
    ([b'{"kind": "test", "test": "\xff"}'], ["not UTF-8"]),
    (["[" * 3000 + "]" * 3000], ["deeper than"]),
    (['{"kind": "test", "te'], ["not valid JSON"]),
], ids=["not-objects", "no-test", "unknown-outcome", "test-not-text", "message-not-text",
        "example-outcome", "not-utf8", "deep-json", "cut-short"])
def test_unusable_lines_are_counted_per_file_and_nothing_usable_fails(tmp_path, capsys, items,
                                                                      words):
    path = lines(tmp_path / "a.jsonl", *items)
    code, _, err = cli(capsys, "report", path, "-o", tmp_path / "r.html")
    warning = next(line for line in err.splitlines() if " warning: " in line)
    assert str(path) in warning and f"skipped {len(items)} of {len(items)} lines" in warning
    for word in words:
        assert word in warning, (word, warning)
    refused(code, err, "report", "no test or example records", str(path))
    assert not (tmp_path / "r.html").exists()


def test_garbage_lines_are_skipped_with_a_warning_and_the_rest_renders(tmp_path, capsys):
    path = lines(tmp_path / "a.jsonl", "garbage", TEST, b"\xff\xfe", '{"cut": ')
    out = tmp_path / "r.html"
    code, _, err = cli(capsys, "report", path, "-o", out)
    assert code == 0 and "exp[float32]" in out.read_text()
    assert f"warning: {path}: skipped 3 of 4 lines" in err and "line 1" in err


def test_wrongly_typed_run_settings_are_skipped_not_rendered(tmp_path, capsys):
    path = lines(tmp_path / "a.jsonl", {"kind": "run", "versions": "1.0"}, TEST)
    out = tmp_path / "r.html"
    code, _, err = cli(capsys, "report", path, "-o", out)
    assert code == 0 and "skipped 1 of 2 lines" in err and "versions is a string" in err


def test_empty_files_are_named_and_nothing_usable_fails(tmp_path, capsys):
    empty = lines(tmp_path / "empty.jsonl")
    code, _, err = cli(capsys, "report", empty, "-o", tmp_path / "r.html")
    assert f"warning: {empty} is empty" in err
    refused(code, err, "report", "no test or example records")


def test_a_run_folder_with_one_good_file_renders_and_warns_about_the_empty_one(tmp_path, capsys):
    lines(tmp_path / "run" / "gw0.jsonl")
    lines(tmp_path / "run" / "gw1.jsonl", TEST)
    code, _, err = cli(capsys, "report", tmp_path / "run", "-o", tmp_path / "r.html")
    assert code == 0 and "gw0.jsonl is empty" in err


@pytest.mark.parametrize(("text", "words"), [
    ("", ["is empty"]),
    ("[]", ["the document is a list", "not a results document"]),
    ('{"schema_version": 2, "tests": []}', ["schema_version 2 is not 1"]),
    ('{"schema_version": 1, "tests": [5]}', ["no usable test records"]),
    ('{"schema_version": 1, "tests": "x"}', ["tests is a string"]),
])
def test_unusable_results_documents_are_named(tmp_path, capsys, text, words):
    path = tmp_path / "results.json"
    path.write_text(text)
    code, _, err = cli(capsys, "report", path, "-o", tmp_path / "r.html")
    refused(code, err, "report", str(path), *words)


def test_bad_parts_of_a_results_document_are_left_out_with_a_warning(tmp_path, capsys):
    path = tmp_path / "results.json"
    good = {k: v for k, v in TEST.items() if k != "kind"}
    path.write_text(json.dumps({"schema_version": 1, "run": {"versions": 3},
                                "tests": [good, {"op": "x"}], "trend": {"runs": 1}}))
    code, _, err = cli(capsys, "report", path, "-o", tmp_path / "r.html")
    assert code == 0
    assert "ignored the run settings: versions is an integer (3)" in err
    assert "left out the trend section: runs is an integer (1)" in err
    assert "skipped 1 of 2 test entries" in err and "tests[1] has no 'test'" in err


@pytest.mark.parametrize(("section", "value", "words"), [
    ("trend", {"runs": [], "newly_failing": [{"test": "t", "previous": None}]},
     ["newly_failing[0] has no 'current'"]),
    ("trend", {"newly_failing": []}, ["has no 'runs'"]),
    ("speed", [{"op": "exp", "backend": "ort", "median_us": float("inf")}],
     ["median_us is a number (inf); expected a finite number"]),
    ("coverage", {"onnx_ops": "Exp"}, ["onnx_ops is a string"]),
    ("run", {"c_modules_compiled": 3}, ["compile_seconds wherever c_modules_compiled"]),
    ("run", {"compile_seconds": float("nan"), "c_modules_compiled": 1},
     ["compile_seconds is a number (nan)"]),
])
def test_sections_the_report_cannot_draw_are_left_out(tmp_path, capsys, section, value, words):
    path = tmp_path / "results.json"
    good = {k: v for k, v in TEST.items() if k != "kind"}
    path.write_text(json.dumps({"schema_version": 1, "tests": [good], section: value}))
    code, _, err = cli(capsys, "report", path, "-o", tmp_path / "r.html")
    assert code == 0 and (tmp_path / "r.html").is_file()
    (warning,) = err.splitlines()
    for word in words:
        assert word in warning, (word, warning)


def test_a_bad_baseline_is_named(tmp_path, capsys):
    base = lines(tmp_path / "old.jsonl", "garbage")
    path = lines(tmp_path / "a.jsonl", TEST)
    code, _, err = cli(capsys, "report", path, "--baseline", base, "-o", tmp_path / "r.html")
    refused(code, err, "report", "no test or example records", str(base))


@pytest.mark.parametrize(("setup", "args", "words"), [
    (lambda t: (t / "dir").mkdir(), ["-o", "dir"], ["-o/--output", "is a folder"]),
    (lambda t: None, ["-o", "results.json"], ["-o/--output", "needs another name"]),
    (lambda t: (t / "file").write_text(""), ["-o", "file/r.html"], ["is a file, not a folder"]),
    (lambda t: None, ["missing.jsonl"], ["'missing.jsonl' does not exist"]),
    (lambda t: (t / "nothing").mkdir(), ["nothing"], ["holds no .jsonl results files"]),
    (lambda t: None, ["--baseline", "nope.json"], ["--baseline 'nope.json' does not exist"]),
    (lambda t: (t / "r.json").write_text("{}"), ["r.json"], ["rendered on its own"]),
], ids=["output-folder", "output-results-json", "output-under-file", "missing-input",
        "empty-folder", "missing-baseline", "json-and-jsonl"])
def test_wrong_arguments_are_usage_errors(tmp_path, capsys, monkeypatch, setup, args, words):
    monkeypatch.chdir(tmp_path)
    lines(tmp_path / "a.jsonl", TEST)
    setup(tmp_path)
    code, _, err = cli(capsys, "report", "a.jsonl", *args)
    refused(code, err, "report", *words)
    assert code == 2


def test_the_command_line_shows_no_traceback_for_garbage_results(tmp_path):
    path = lines(tmp_path / "a.jsonl", "garbage", b"\x00\xff")
    proc = subprocess.run([sys.executable, "-m", "conformance", "report", str(path), "-o",
                           str(tmp_path / "r.html")], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("conformance report: no test or example")


def test_every_record_kind_merge_reads_is_checked_before_it_gets_there():
    """A kind merge learns to read must be added to conformance.core.inputs.RECORDS, or its
    records reach merge unchecked (records of unknown kinds pass through untouched)."""
    read = set(re.findall(r'\.get\("kind"\) == "(\w+)"', inspect.getsource(results.merge)))
    assert read and read <= set(inputs.RECORDS), read - set(inputs.RECORDS)
