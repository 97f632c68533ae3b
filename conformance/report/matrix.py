"""The op x dtype x backend matrix: one row per test, one cell per backend, and what a cell
shows when opened (numbers for every cell, failure and expected-failure details)."""

from __future__ import annotations

from conformance.report.code import counterexample, literal
from conformance.report.trend import status

#: What a cell's colour means, in legend order.
STATES = {
    "pass": "every example agreed with the reference",
    "partial": "the converter refused some layouts (unsupported); every example it converted "
               "agreed",
    "fail": "some example disagreed and no recorded divergence explains it",
    "xfail": "some example showed a recorded divergence (expected failure)",
    "xpass": "a recorded divergence never showed: strict XPASS, the test fails",
    "unsupported": "the converter refused every example: nothing to judge",
    "none": "not run (a backend left out of the run, or a dtype beyond --numba-dtypes: the "
            "default run judges Numba on each row's first dtype)",
}
#: What a cell shows before its counts.
SYMBOLS = {"pass": "✓", "partial": "◑", "fail": "✗", "xfail": "◐", "xpass": "XPASS",
           "unsupported": "⊘", "none": "–"}
#: Per-example outcomes a cell counts (docs/results-schema.md, cell).
COUNTS = ("pass", "fail", "xfail", "unsupported")


#: How much of a failure message the matrix search looks at.
SEARCH_CHARS = 240


def unseen_known(test: dict) -> list[dict]:
    """The recorded divergences a strict-XPASS test never saw."""
    if status(test) != "xpassed":
        return []
    seen = {str(k) for k in test.get("xfail_seen") or {}}
    return [k for i, k in enumerate(test.get("known") or []) if str(i) not in seen]


def cell_state(cell: dict | None, xpass: bool = False) -> str:
    """One of STATES for one op x dtype x backend cell."""
    if cell and cell.get("fail"):
        return "fail"
    if xpass:
        return "xpass"
    if not cell:
        return "none"
    if cell.get("xfail"):
        return "xfail"
    if cell.get("pass"):
        return "partial" if cell.get("unsupported") else "pass"
    return "unsupported" if cell.get("unsupported") else "none"


def _blames(test: dict, backend: str, state: str, unseen: list[dict]) -> list[str]:
    if state == "fail":
        return [(test.get("failure") or {}).get("blame") or "unknown"]
    if state == "xpass":
        known = unseen
    elif state == "xfail":
        known = test.get("known") or []
    else:
        return []
    return sorted({k.get("blame") or "unknown" for k in known
                   if backend in k.get("backends", []) or backend in k.get("shared_by", [])})


def _title(backend: str, cell: dict) -> str:
    if not cell:
        return f"{backend}: not run"
    counts = ", ".join(f"{cell.get(k, 0)} {k}" for k in COUNTS if cell.get(k))
    ulp = cell.get("max_ulp_err")
    return f"{backend}: {counts or 'no examples'}" + (f"; worst {_num(ulp)} ulp" if ulp else "")


def _ulp_label(cell: dict) -> str:
    """The cell's worst float error in ulps of the reference, shown in the cell so that an
    accuracy regression is seen before it fails: "" when every example was exact."""
    ulp = cell.get("max_ulp_err")
    if not isinstance(ulp, int | float) or not ulp or ulp != ulp or ulp == float("inf"):
        return ""
    return f"{ulp:.0f} ulp" if ulp < 1e3 else f"{ulp:.0e} ulp"


def _num(value) -> str:
    if value is None or isinstance(value, str):
        return str(value)
    return "0" if value == 0 else f"{value:.2g}"


def backends_of(doc: dict) -> list[str]:
    """The backends judged against the reference, in run order."""
    run = doc.get("run", {})
    named = [b for b in run.get("backends", []) if b != run.get("reference")]
    found = {b for t in doc["tests"] for b in t.get("backends", {})}
    return named + sorted(found - set(named))


def rows(doc: dict, backends: list[str]) -> list[dict]:
    """One matrix row per test, in results order; ``idx`` is the row's stable id."""
    out = []
    for idx, test in enumerate(doc["tests"]):
        unseen = unseen_known(test)
        xpass_backends = {b for k in unseen for b in k.get("backends", [])}
        cells = []
        for backend in backends:
            cell = test.get("backends", {}).get(backend) or {}
            state = cell_state(cell, backend in xpass_backends)
            examples = sum(cell.get(k, 0) for k in COUNTS)
            cells.append({"backend": backend, "state": state, "examples": examples,
                          "fail": cell.get("fail", 0), "xfail": cell.get("xfail", 0),
                          "unsupported": cell.get("unsupported", 0),
                          "symbol": SYMBOLS[state],
                          "blames": _blames(test, backend, state, unseen),
                          "title": _title(backend, cell), "ulp": _ulp_label(cell)})
        failure = test.get("failure") or {}
        blames = {b for c in cells for b in c["blames"]}
        if failure.get("blame"):
            blames.add(failure["blame"])
        reasons = " ".join(k.get("reason", "") for k in test.get("known") or [])
        out.append({
            "idx": idx, "test": test["test"], "op": test.get("op", ""),
            "category": test.get("category") or "", "dtype": test.get("dtype", ""),
            "opset": test.get("opset_label") or "default", "outcome": test.get("outcome", ""),
            "status": status(test), "examples": test.get("examples", 0), "cells": cells,
            "blames": sorted(blames),
            "detail": bool(failure or test.get("known") or test.get("unsupported")),
            "search": " ".join([test["test"], test.get("category") or "",
                                str(failure.get("message") or "")[:SEARCH_CHARS],
                                reasons]).lower(),
        })
    return out


def _input_rows(failure: dict) -> list[tuple[str, str]]:
    """(label, value) per input of a failure record: "x0 [2, 3]", "[1.0, nan, ...]"."""
    shapes = failure.get("input_shapes") or []
    return [(f"x{i}" + (f" {list(shapes[i])}" if i < len(shapes) else ""), literal(value))
            for i, value in enumerate(failure.get("inputs") or [])]


def details(doc: dict) -> list[dict]:
    """Server-rendered details for the tests that failed or have recorded divergences."""
    out = []
    for idx, test in enumerate(doc["tests"]):
        failure = test.get("failure")
        known = test.get("known") or []
        unsupported = test.get("unsupported") if isinstance(test.get("unsupported"), dict) else None
        if not failure and not known and not unsupported:
            continue
        seen = {str(k): v for k, v in (test.get("xfail_seen") or {}).items()}
        out.append({
            "idx": idx, "test": test["test"], "status": status(test),
            "failure": failure and {**failure, "input_rows": _input_rows(failure),
                                    "snippet": counterexample(failure, test.get("dtype", ""))},
            "known": [{**k, "seen": seen.get(str(i))} for i, k in enumerate(known)],
            "unseen": [k.get("reason") for k in unseen_known(test)],
            "unsupported": unsupported,
        })
    return out


def cell_data(doc: dict, backends: list[str]) -> list[dict]:
    """Per test, what the details panel shows for each cell (embedded as JSON)."""
    out = []
    for test in doc["tests"]:
        cells = {}
        for backend in backends:
            cell = test.get("backends", {}).get(backend)
            if cell:
                cells[backend] = {
                    "pass": cell.get("pass", 0), "fail": cell.get("fail", 0),
                    "xfail": cell.get("xfail", 0), "unsupported": cell.get("unsupported", 0),
                    **{k: cell.get(f"max_{k}_err") for k in ("abs", "rel", "ulp")},
                    "hist": cell.get("err_hist") or {},
                }
        out.append({"test": test["test"], "status": status(test),
                    "examples": test.get("examples", 0),
                    "classes": test.get("value_classes") or {},
                    "duration": test.get("duration"), "cells": cells})
    return out
