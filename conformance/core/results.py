"""Results: JSON lines written as examples run, merged into one results file.

Each process (the pytest controller with ``-n 0``, else each xdist worker) appends to
``<run dir>/<worker>.jsonl``, flushing at every record but an example (a test's examples
reach the disk with its test record), so a run killed halfway still leaves every test it
ended. :func:`merge` folds any number of such files into the results document whose
schema is described in docs/results-schema.md, version ``SCHEMA_VERSION``.

Line records:
- ``{"kind": "run", ...}``: run settings (written once by the controller);
- ``{"kind": "example", "test", "backends": {name: [outcome, abs, rel, ulp]}, "classes",
  "rows"}`` (``rows``: a random graph's nodes, by registry row),
  outcome ``pass``, ``fail``, ``xfail`` or ``unsupported`` (the converter refused the graph,
  or the backend declines such graphs by design: Numba and float16);
- ``{"kind": "test", "test", "op", "category", "dtype", "opset", "outcome", "duration",
  "known", "known_inactive", "fixed_upstream", "failure", "xfail_seen", "unsupported",
  "compiled", "backend_seconds"}``;
- ``{"kind": "compile", "modules", "seconds"}``: C modules one process compiled (at its end);
- ``{"kind": "finish", "exitstatus", "planned"}``: written by the controller when the run
  ends, so a results file without it comes from a run that was killed.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

SCHEMA_VERSION = 1


def jsonable(obj):
    """Plain JSON data; non-finite floats become the strings "nan", "inf", "-inf"."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    return obj


class ResultsWriter:
    """Appends records to one JSON-lines file, one line per record. Examples are not flushed
    one by one (a run writes tens of thousands): the next record of another kind flushes them."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the run

    def write(self, record: dict) -> None:
        self._file.write(json.dumps(jsonable(record), allow_nan=False) + "\n")
        if record.get("kind") != "example":
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_records(paths) -> list[dict]:
    records = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line:
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError:
                        continue  # a line cut short by a killed run
    return records


def error_bin(value) -> str | None:
    """The histogram bin of one per-example error: "0", a decade such as "1e-7" (errors in
    [1e-7, 1e-6)), "inf" or "nan"; None when the error was not measured."""
    if value is None:
        return None
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf"
    if value <= 0:
        return "0"
    return f"1e{math.floor(math.log10(value))}"


def _new_cell() -> dict:
    return {"pass": 0, "fail": 0, "xfail": 0, "unsupported": 0,
            "max_abs_err": None, "max_rel_err": None, "max_ulp_err": None,
            "err_hist": {"abs": {}, "rel": {}, "ulp": {}}}


def _add_example(cell: dict, outcome: str, errors) -> None:
    cell[outcome] = cell.get(outcome, 0) + 1
    # a disagreement with no error is a dtype, shape, raising or integer mismatch: unmeasured
    measured = outcome == "pass" or any(error_bin(v) not in (None, "0") for v in errors)
    for key, val in zip(("abs", "rel", "ulp"), errors, strict=True):
        cell[f"max_{key}_err"] = _worse(cell[f"max_{key}_err"], _as_float(val))
        label = error_bin(val)
        if label is not None and measured:
            hist = cell["err_hist"][key]
            hist[label] = hist.get(label, 0) + 1


class ExampleTally:
    """One test's examples folded as :func:`merge` folds them, so that a worker writes one
    ``examples`` record per test rather than an ``example`` record per example (a run has
    tens of thousands, each written, then read back and folded at the end of the run)."""

    def __init__(self):
        self.examples = 0
        self.classes: Counter = Counter()
        self.rows: Counter = Counter()
        self.backends: dict[str, dict] = {}

    def add(self, classes, rows, verdicts: dict) -> None:
        """One example: its input classes, its graph's rows, and per backend
        ``[outcome, abs error, rel error, ulp error]`` (as an ``example`` record holds)."""
        self.examples += 1
        self.classes.update(classes)
        self.rows.update(rows)
        for name, (outcome, *errors) in verdicts.items():
            _add_example(self.backends.setdefault(name, _new_cell()), outcome, errors)

    def record(self, test: str) -> dict:
        return {"kind": "examples", "test": test, "examples": self.examples,
                "classes": dict(self.classes), "rows": dict(self.rows),
                "backends": self.backends}


def _fold_cell(into: dict, cell: dict) -> None:
    """Add one worker's cell (counts, worst errors, histograms) to ``into``."""
    for key, val in cell.items():
        if key.startswith("max_"):
            into[key] = _worse(into.get(key), _as_float(val))
        elif key == "err_hist":
            for kind, hist in val.items():
                into_hist = into["err_hist"].setdefault(kind, {})
                for label, count in hist.items():
                    into_hist[label] = into_hist.get(label, 0) + count
        else:
            into[key] = into.get(key, 0) + val


def _worse(old, new):
    if new is None or (isinstance(new, float) and math.isnan(new)):
        return old
    return new if old is None or new > old else old


def merge(paths, *, run: dict | None = None) -> dict:
    """Fold JSON-lines files (of one or several runs or shards) into one results document."""
    records = read_records(paths)
    # the same run record read twice (a file given twice, a line repeated: equal records,
    # start time included) is one run
    runs = list({json.dumps(r, sort_keys=True, default=str) if "started" in r else id(r): r
                 for r in records if r.get("kind") == "run"}.values())
    tests: dict[str, dict] = {}
    seen: dict[str, Counter] = defaultdict(Counter)
    backends: dict[str, dict] = defaultdict(dict)
    classes: dict[str, Counter] = defaultdict(Counter)
    graph_rows: dict[str, Counter] = defaultdict(Counter)
    examples: Counter = Counter()
    kinds: dict[str, set] = defaultdict(set)
    emitted: dict[str, set] = defaultdict(set)
    compiled: Counter = Counter()
    backend_seconds: Counter = Counter()
    finishes: list[dict] = []
    for rec in records:
        if rec.get("kind") == "example":
            tid = rec["test"]
            examples[tid] += 1
            classes[tid].update(rec.get("classes", []))
            graph_rows[tid].update(rec.get("rows", []))
            for name, (outcome, *errors) in rec["backends"].items():
                _add_example(backends[tid].setdefault(name, _new_cell()), outcome, errors)
        elif rec.get("kind") == "examples":
            tid = rec["test"]
            examples[tid] += rec.get("examples", 0)
            classes[tid].update(rec.get("classes", {}))
            graph_rows[tid].update(rec.get("rows", {}))
            for name, cell in rec["backends"].items():
                _fold_cell(backends[tid].setdefault(name, _new_cell()), cell)
        elif rec.get("kind") == "graph":
            kinds[rec["test"]].update(rec.get("op_kinds", []))
            emitted[rec["test"]].update(rec.get("onnx_ops", []))
        elif rec.get("kind") == "test":
            tests[rec["test"]] = rec
            backend_seconds.update(rec.get("backend_seconds", {}))
            seen[rec["test"]][rec.get("outcome", "incomplete")] += 1
        elif rec.get("kind") == "compile":
            for key in ("modules", "seconds", "numba_functions", "numba_seconds"):
                compiled[key] += rec.get(key, 0)
        elif rec.get("kind") == "finish":
            finishes.append(rec)
    merged = []
    for tid in sorted(set(tests) | set(examples)):
        rec = dict(tests.get(tid) or _incomplete(tid))
        rec.pop("kind", None)
        rec["examples"] = examples[tid]
        rec["backends"] = backends.get(tid, {})
        rec["value_classes"] = dict(classes[tid])
        if graph_rows[tid]:
            rec["graph_rows"] = dict(graph_rows[tid])
        rec["outcomes_seen"] = dict(seen[tid])
        rec["op_kinds"] = sorted(kinds[tid])
        rec["onnx_ops"] = sorted(emitted[tid])
        merged.append(rec)
    shards = Counter(str(r.get("shard", "1/1")) for r in runs)
    twice = sorted(s for s, n in shards.items() if n > 1)
    if twice and run is None:
        raise DuplicateShard(
            f"{len(runs)} runs to merge, but shard {', '.join(twice)} comes from more than one "
            "of them: merging them would count every test twice; give one run folder per shard")
    run_info = dict(run or (runs[0] if runs else {}))
    run_info.pop("kind", None)
    if len(runs) > 1:
        run_info["shards_merged"] = len(runs)
    run_info.update(_completion(runs, finishes, len(tests)))
    if compiled:
        run_info["c_modules_compiled"] = compiled["modules"]
        run_info["compile_seconds"] = round(compiled["seconds"], 1)
        if compiled["numba_functions"]:
            run_info["numba_functions_compiled"] = compiled["numba_functions"]
            run_info["numba_compile_seconds"] = round(compiled["numba_seconds"], 1)
    if backend_seconds:
        run_info["backend_seconds"] = {k: round(v, 1) for k, v in backend_seconds.items()}
    doc = {"schema_version": SCHEMA_VERSION, "run": run_info, "tests": jsonable(merged)}
    if kinds:
        doc["coverage"] = coverage_of(merged)
    return doc


class DuplicateShard(ValueError):
    """Two runs of the same shard were given to one merge."""


def _completion(runs: list, finishes: list, ran: int) -> dict:
    """Whether every run finished, and how many of the planned tests ran: a run without a
    finish record was killed; one that finished with pytest's exit status 2 was interrupted."""
    if not runs:
        return {}
    complete = len(finishes) >= len(runs) and all(f.get("exitstatus") != 2 for f in finishes)
    info = {"interrupted": not complete, "tests_ran": ran}
    if len(finishes) >= len(runs):
        info["tests_planned"] = sum(f.get("planned", 0) for f in finishes)
    moved = sorted(unit.removeprefix("row:") for f in finishes for unit in f.get("moved", []))
    if moved:
        info["rows_moved"] = moved
    return info


def coverage_of(tests: list[dict]) -> dict:
    """Op kinds the passing-or-recorded tests exercised, those never exercised, and the ONNX
    operators the converter emitted (see conformance.core.coverage for what an op kind is)."""
    from conformance.core.coverage import summary

    judged = [t for t in tests if t.get("outcome") in ("passed", "xfailed")]
    doc = summary({k for t in judged for k in t.get("op_kinds", [])})
    doc["onnx_ops"] = sorted({o for t in tests for o in t.get("onnx_ops", [])})
    doc["failing_op_kinds"] = sorted(
        {k for t in tests for k in t.get("op_kinds", [])} - set(doc["op_kinds"]))
    return doc


def _as_float(val):
    if isinstance(val, str):
        return float(val)
    return val


def _incomplete(tid: str) -> dict:
    op, _, rest = tid.partition("[")
    return {"test": tid, "op": op, "dtype": rest.rstrip("]").split("-")[0],
            "category": "", "outcome": "incomplete", "known": [], "failure": None}


def write_results(doc: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    # no indent: Python's json writes indented output with its pure-Python encoder, 5x slower
    tmp.write_text(json.dumps(jsonable(doc), allow_nan=False), encoding="utf-8")
    tmp.replace(path)


def load_results(path) -> dict:
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{path}: schema_version {doc.get('schema_version')!r} is not "
                         f"{SCHEMA_VERSION}; regenerate it with this version of the harness")
    return doc
