"""Results: JSON-lines records survive interruption and merge across workers and shards."""

from __future__ import annotations

import json

import pytest

from conformance.core.results import (
    ExampleTally,
    ResultsWriter,
    jsonable,
    load_results,
    merge,
    write_results,
)


def example(test, outcome="pass", err=0.0, classes=("0-d",)):
    return {"kind": "example", "test": test, "classes": list(classes),
            "backends": {"onnxruntime": [outcome, err, err, err]}}


def test_merge_folds_workers_counts_outcomes_and_worst_errors(tmp_path):
    a = ResultsWriter(tmp_path / "gw0.jsonl")
    b = ResultsWriter(tmp_path / "gw1.jsonl")
    a.write({"kind": "run", "profile": "dev"})
    a.write(example("exp[float32]", err=1e-7))
    b.write(example("exp[float32]", err=3e-7, classes=("empty",)))
    b.write(example("exp[float32]", outcome="fail", err=float("inf")))
    b.write({"kind": "test", "test": "exp[float32]", "op": "exp", "category": "elemwise",
             "dtype": "float32", "outcome": "failed", "known": [], "failure": {"message": "m"}})
    a.close()
    b.close()
    doc = merge(sorted(tmp_path.glob("*.jsonl")))
    (test,) = doc["tests"]
    cell = test["backends"]["onnxruntime"]
    assert (cell["pass"], cell["fail"], cell["max_abs_err"]) == (2, 1, "inf")
    assert test["examples"] == 3 and test["value_classes"] == {"0-d": 2, "empty": 1}
    assert doc["run"]["profile"] == "dev" and test["outcome"] == "failed"


def test_a_tally_of_examples_merges_as_the_examples_one_by_one(tmp_path):
    examples = [
        {**example("t[float32]", err=1e-7), "rows": ["exp"]},
        {**example("t[float32]", outcome="fail", err=float("inf"), classes=("empty",)),
         "rows": ["exp", "sum"]},
        example("t[float32]", outcome="xfail", err=float("nan")),
        {**example("t[float32]", err=0.0), "backends": {"onnxruntime": ["pass", 0, 0, 0],
                                                        "onnx-reference": ["fail", None,
                                                                           None, None]}},
    ]
    one_by_one = ResultsWriter(tmp_path / "one" / "gw0.jsonl")
    for record in examples:
        one_by_one.write(record)
    one_by_one.close()
    # two workers' tallies (a test that moved, or shards), folded together by merge
    tallied = [ResultsWriter(tmp_path / "tally" / f"gw{i}.jsonl") for i in (0, 1)]
    for writer, part in zip(tallied, (examples[:2], examples[2:]), strict=True):
        tally = ExampleTally()
        for record in part:
            tally.add(record["classes"], record.get("rows", []), record["backends"])
        writer.write(tally.record("t[float32]"))
        writer.close()
    want = merge(sorted((tmp_path / "one").glob("*.jsonl")))["tests"]
    got = merge(sorted((tmp_path / "tally").glob("*.jsonl")))["tests"]
    assert got == want
    assert want[0]["backends"]["onnxruntime"]["max_abs_err"] == "inf"


def test_random_graph_examples_count_the_rows_they_composed(tmp_path):
    w = ResultsWriter(tmp_path / "gw0.jsonl")
    w.write({**example("random_graph[float32]"), "rows": ["exp", "sum", "exp"]})
    w.write({**example("random_graph[float32]"), "rows": ["dimshuffle"]})
    w.write(example("exp[float32]"))
    w.close()
    tests = {t["test"]: t for t in merge([tmp_path / "gw0.jsonl"])["tests"]}
    assert tests["random_graph[float32]"]["graph_rows"] == {"exp": 2, "sum": 1, "dimshuffle": 1}
    assert "graph_rows" not in tests["exp[float32]"]


def test_a_run_killed_midway_still_merges(tmp_path):
    path = tmp_path / "gw0.jsonl"
    writer = ResultsWriter(path)
    writer.write(example("log[float64]"))
    writer.close()
    with open(path, "a") as fh:
        fh.write('{"kind": "example", "test": "log[flo')  # the line a kill cut short
    (test,) = merge([path])["tests"]
    assert test["outcome"] == "incomplete" and test["examples"] == 1


def test_results_file_is_strict_json_and_versioned(tmp_path):
    doc = merge([])
    doc["tests"].append({"err": float("nan")})
    write_results(doc, tmp_path / "results.json")
    json.loads((tmp_path / "results.json").read_text(), parse_constant=pytest.fail)
    assert load_results(tmp_path / "results.json")["tests"][0]["err"] == "nan"
    (tmp_path / "old.json").write_text(json.dumps({"schema_version": 0}))
    with pytest.raises(ValueError, match="schema_version 0 is not 1"):
        load_results(tmp_path / "old.json")


def test_jsonable_handles_numpy_and_non_finite():
    import numpy as np

    assert jsonable({"a": np.array([1.0, np.inf]), "b": np.int8(3)}) == {"a": [1.0, "inf"], "b": 3}


def test_two_runs_of_one_shard_are_not_merged_as_two_shards(tmp_path):
    from conformance.core.results import DuplicateShard

    for run, shard in (("a", "1/2"), ("b", "2/2"), ("c", "1/2")):
        writer = ResultsWriter(tmp_path / run / "main.jsonl")
        writer.write({"kind": "run", "shard": shard})
        writer.write({"kind": "finish", "exitstatus": 0, "planned": 0})
        writer.close()
    two = merge([tmp_path / "a" / "main.jsonl", tmp_path / "b" / "main.jsonl"])
    assert two["run"]["shards_merged"] == 2 and two["run"]["interrupted"] is False
    with pytest.raises(DuplicateShard, match="shard 1/2 comes from more than one"):
        merge([tmp_path / r / "main.jsonl" for r in "abc"])


def test_a_run_without_its_finish_record_counts_as_interrupted(tmp_path):
    writer = ResultsWriter(tmp_path / "main.jsonl")
    writer.write({"kind": "run"})
    writer.write({"kind": "test", "test": "exp[float32]", "outcome": "passed"})
    writer.close()
    run = merge([tmp_path / "main.jsonl"])["run"]
    assert run["interrupted"] is True and run["tests_ran"] == 1 and "tests_planned" not in run


def test_rows_that_left_their_home_worker_are_listed_once_per_shard(tmp_path):
    for run, shard, moved in (("a", "1/2", ["row:sqr"]), ("b", "2/2", ["row:abs", "x.py::t"])):
        writer = ResultsWriter(tmp_path / run / "main.jsonl")
        writer.write({"kind": "run", "shard": shard})
        writer.write({"kind": "finish", "exitstatus": 0, "planned": 0, "moved": moved})
        writer.close()
    run = merge([tmp_path / r / "main.jsonl" for r in "ab"])["run"]
    assert run["rows_moved"] == ["abs", "sqr", "x.py::t"]
    alone = merge([tmp_path / "a" / "main.jsonl"])["run"]
    assert alone["rows_moved"] == ["sqr"]
