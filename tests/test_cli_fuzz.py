"""Hypothesis against the ``conformance`` command: results files and repro bundles made of
valid records with fields replaced (by values of the same JSON type, or any JSON value),
deleted or cut short, among arbitrary JSON and bytes. Whatever the input, the command
renders a report / replays the case, or refuses with exit status 1 or 2 and one line per
problem on stderr; it never raises.
"""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import onnx
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_cli_misuse import META, make_bundle

import converter
from conformance.cli import main

FUZZ = settings(max_examples=30, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                  max_size=3),
    max_leaves=8,
)
#: Records as a run writes them (see conformance/core/results.py), with every kind of field.
RECORDS = [
    {"kind": "run", "started": "2026-01-01T00:00:00Z", "profile": "ci", "max_examples": 12,
     "derandomize": True, "converter": "converter:to_onnx",
     "backends": ["pytensor-py", "onnxruntime"], "reference": "pytensor-py",
     "opsets": {"default": 21}, "shard": "1/1", "versions": {"onnx": "1.17"},
     "interrupted": True, "tests_ran": 2, "tests_planned": None, "c_modules_compiled": 3,
     "compile_seconds": 1.5},
    {"kind": "example", "test": "exp[float32]", "classes": ["0-d", "nan/inf"],
     "backends": {"onnxruntime": ["fail", 0.5, 0.25, 3.0e6], "onnx-reference": ["pass", 0.0,
                                                                              "nan", None]}},
    {"kind": "graph", "test": "exp[float32]", "op_kinds": ["Elemwise{Exp}"], "onnx_ops": ["Exp"]},
    {"kind": "test", "test": "exp[float32]", "op": "exp", "category": "elemwise",
     "dtype": "float32", "opset": 21, "opset_label": "", "outcome": "failed", "duration": 0.5,
     "known": [{"backends": ["onnxruntime"], "reason": "r", "blame": "onnxruntime",
                "dtypes": None}],
     "xfail_seen": {"0": "seen"},
     "failure": {"message": "onnxruntime: out[0]=1 but pytensor-py=2\nblame: converter",
                 "blame": "converter", "case": "exp(float32[2])", "code": "out = pt.exp(x0)",
                 "inputs": [[0.0, "nan"]], "input_shapes": [[2]], "params": [["axis", 0]],
                 "expected": [[1.0, "nan"]], "actual": {"onnxruntime": [[2.0, "inf"]]},
                 "notes": ["Falsifying example"], "bundle": "reports/repro/exp-float32",
                 "repro": "conformance repro reports/repro/exp-float32"},
     "known_inactive": [{"backends": ["onnxruntime"], "reason": "r", "blame": "onnxruntime",
                         "dtypes": ["float32"], "versions": "<1.20", "package": "onnxruntime"}],
     "fixed_upstream": [{"backends": ["onnxruntime"], "reason": "q", "blame": "onnxruntime",
                         "dtypes": None, "versions": None, "package": None,
                         "installed": "onnxruntime 1.33.0"}]},
    {"kind": "test", "test": "log[float64-opset18]", "op": "log", "dtype": "float64",
     "outcome": "xfailed", "known": [], "failure": None},
]


def _paths(value, path=()):
    yield path
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
        value, list) else ()
    for key, child in children:
        yield from _paths(child, (*path, key))


def _same_type(value):
    """Another value of ``value``'s JSON type: fits a schema that only checks types."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers()
    if isinstance(value, float):
        return st.floats()
    if isinstance(value, str):
        return st.text(max_size=8)
    if isinstance(value, list):
        return st.lists(st.sampled_from(value), max_size=3) if value else st.just([])
    return json_values


@st.composite
def mutated(draw, value):
    """``value`` with a few fields replaced or deleted (or unchanged)."""
    value = json.loads(json.dumps(value))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(list(_paths(value))))
        if not path:
            return draw(json_values)
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["same type", "any", "delete"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            old = parent[path[-1]]
            parent[path[-1]] = draw(_same_type(old) if action == "same type" else json_values)
    return value


def _encoded(value) -> bytes:
    return json.dumps(value).encode()


#: (line, whether it is a record exactly as a run writes it)
result_lines = st.one_of(
    st.sampled_from(RECORDS).map(lambda r: (_encoded(r), True)),
    st.sampled_from(RECORDS).flatmap(mutated).map(lambda r: (_encoded(r), False)),
    json_values.map(lambda v: (_encoded(v), False)),
    st.tuples(st.sampled_from(RECORDS).map(_encoded), st.integers(0, 200)).map(
        lambda t: (t[0][:t[1]], False)),
    st.binary(max_size=12).map(lambda b: (b, False)),
)


def _run(*args) -> tuple[int, str, str]:
    """The command in-process, its output captured (an exception fails the test)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _check_answer(code: int, out: str, err: str, command: str) -> None:
    event(f"exit status {code}")  # --hypothesis-show-statistics: how often each path ran
    assert code in (0, 1, 2), code
    for line in err.splitlines():
        assert line.startswith((f"conformance {command}: ", "usage: ", " ")), err
    problems = [line for line in err.splitlines() if " warning: " not in line]
    if code == 1 and "\nstill failing; blame: " not in out:
        assert len(problems) == 1, err
    if code == 0:
        assert not problems, err


@FUZZ
@given(files=st.lists(st.lists(result_lines, max_size=6), min_size=1, max_size=2))
def test_any_results_lines_give_a_report_or_one_line_saying_what_is_wrong(
        tmp_path_factory, files):
    folder = tmp_path_factory.mktemp("lines")
    paths = []
    for i, lines in enumerate(files):
        paths.append(folder / f"{i}.jsonl")
        paths[-1].write_bytes(b"\n".join(line for line, _ in lines))
    out = folder / "out" / "report.html"
    code, stdout, err = _run("report", *paths, "-o", out)
    _check_answer(code, stdout, err, "report")
    assert (code == 0) == out.is_file()
    rows = [(_row_kind(line), pristine) for lines in files for line, pristine in lines]
    # a usable record makes a report, unless two differing run records claim one shard
    # (merging would count tests twice: refused, in one line)
    if any(pristine and kind for kind, pristine in rows) and "comes from more than one" not in err:
        assert code == 0, err
    if code == 0:
        assert any(kind for kind, _ in rows), "a report without any test or example record"


def _row_kind(line: bytes) -> bool:
    """Whether a line is a JSON object of a kind that makes a report row."""
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("kind") in ("test", "example")


@FUZZ
@given(doc=st.fixed_dictionaries({
    "schema_version": st.just(1),
    "run": st.just(RECORDS[0]),
    "tests": st.lists(st.sampled_from(RECORDS[3:]), min_size=1, max_size=3),
    "coverage": st.just({"op_kinds": ["Elemwise{Exp}"], "count": 1, "uncovered": []}),
    "speed": st.just([{"op": "exp", "dtype": "float32", "backend": "onnxruntime",
                       "median_us": 3.5}]),
    "trend": st.just({"runs": [{"label": "old", "tests": 1, "statuses": {"passed": 1},
                                "pass_rate": 1.0}],
                      "newly_failing": [{"test": "exp[float32]", "op": "exp",
                                         "previous": "passed", "current": "failed",
                                         "message": "m"}],
                      "flaky": [], "ops": {"exp": ["passed", "failed"]},
                      "history": {"exp[float32]": ["passed", "failed"]}}),
}).flatmap(mutated), cut=st.none() | st.integers(0, 400))
def test_any_results_document_gives_a_report_or_one_line_saying_what_is_wrong(
        tmp_path_factory, doc, cut):
    folder = tmp_path_factory.mktemp("doc")
    path = folder / "results.json"
    path.write_bytes(_encoded(doc)[:cut])
    out = folder / "report.html"
    code, stdout, err = _run("report", path, "-o", out)
    _check_answer(code, stdout, err, "report")
    assert (code == 0) == out.is_file()


@FUZZ
@given(meta=st.one_of(st.just(META).flatmap(mutated).map(_encoded), json_values.map(_encoded),
                      st.binary(max_size=20)),
       npz_cut=st.none() | st.integers(0, 400))
def test_any_bundle_replays_or_gets_one_line_saying_what_is_wrong(
        tmp_path_factory, meta, npz_cut):
    folder = make_bundle(tmp_path_factory.mktemp("bundle") / "b")
    (folder / "meta.json").write_bytes(meta)
    if npz_cut is not None:
        data = (folder / "inputs.npz").read_bytes()
        (folder / "inputs.npz").write_bytes(data[:npz_cut])
    code, out, err = _run("repro", folder)
    _check_answer(code, out, err, "repro")
    if "failure is gone" in out:
        assert code == 0 and any(" PASS " in line or " XFAIL " in line
                                 for line in out.splitlines()), out


@st.composite
def well_formed(draw):
    """A bundle whose every field has the right type, in combinations that may not fit
    together (a layout for each input, often matching it, rows that take other params)."""
    inputs = draw(st.lists(
        hnp.arrays(st.sampled_from(["float64", "float32", "int8", "bool"]),
                   hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)), max_size=2))
    fitting = [[draw(st.sampled_from([None, n])) for n in v.shape] for v in inputs]
    meta = {
        "row": draw(st.sampled_from(["exp", "add", "sum"])),
        "dtype": draw(st.sampled_from(["float64", "float32", "int8", "bool"])),
        "opset": draw(st.integers(converter.MIN_OPSET - 1, onnx.defs.onnx_opset_version())),
        "backends": draw(st.lists(st.sampled_from(["pytensor-py", "onnxruntime",
                                                    "onnx-reference"]), max_size=3)),
        "static": draw(st.just(fitting) | st.lists(st.lists(st.none() | st.integers(0, 3),
                                                            max_size=2), max_size=2)),
        "params": draw(st.lists(st.tuples(st.sampled_from(["axis", "keepdims"]), st.none()
                                          | st.integers(-2, 2) | st.booleans()).map(list),
                                max_size=1)),
    }
    return meta, {f"x{i}": v for i, v in enumerate(inputs)}


@FUZZ
@given(bundle=well_formed())
def test_any_well_formed_bundle_replays_or_gets_one_line_saying_what_is_wrong(
        tmp_path_factory, bundle):
    meta, inputs = bundle
    folder = make_bundle(tmp_path_factory.mktemp("bundle") / "b", meta, inputs)
    if not inputs:
        np.savez(folder / "inputs.npz")
    code, out, err = _run("repro", folder)
    _check_answer(code, out, err, "repro")
    assert code != 2, err  # the folder is a bundle: whatever is wrong is its data
    if "failure is gone" in out:
        assert code == 0 and any(" PASS " in line or " XFAIL " in line
                                 for line in out.splitlines()), out


def test_the_bundle_fixture_replays(tmp_path):
    """The fuzzed bundles start from one that replays, so the fuzz also reaches the replay."""
    code, out, _ = _run("repro", make_bundle(tmp_path / "b"))
    assert code == 0 and "failure is gone" in out
