"""Trend: newly failing, newly passing, newly XPASS, flaky, history per op; the report
command's --baseline."""

from __future__ import annotations

import json

from conformance.cli import main
from conformance.core.results import ResultsWriter, write_results
from conformance.report import trend

XPASS = "XPASS(strict) t: onnxruntime now agree (onnxruntime: r); remove this expected failure"


def results(*tests, started="2026-01-01T00:00:00Z"):
    """A results document from (test id, outcome) pairs; outcome "xpassed" is written as the
    failed strict-XPASS record the runner produces."""
    records = []
    for tid, outcome in tests:
        failure = None
        if outcome in ("failed", "error"):
            failure = {"message": f"{tid}: onnxruntime disagrees\nblame: converter"}
        if outcome == "xpassed":
            outcome, failure = "failed", {"message": XPASS, "blame": "onnxruntime"}
        records.append({"test": tid, "op": tid.partition("[")[0], "outcome": outcome,
                        "failure": failure, "backends": {}, "outcomes_seen": {outcome: 1}})
    return {"schema_version": 1, "run": {"started": started, "profile": "ci"}, "tests": records}


def names(items):
    return [item["test"] for item in items]


def test_classifies_against_the_latest_run_that_judged_each_test():
    old = results(("a[f]", "passed"), ("b[f]", "failed"), ("c[f]", "xfailed"), ("d[f]", "passed"))
    mid = results(("a[f]", "passed"), ("b[f]", "failed"), ("c[f]", "xfailed"),
                  ("d[f]", "incomplete"))
    now = results(("a[f]", "failed"), ("b[f]", "passed"), ("c[f]", "xpassed"), ("d[f]", "error"),
                  ("e[f]", "failed"), ("f[f]", "passed"))
    got = trend.compute(now, [old, mid], ["old", "mid"])
    assert names(got["newly_failing"]) == ["a[f]", "d[f]", "e[f]"]
    assert [i["previous"] for i in got["newly_failing"]] == ["passed", "passed", None]
    assert got["newly_failing"][0]["message"] == "a[f]: onnxruntime disagrees"
    assert names(got["newly_passing"]) == ["b[f]"]
    assert got["newly_xpassed"] == [{"test": "c[f]", "op": "c", "previous": "xfailed",
                                     "current": "xpassed", "message": XPASS}]
    assert got["history"]["c[f]"] == ["xfailed", "xfailed", "xpassed"]
    assert got["history"]["f[f]"] == [None, None, "passed"]
    assert [r["label"] for r in got["runs"]] == ["old", "mid", "this run"]


def test_a_lasting_xpass_or_failure_is_not_new():
    before = results(("a[f]", "xpassed"), ("b[f]", "failed"))
    now = results(("a[f]", "xpassed"), ("b[f]", "error"))
    got = trend.compute(now, [before])
    assert got["newly_failing"] == got["newly_xpassed"] == got["newly_passing"] == []


def test_flaky_means_flipping_back_and_forth_or_conflicting_within_one_run():
    runs = [results(("a[f]", "passed"), ("b[f]", "passed")),
            results(("a[f]", "failed"), ("b[f]", "passed")),
            results(("a[f]", "passed"), ("b[f]", "failed"))]
    now = results(("a[f]", "passed"), ("b[f]", "failed"), ("c[f]", "failed"))
    now["tests"][2]["outcomes_seen"] = {"passed": 1, "failed": 1}
    got = trend.compute(now, runs[:2])
    flaky = {f["test"]: f for f in got["flaky"]}
    assert sorted(flaky) == ["a[f]", "c[f]"]   # b flipped once: newly failing, not flaky
    assert flaky["a[f]"]["history"] == ["passed", "failed", "passed"]
    assert flaky["c[f]"]["within_run"] and not flaky["a[f]"]["within_run"]
    assert names(got["newly_failing"]) == ["b[f]", "c[f]"]


def test_op_history_is_the_worst_status_per_run_and_pass_rates_count_judged_tests():
    old = results(("max[f16]", "passed"), ("max[f32]", "xfailed"), ("exp[f32]", "passed"))
    now = results(("max[f16]", "passed"), ("max[f32]", "xpassed"), ("exp[f32]", "incomplete"))
    got = trend.compute(now, [old])
    assert got["ops"] == {"exp": ["passed", "incomplete"], "max": ["xfailed", "xpassed"]}
    assert [r["pass_rate"] for r in got["runs"]] == [1.0, 0.5]
    assert got["runs"][1]["statuses"] == {"passed": 1, "xpassed": 1, "incomplete": 1}


def test_baselines_load_from_results_json_jsonl_and_run_folders(tmp_path):
    write_results(results(("a[f]", "passed")), tmp_path / "old.json")
    writer = ResultsWriter(tmp_path / "run" / "main.jsonl")
    writer.write({"kind": "test", "test": "a[f]", "op": "a", "outcome": "failed"})
    writer.close()
    assert trend.load(tmp_path / "old.json")["tests"][0]["outcome"] == "passed"
    assert trend.load(tmp_path / "run")["tests"][0]["outcome"] == "failed"
    assert trend.load(tmp_path / "run" / "main.jsonl")["tests"][0]["outcome"] == "failed"


def test_report_command_renders_the_trend_section(tmp_path, capsys):
    write_results(results(("exp[float32]", "passed"), ("log[float32]", "failed")),
                  tmp_path / "old.json")
    writer = ResultsWriter(tmp_path / "run" / "main.jsonl")
    writer.write({"kind": "run", "profile": "dev", "started": "2026-02-01T00:00:00Z"})
    for tid, outcome in (("exp[float32]", "failed"), ("log[float32]", "passed")):
        writer.write({"kind": "test", "test": tid, "op": tid[:3], "category": "elemwise",
                      "dtype": "float32", "outcome": outcome, "known": [],
                      "failure": {"message": "m", "blame": "converter"} if outcome == "failed"
                      else None})
    writer.close()
    out = tmp_path / "out" / "conformance.html"
    assert main(["report", str(tmp_path / "run"), "--baseline", str(tmp_path / "old.json"),
                 "-o", str(out)]) == 0
    doc = json.loads((out.parent / "results.json").read_text())
    assert names(doc["trend"]["newly_failing"]) == ["exp[float32]"]
    assert doc["trend"]["runs"][0]["label"] == "2026-01-01 00:00"
    html = out.read_text()
    assert 'id="trend"' in html and "Newly failing (1)" in html and "Newly passing (1)" in html
    again = tmp_path / "again.html"
    assert main(["report", str(out.parent / "results.json"), "-o", str(again)]) == 0
    assert "Newly failing (1)" in again.read_text()
    assert main(["report", str(tmp_path / "run"), "--baseline", str(tmp_path / "nope.json"),
                 "-o", str(out)]) == 2
    assert "nope.json" in capsys.readouterr().err
