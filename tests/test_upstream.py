"""``conformance upstream``: root causes grouped by the stated rule, one issue text and one
standalone script each, every script reproducing in an interpreter that cannot import the
project; the report's counterexample code and "upstream" section."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conformance import versions
from conformance.cli import main
from conformance.registries import all_rows, row_named
from conformance.registry import JAX_BACKENDS, Blame, Known
from conformance.report import context, render_report
from conformance.upstream import issues as upstream
from conformance.upstream import upstream_issue, upstream_script

#: ``CONFORMANCE_UPSTREAM=all`` (the nightly workflow's own-tests job): build and run the
#: script of every root cause. By default a cross-section, one cause of each kind (below),
#: since building all of them compiles some 1,800 cells: most of a cold run's time.
EVERY_CAUSE = os.environ.get("CONFORMANCE_UPSTREAM", "") == "all"


def _kinds(cause) -> set[tuple]:
    """What a cause's script exercises: the package at fault and the blame, with each family
    of the backends its cases run on (C, Numba, Python, JAX; each ONNX backend)."""
    faulty = {upstream.sides(c.known)[0] for c in cause.cells}
    families = {b.split("-")[1] if b.startswith("pytensor-") else b for b in faulty}
    return {(cause.package, cause.blame, family) for family in families}


def _jax_only(known) -> bool:
    return set(known.backends) <= set(JAX_BACKENDS)


def _sample(causes) -> list:
    """For each kind, the cause with fewest cells that has it; the causes the tests below read,
    and the causes NOT_STANDALONE names; causes only the JAX pair shows are left out when jax
    is not installed (their scripts cannot run)."""
    jax = importlib.util.find_spec("jax") is not None
    runnable = [c for c in causes if jax or not all(_jax_only(x.known) for x in c.cells)]
    chosen = {}
    for cause in sorted(runnable, key=lambda c: (len(c.cells), c.slug)):
        for kind in _kinds(cause):
            chosen.setdefault(kind, cause.slug)
    read = {slug for slug, _ in NOT_STANDALONE}
    read |= {c.slug for c in runnable if c.key.cause == "careduce-c-0d"
             or "sign:0" in c.records
             or any(x.known.shared_by and x.row.name == "round_half_away_from_zero"
                    for x in c.cells)}
    return sorted(set(chosen.values()) | read)


def _build(out: Path) -> int:
    import converter

    if EVERY_CAUSE:
        return main(["upstream", "-o", str(out)])
    cells = upstream.registry_cells(all_rows(), converter.default_opset())
    slugs = _sample(upstream.group(cells))
    return main(["upstream", "-o", str(out), "--only", "^(" + "|".join(slugs) + ")$"])


@pytest.fixture(scope="module")
def written(tmp_path_factory, worker_id):
    """The root causes' issue texts and scripts, built once per run (the slow part): under
    xdist the first worker to need them builds them in the workers' shared folder, behind a
    file lock, and the others read that."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    out = shared / "upstream"
    with FileLock(str(shared / "upstream.lock")):
        status_file = shared / "upstream.status"
        if not status_file.exists():
            status_file.write_text(str(_build(out)), encoding="utf-8")
    index = json.loads((out / "index.json").read_text(encoding="utf-8"))
    return out, index, int(status_file.read_text(encoding="utf-8"))


def _known(reason, blame=Blame.ONNXRUNTIME, versions=None, cause=None):
    return Known(("onnxruntime",), reason, blame, example=lambda dtype: None,
                 versions=versions, cause=cause)


def test_grouping_rule_ignores_dtypes_and_a_trailing_remark():
    a = _known("ONNX Runtime has no CPU kernel for Max on int16/uint16")
    b = _known("ONNX Runtime has no CPU kernel for Max on int16 (uint8 with int8)")
    assert upstream.root_key(a) == upstream.root_key(b)
    assert upstream.root_key(a) != upstream.root_key(
        _known("ONNX Runtime has no CPU kernel for Min on int16/uint16"))
    assert upstream.root_key(a) != upstream.root_key(
        _known("ONNX Runtime has no CPU kernel for Max on int16/uint16",
               Blame.ONNXRUNTIME_OPTIMIZER))
    assert upstream.root_key(a)[0] == "onnxruntime"


def test_a_declared_cause_groups_records_however_worded():
    cause = next(iter(upstream.CAUSES))
    a = _known("ReduceMax drops nan next to an infinity", cause=cause)
    b = _known("ReduceMin drops nan next to an infinity", cause=cause)
    assert upstream.root_key(a) == upstream.root_key(b)
    assert upstream.root_key(a) != upstream.root_key(_known(a.reason))
    with pytest.raises(ValueError, match="has no entry in CAUSES"):
        upstream.root_key(_known("r", cause="no-such-cause"))
    with pytest.raises(ValueError, match="must be a slug"):
        _known("r", cause="Not A Slug")


def test_a_cause_is_one_package_s_bug():
    row = row_named("sign")
    cause = next(iter(upstream.CAUSES))
    known = [_known("r", cause=cause), _known("r", Blame.ONNXRUNTIME_OPTIMIZER, cause=cause)]
    rows = [dataclasses.replace(row, known=(k,)) for k in known]
    with pytest.raises(ValueError, match="one cause is one package's bug"):
        upstream.group([upstream.Cell(r, 0, "int64", 18) for r in rows])


def test_a_cause_is_bounded_only_when_every_record_is():
    row = row_named("sign")
    cause = next(iter(upstream.CAUSES))

    def versions(*bounds):
        rows = [dataclasses.replace(row, known=(_known("r", versions=v, cause=cause),))
                for v in bounds]
        [found] = upstream.group([upstream.Cell(r, 0, "int64", 18) for r in rows])
        return found.versions

    assert versions("onnxruntime<1.32", "onnxruntime<1.32") == "onnxruntime<1.32"
    assert versions("onnxruntime<1.32", None) is None


def test_declared_causes_are_described_and_descriptions_used():
    declared = {k.cause for r in all_rows() for k in r.known if k.cause}
    assert declared == set(upstream.CAUSES), "CAUSES and the registry's causes differ"
    for name in declared:
        blames = {(upstream.blamed_package(k), k.blame) for r in all_rows() for k in r.known
                  if k.cause == name}
        assert len(blames) == 1, (name, blames)


def test_every_upstream_record_belongs_to_a_root_cause():
    import converter

    records = {f"{r.name}:{i}" for r in all_rows() for i, k in enumerate(r.known)
               if k.blame in upstream.UPSTREAM}
    causes = upstream.group(upstream.registry_cells(all_rows(), converter.default_opset()))
    assert {rec for cause in causes for rec in cause.records} == records
    assert len({c.slug for c in causes}) == len(causes), "two root causes share a folder"


def test_every_built_cause_has_its_script_and_issue(written):
    out, index, status = written
    problems = [p for cause in index["causes"] for p in cause["problems"]]
    assert problems == [], "records whose example became no script case"
    assert status == 0
    for cause in index["causes"]:
        issue = (out / cause["issue"]).read_text(encoding="utf-8")
        assert issue.startswith("# [") and "## What is expected" in issue
        assert "## Affected" in issue and "conformance" not in issue.split("## Reproduce")[1]


#: Causes whose records hold on an installed release through the harness's way of rewriting
#: that a standalone script cannot take, with why; their scripts must show nothing there
#: (strict: a script that starts showing the bug fails the test).
NOT_STANDALONE = {
    ("pytensor-the-rewrites-fold-xlog1py-x-true-through-its", "pytensor<3.3"):
        "before 3.3 the harness rewrites a graph for pytensor-numba-opt (and onnxruntime-"
        "rewritten) through the Python linker, whose constant folding runs the Composite's "
        "Python code (float16 log1p of a bool); PyTensor's NUMBA mode folds with compiled "
        "code and gets log(2) right, so only Mode(linker='py', optimizer='fast_run') shows it",
    ("pytensor-numba-238-nested-scan", "pytensor<3"):
        "the harness rewrites the graph for pytensor-numba-opt under the Python linker before "
        "3.3, then links it with Numba, which computes that graph wrong; the script's "
        "Mode(linker='numba', optimizer='fast_run'), like mode='NUMBA', computes it right",
}


def _expected_status(cause: dict) -> int | None:
    """3 when another recorded bug hides every case on the installed releases, or when no
    record that runs without jax holds and the cause has JAX cases that cannot run here
    (nothing can be judged); else 1 when some record of the cause holds there, 0 when none
    does (or the cause is one of NOT_STANDALONE on this release)."""
    if cause["cases"] and cause["masked"] == cause["cases"]:
        return 3
    if any(slug == cause["slug"] and versions.holds(bound)
           for slug, bound in NOT_STANDALONE):
        return 0
    records = _records(cause)
    if importlib.util.find_spec("jax") is None:
        if any(k.active for k in records if not _jax_only(k)):
            return 1
        return 3 if any(_jax_only(k) for k in records) else 0
    return 1 if any(k.active for k in records) else 0


def _records(cause: dict) -> list:
    rows = {r.name: r for r in all_rows()}
    return [rows[rec.split(":")[0]].known[int(rec.split(":")[1])] for rec in cause["records"]]


def _runnable(cause: dict) -> bool:
    """Whether this environment can run the cause's script: the JAX pair's causes need jax,
    an optional extra that the quick start does not install."""
    return (importlib.util.find_spec("jax") is not None
            or not all(_jax_only(k) for k in _records(cause)))


def test_every_script_reproduces_without_the_project(written):
    out, index, _ = written

    def run(cause):
        return cause, upstream.run_clean(out / cause["script"], python=sys.executable)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(run, [c for c in index["causes"] if _runnable(c)]))
    wrong = [f"{cause['slug']}: exit {code}, expected {_expected_status(cause)}\n"
             + "\n".join(output.strip().splitlines()[-6:])
             for cause, (code, output) in results if code != _expected_status(cause)]
    assert not wrong, "\n\n".join(wrong)
    assert all("cases show the bug" in output for _, (_, output) in results)


def test_scripts_import_only_numpy_and_the_package_at_fault(written):
    out, index, _ = written
    allowed = {"onnxruntime": {"onnxruntime"}, "onnx": {"onnx"}, "pytensor": {"pytensor"}}
    for cause in index["causes"]:
        text = (out / cause["script"]).read_text(encoding="utf-8")
        imported = {line.split()[1].split(".")[0] for line in text.splitlines()
                    if line.startswith(("import ", "from ")) or line.startswith(
                        ("    import ", "    from "))
                    for line in [line.strip()]}
        extra = imported - {"base64", "importlib", "io", "os", "pickle", "sys", "warnings",
                            "numpy"}
        assert extra <= allowed[cause["package"]], (cause["slug"], extra)


def test_the_clean_runner_cannot_import_the_project(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text("import conformance\n", encoding="utf-8")
    code, output = upstream.run_clean(script, python=sys.executable)
    assert code == 1 and "not importable" in output


@pytest.mark.parametrize("name", ["exp", "maximum", "sum", "random_graph", "pad_edge"])
def test_case_code_is_standalone(name, tmp_path):
    from conformance.strategies.canonical import canonical_cases

    row = row_named(name)
    case = next(iter(canonical_cases(row.cases, row.dtypes).values()))
    code = upstream_script.case_code(row, case)
    assert "conformance" not in code
    script = tmp_path / "case.py"
    script.write_text(code + "\nprint('built', outputs if 'outputs' in dir() else out)\n",
                      encoding="utf-8")
    status, output = upstream.run_clean(script, python=sys.executable)
    assert status == 0, output
    assert "built" in output


def _doc_with_upstream(link="sign/issue.md"):
    return {"schema_version": 1, "run": {}, "tests": [], "upstream": {
        "installed": ["onnxruntime 1.32.0"],
        "causes": [{"blame": "onnxruntime", "reason": "Sign on int64 <b>x</b>",
                    "records": ["sign:0"], "cells": ["sign[int64]"], "since": None,
                    "fixed": "onnxruntime 1.32.0", "issue": link,
                    "script": "javascript:alert(1)"}]}}


def test_report_shows_the_upstream_section(tmp_path):
    html = render_report(_doc_with_upstream(), tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="upstream"' in html and 'href="sign/issue.md"' in html
    assert "onnxruntime 1.32.0" in html and "&lt;b&gt;x" in html
    assert "javascript:" not in html
    assert context({"schema_version": 1, "run": {}, "tests": []})["upstream"] is None


def test_report_links_point_from_the_report_to_the_files(written, tmp_path):
    out, _, _ = written
    entries = upstream_issue.report_entries(out, tmp_path / "deep" / "report.html")
    for cause in entries["causes"]:
        assert (tmp_path / "deep" / cause["script"]).resolve().is_file()
    sign = [c for c in entries["causes"] if "sign:0" in c["records"]]
    assert sign and sign[0]["fixed"] == "onnxruntime 1.32"


def test_cli_rejects_a_missing_run(tmp_path, capsys):
    assert main(["upstream", str(tmp_path / "nope"), "-o", str(tmp_path)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["upstream", "--only", "no-such-cause-anywhere", "-o", str(tmp_path)]) == 1


def test_results_cells_match_records_back(tmp_path):
    row = row_named("sign")
    known = row.known[0]
    doc = {"tests": [{"test": "sign[int64]", "op": "sign", "dtype": "int64", "opset": 18,
                      "known": [{"reason": known.reason, "blame": str(known.blame)}],
                      "xfail_seen": {"0": "onnxruntime: ..."}, "failure": None},
                     {"test": "exp[float32]", "op": "exp", "dtype": "float32", "opset": 18,
                      "known": [], "failure": {"blame": "onnxruntime", "message": "x",
                                               "case": "exp(float32[2])"}}]}
    cells, unmatched = upstream.results_cells(doc, all_rows())
    assert [c.name for c in cells] == ["sign[int64]:0"] and cells[0].opset == 18
    assert len(unmatched) == 1 and "unrecorded onnxruntime divergence" in unmatched[0]


def test_a_merged_cause_lists_every_record(written):
    out, index, _ = written
    merged = next(c for c in index["causes"] if c["cause"] == "careduce-c-0d")
    # Max and Min, and softmax's rows whose inner max meets the same bug (3.x, no rewrites)
    assert {"max:1", "min:1", "softmax:2", "log_softmax:1"} <= set(merged["records"])
    assert all(r.split(":")[0] in {"max", "min", "softmax", "log_softmax", "softmax_grad"}
               for r in merged["records"])
    assert merged["reason"] == upstream.CAUSES["careduce-c-0d"]
    issue = (Path(out) / merged["issue"]).read_text(encoding="utf-8")
    assert issue.startswith(f"# [PyTensor] {upstream.CAUSES['careduce-c-0d']}")
    for reason in ("Max's C code generation fails", "Min's C code generation fails"):
        assert reason in issue.split("## Affected")[1]


def test_issue_text_names_the_spec(written):
    out, index, _ = written
    sign = next(c for c in index["causes"] if "sign:0" in c["records"])
    text = (Path(out) / sign["issue"]).read_text(encoding="utf-8")
    assert "https://onnx.ai/onnx/operators/onnx__Sign.html" in text
    assert "Calculate the sign of the given input tensor element-wise" in text


def test_issue_text_names_the_backends_that_share_the_fault(written):
    out, index, _ = written
    row = row_named("round_half_away_from_zero")
    shared = next(i for i, k in enumerate(row.known) if "pytensor-numba" in k.shared_by)
    cause = next(c for c in index["causes"] if f"{row.name}:{shared}" in c["records"])
    affected = (Path(out) / cause["issue"]).read_text(encoding="utf-8").split("## Affected")[1]
    assert "shared by pytensor-numba, pytensor-numba-opt" in affected
    assert "needs the same fix" in affected
