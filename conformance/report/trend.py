"""Trend: how one results document compares with earlier ones (baselines, oldest first).

:func:`compute` returns the ``"trend"`` value of the results document (described in
docs/results-schema.md): one summary per run, the tests that newly fail, newly pass or newly
fail as a strict XPASS, the ones whose recorded divergence went away with a release
("fixed in onnxruntime 1.32.0"), the flaky ones, and the outcome history per test and per op.

A test's *status* in one run is its outcome (``passed``, ``failed``, ``xfailed``, ``error``,
``incomplete``), except that a failure whose message starts with ``XPASS(strict)`` (a recorded
divergence that no longer shows) is ``xpassed``; None means the run did not have the test.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path

PASSING = frozenset({"passed", "xfailed"})
FAILING = frozenset({"failed", "error", "xpassed"})
#: Worst first: the status an op gets in a run is the worst of its tests' statuses.
SEVERITY = ("error", "failed", "xpassed", "incomplete", "xfailed", "passed")


def status(test: dict) -> str:
    """A test's outcome, with ``xpassed`` for a failure that is a strict XPASS."""
    outcome = test.get("outcome", "incomplete")
    message = (test.get("failure") or {}).get("message") or ""
    if outcome == "failed" and str(message).startswith("XPASS(strict)"):
        return "xpassed"
    return outcome


def load(path) -> dict:
    """A baseline: a results.json file, a .jsonl file or a run folder holding .jsonl files."""
    from conformance.core.results import load_results, merge

    path = Path(path)
    if path.is_dir():
        return merge(sorted(path.glob("*.jsonl")))
    if path.suffix == ".jsonl":
        return merge([path])
    return load_results(path)


def run_summary(doc: dict, label: str) -> dict:
    statuses = Counter(status(t) for t in doc["tests"])
    judged = sum(n for s, n in statuses.items() if s in PASSING | FAILING)
    passing = sum(statuses[s] for s in PASSING)
    run = doc.get("run", {})
    return {
        "label": label, "started": run.get("started"), "profile": run.get("profile"),
        "converter": run.get("converter"), "tests": len(doc["tests"]),
        "statuses": dict(statuses),
        "pass_rate": passing / judged if judged else None,
    }


def _fix_note(test: dict, versions: dict) -> str:
    """"fixed in onnxruntime 1.32.0: <reason>" when a record no longer holds for the
    installed release (or did not show on a release newer than the records were checked on)."""
    for rec in test.get("known_inactive") or []:
        package = rec.get("package")
        if package:
            return f"fixed in {package} {versions.get(package, '?')}: {rec.get('reason', '')}"
    for rec in test.get("fixed_upstream") or []:
        return f"fixed upstream? in {rec.get('installed', '?')}: {rec.get('reason', '')}"
    return ""


def _item(test: dict, previous: str | None, versions: dict | None = None) -> dict:
    message = str((test.get("failure") or {}).get("message") or "")
    if not message and versions is not None:
        message = _fix_note(test, versions)
    return {"test": test["test"], "op": test.get("op", ""), "previous": previous,
            "current": status(test), "message": message.splitlines()[0] if message else ""}


def _previous(history: list[str | None]) -> str | None:
    """The latest status before the current run, skipping runs without a verdict."""
    for value in reversed(history[:-1]):
        if value is not None and value != "incomplete":
            return value
    return None


def _flips(history: list[str | None]) -> int:
    kinds = [s in FAILING for s in history if s in PASSING | FAILING]
    return sum(a != b for a, b in pairwise(kinds))


def _conflicting(test: dict) -> bool:
    """Passed and failed within one merged document (e.g. two shards ran the test)."""
    seen = set(test.get("outcomes_seen") or ())
    return bool(seen & PASSING) and bool(seen & FAILING)


def _worst(statuses) -> str | None:
    present = [s for s in statuses if s is not None]
    if not present:
        return None
    return min(present, key=lambda s: SEVERITY.index(s) if s in SEVERITY else len(SEVERITY))


def compute(current: dict, baselines: list[dict], labels: list[str] | None = None) -> dict:
    """The trend of ``current`` over ``baselines`` (oldest first); ``labels`` name the
    baselines (default: "baseline 1", ...)."""
    docs = [*baselines, current]
    labels = [*(labels or [f"baseline {i + 1}" for i in range(len(baselines))]), "this run"]
    if len(labels) != len(docs):
        raise ValueError(f"labels={labels[:-1]!r} must name each of the {len(baselines)} "
                         "baselines")
    history: dict[str, list[str | None]] = {}
    op_of: dict[str, str] = {}
    conflicting: set[str] = set()
    for i, doc in enumerate(docs):
        for test in doc["tests"]:
            history.setdefault(test["test"], [None] * len(docs))[i] = status(test)
            op_of.setdefault(test["test"], test.get("op", ""))
            if _conflicting(test):
                conflicting.add(test["test"])
    trend = {"runs": [run_summary(d, lbl) for d, lbl in zip(docs, labels, strict=True)],
             "newly_failing": [], "newly_passing": [], "newly_xpassed": [], "newly_fixed": [],
             "flaky": []}
    versions = current.get("run", {}).get("versions") or {}
    for test in current["tests"]:
        past = history[test["test"]]
        now, before = past[-1], _previous(past)
        if now == "xpassed" and before == "xfailed":
            trend["newly_xpassed"].append(_item(test, before))
        elif now in FAILING and (before is None or before in PASSING):
            trend["newly_failing"].append(_item(test, before))
        elif now in PASSING and before in FAILING:
            trend["newly_passing"].append(_item(test, before))
        elif now == "passed" and before == "xfailed":
            trend["newly_fixed"].append(_item(test, before, versions))
    for tid in sorted(history):
        if _flips(history[tid]) >= 2 or tid in conflicting:
            trend["flaky"].append({"test": tid, "op": op_of[tid], "history": history[tid],
                                   "within_run": tid in conflicting})
    by_op: dict[str, list[list[str | None]]] = {}
    for tid, past in history.items():
        by_op.setdefault(op_of[tid], []).append(past)
    trend["ops"] = {op: [_worst(column) for column in zip(*rows, strict=True)]
                    for op, rows in sorted(by_op.items())}
    trend["history"] = dict(sorted(history.items()))
    return trend
