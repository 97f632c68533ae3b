"""What ``conformance report`` reads, checked before it reaches ``results.merge`` or the report.

Results lines (``.jsonl``) are checked one by one: a line that is not a record the merge and
the report can use (cut short by a killed run, not JSON, not an object, a record without
``test``, an unknown outcome, a wrongly typed field) is skipped, and one warning per file says
how many lines were skipped and why the first one was. A results document (``.json``) is
checked the same way: bad test entries and bad optional sections are dropped with a warning.
Nothing usable left is an error. The shapes checked are those of docs/results-schema.md.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from conformance.core.results import SCHEMA_VERSION, merge
from conformance.core.schema import (
    ANY,
    BOOL,
    COUNT,
    FINITE,
    NUMBER,
    STRING,
    AllOf,
    Either,
    Invalid,
    Is,
    ListOf,
    Literal,
    MapOf,
    Nullable,
    Obj,
    Schema,
    Tuple,
    ints,
    matching,
    parse,
    validate,
)

Warn = Callable[[str], None]

OUTCOMES = ("passed", "failed", "xfailed", "unsupported", "error", "incomplete")
#: A test's status in a trend: its outcome, or ``xpassed`` (see conformance.report.trend).
STATUSES = (*OUTCOMES, "xpassed")
#: An error as stored: a number, a non-finite float written as text, or null (not measured).
ERROR = Nullable(Either(NUMBER, Literal("nan", "inf", "-inf")))
#: A histogram bin: "0", a decade "1e-7" that a float can reach, "inf" or "nan".
BIN = matching(r"0|inf|nan|1e(-?(30[0-8]|[12]?\d?\d)|-3(09|1\d|2[0-4]))",
               'a bin label: "0", a decade such as "1e-7" (1e-324 to 1e308), "inf" or "nan"')
NAMES = ListOf(STRING)

CELL = Obj(optional={
    "pass": COUNT, "fail": COUNT, "xfail": COUNT, "unsupported": COUNT,
    "max_abs_err": Either(ERROR, STRING), "max_rel_err": Either(ERROR, STRING),
    "max_ulp_err": Either(ERROR, STRING),
    "err_hist": Obj(optional={k: MapOf(COUNT, key=BIN) for k in ("abs", "rel", "ulp")}),
}, expected="a cell object (pass, fail, xfail counts, errors, err_hist)")

_KNOWN_FIELDS = {"backends": NAMES, "reason": STRING, "dtypes": Nullable(NAMES),
                 "versions": Nullable(STRING), "package": Nullable(STRING)}
KNOWN = Obj(optional={**_KNOWN_FIELDS, "blame": Nullable(STRING)},
            expected="a recorded divergence object (backends, reason, blame, dtypes)")
#: Records listed by release: the report sorts them by blame, so it must be text.
RELEASE_KNOWN = Obj(optional={**_KNOWN_FIELDS, "blame": STRING, "installed": STRING,
                              "cpu": STRING},
                    expected="a recorded divergence object (backends, reason, blame, ...)")

FAILURE = Obj(optional={
    "message": STRING, "blame": Nullable(STRING), "case": STRING, "code": Nullable(STRING),
    "inputs": ListOf(ANY), "input_shapes": ListOf(ListOf(COUNT)),
    "params": ListOf(Tuple(STRING, ANY)), "expected": ANY, "actual": MapOf(ANY),
    "notes": NAMES, "bundle": Nullable(STRING), "repro": Nullable(STRING),
}, expected="a failure object (message, blame, case, inputs, ...)")

TEST_FIELDS = {
    "op": STRING, "category": Nullable(STRING), "dtype": STRING, "opset": Nullable(ints()),
    "opset_label": Nullable(STRING), "outcome": Literal(*OUTCOMES),
    "duration": Nullable(NUMBER), "examples": COUNT, "known": ListOf(KNOWN),
    "xfail_seen": MapOf(STRING), "failure": Nullable(FAILURE), "backends": MapOf(CELL),
    "value_classes": MapOf(COUNT), "outcomes_seen": MapOf(COUNT), "op_kinds": NAMES,
    "graph_rows": MapOf(COUNT),
    "onnx_ops": NAMES, "known_inactive": ListOf(RELEASE_KNOWN),
    "fixed_upstream": ListOf(RELEASE_KNOWN), "not_on_this_cpu": ListOf(RELEASE_KNOWN),
    "worker": STRING,
    "compiled": Obj(optional={"modules": COUNT, "seconds": FINITE}, expected="an object"),
    "backend_seconds": MapOf(FINITE),
}
TEST = Obj(required={"test": STRING}, optional=TEST_FIELDS, expected="a test record object")

RUN_FIELDS = {
    "started": STRING, "profile": STRING, "max_examples": COUNT, "derandomize": BOOL,
    "seed": Nullable(ints()), "converter": STRING, "backends": NAMES, "reference": STRING,
    "opsets": MapOf(ints()), "shard": STRING, "shards_merged": COUNT, "graph_ops": STRING,
    "target_error": BOOL, "versions": MapOf(STRING), "isolate": BOOL,
    "strict_records": BOOL, "c_layouts": STRING, "numba_dtypes": STRING, "interrupted": BOOL,
    "tests_ran": COUNT,
    "tests_planned": Nullable(COUNT), "c_modules_compiled": COUNT, "compile_seconds": FINITE,
    "numba_functions_compiled": COUNT, "numba_compile_seconds": FINITE,
    "backend_seconds": MapOf(FINITE),
    "cpu": Obj(optional={"model": STRING, "machine": STRING, "features": NAMES},
               expected="a CPU object (model, machine, features)"),
}
RUN = AllOf(
    Obj(optional=RUN_FIELDS, expected="a run object (started, profile, backends, ...)"),
    Is(lambda run: "c_modules_compiled" not in run or "compile_seconds" in run,
       "compile_seconds wherever c_modules_compiled is given"),
)

#: Line records by kind (conformance/core/results.py), each checked for the fields merge uses.
#: Records of other kinds pass through untouched: merge ignores kinds it does not know.
RECORDS: dict[str, Schema] = {
    "run": RUN,
    "example": Obj(required={
        "test": STRING,
        "backends": MapOf(Tuple(Literal("pass", "fail", "xfail", "unsupported"),
                                ERROR, ERROR, ERROR)),
    }, optional={"classes": NAMES, "rows": ListOf(STRING)}),
    "examples": Obj(required={"test": STRING, "backends": MapOf(CELL)},
                    optional={"examples": COUNT, "classes": MapOf(COUNT),
                              "rows": MapOf(COUNT)}),
    "graph": Obj(required={"test": STRING}, optional={"op_kinds": NAMES, "onnx_ops": NAMES}),
    "test": TEST,
    "compile": Obj(optional={"modules": COUNT, "seconds": NUMBER, "numba_functions": COUNT,
                             "numba_seconds": NUMBER}),
    "finish": Obj(optional={"exitstatus": ints(), "planned": COUNT}),
}
_KIND = Obj(required={"kind": STRING})
#: Records that make a row of the report; the others only annotate rows or the run.
USABLE = frozenset({"example", "examples", "test"})

_STATUS_LISTS = ListOf(Nullable(Literal(*STATUSES)))
_TREND_ITEM = Obj(required={"test": STRING, "previous": Nullable(STRING), "current": STRING},
                  optional={"op": STRING, "message": STRING})
SECTIONS: dict[str, Schema] = {
    "coverage": Obj(optional={"op_kinds": NAMES, "count": COUNT, "uncovered": NAMES,
                              "failing_op_kinds": NAMES, "onnx_ops": NAMES}),
    "speed": ListOf(Obj(required={"op": STRING, "backend": STRING, "median_us": FINITE},
                        optional={"dtype": STRING})),
    "trend": Obj(required={"runs": ListOf(Obj(optional={
        "label": STRING, "started": Nullable(STRING), "profile": Nullable(STRING),
        "converter": Nullable(STRING), "tests": COUNT, "statuses": MapOf(COUNT),
        "pass_rate": Nullable(NUMBER)}))}, optional={
        "newly_failing": ListOf(_TREND_ITEM), "newly_passing": ListOf(_TREND_ITEM),
        "newly_xpassed": ListOf(_TREND_ITEM), "newly_fixed": ListOf(_TREND_ITEM),
        "flaky": ListOf(Obj(required={"test": STRING}, optional={
            "op": STRING, "history": _STATUS_LISTS, "within_run": BOOL})),
        "ops": MapOf(_STATUS_LISTS), "history": MapOf(_STATUS_LISTS),
    }),
}


@dataclass
class _Lines:
    """One results file's usable records and what was skipped."""

    path: Path
    records: list = field(default_factory=list)
    lines: int = 0
    skipped: int = 0
    first_problem: str = ""

    def skip(self, number: int, problem: str) -> None:
        self.skipped += 1
        self.first_problem = self.first_problem or f"line {number}: {problem}"

    def warning(self) -> str | None:
        if not self.lines:
            return f"{self.path} is empty"
        if not self.skipped:
            return None
        return (f"{self.path}: skipped {self.skipped} of {self.lines} lines that are not "
                f"results records (first at {self.first_problem})")


def _record_problem(record) -> str | None:
    """Why one parsed line is not a record merge can use, or None."""
    try:
        validate(_KIND, record, "the record")
        validate(RECORDS.get(record["kind"], ANY), record, "the record")
    except Invalid as exc:
        return str(exc)
    return None


def _read_lines(path: Path) -> _Lines:
    found = _Lines(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise Invalid(f"{path}: cannot be read ({exc.strerror or exc})") from None
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        found.lines += 1
        try:
            record = parse(line.strip(), "the line")
        except Invalid as exc:
            found.skip(number, str(exc))
            continue
        problem = _record_problem(record)
        if problem:
            found.skip(number, problem)
        else:
            found.records.append(record)
    return found


def merge_files(paths: list[Path], warn: Warn) -> dict:
    """The results document merged from JSON-lines files, keeping only usable records."""
    files = [_read_lines(Path(p)) for p in paths]
    for f in files:
        message = f.warning()
        if message:
            warn(message)
    if not any(r["kind"] in USABLE for f in files for r in f.records):
        shown = ", ".join(str(f.path) for f in files[:3]) + (", ..." if len(files) > 3 else "")
        raise Invalid(f"no test or example records in {shown}; expected JSON lines written by "
                      "a conformance run (reports/.runs/<run>/*.jsonl)")
    with tempfile.TemporaryDirectory(prefix="conformance-report-") as tmp:
        clean = []
        for i, f in enumerate(files):
            if not f.records:
                continue
            if not f.skipped:
                clean.append(f.path)
                continue
            # merge reads files, so a file with skipped lines is handed over as a clean copy
            copy = Path(tmp) / f"{i}-{f.path.name}"
            copy.write_text("".join(json.dumps(r) + "\n" for r in f.records), encoding="utf-8")
            clean.append(copy)
        return merge(clean)


def load_document(path: Path, warn: Warn) -> dict:
    """A results document (results.json), with bad test entries and sections dropped."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise Invalid(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not data.strip():
        raise Invalid(f"{path} is empty; expected a results document (results.json)")
    doc = parse(data, str(path))
    try:
        validate(Obj(required={"schema_version": ANY, "tests": ListOf(ANY)}), doc, "the document")
    except Invalid as exc:
        raise Invalid(f"{path}: {exc} (not a results document)") from None
    if doc["schema_version"] != SCHEMA_VERSION:
        raise Invalid(f"{path}: schema_version {doc['schema_version']!r} is not "
                      f"{SCHEMA_VERSION}; regenerate it with this version of the harness")
    doc = dict(doc)
    run = doc.get("run", {})
    try:
        validate(RUN, run, "run")
    except Invalid as exc:
        warn(f"{path}: ignored the run settings: {exc}")
        doc["run"] = {}
    for key, schema in SECTIONS.items():
        if key in doc:
            try:
                validate(schema, doc[key], key)
            except Invalid as exc:
                warn(f"{path}: left out the {key} section: {exc}")
                del doc[key]
    tests, problems = [], []
    for i, test in enumerate(doc["tests"]):
        try:
            validate(TEST, test, f"tests[{i}]")
        except Invalid as exc:
            problems.append(str(exc))
        else:
            tests.append(test)
    if problems:
        warn(f"{path}: skipped {len(problems)} of {len(doc['tests'])} test entries that are "
             f"not test records (first: {problems[0]})")
    if not tests:
        raise Invalid(f"{path} holds no usable test records; expected a results document "
                      "written by a conformance run or conformance report")
    doc["tests"] = tests
    return doc


def load_any(path: Path, warn: Warn) -> dict:
    """A results document from a results.json file, a .jsonl file or a run folder."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise Invalid(f"{path} holds no .jsonl results files")
        return merge_files(files, warn)
    if path.suffix == ".jsonl":
        return merge_files([path], warn)
    return load_document(path, warn)
