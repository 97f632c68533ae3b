"""What the report's sections show, computed from the results document and the matrix rows:
summary, run settings, error distributions, coverage, speed and trend."""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict

from conformance.report import svg

VALUE_CLASSES = ("0-d", "empty", "broadcast", "nan/inf", "ties", "-0.0")
FLOAT_ONLY = frozenset({"nan/inf", "ties", "-0.0"})
#: Run settings in the order they are shown; any other keys follow.
RUN_KEYS = (
    ("profile", "profile"), ("max_examples", "max examples"), ("derandomize", "derandomized"),
    ("seed", "seed"), ("opsets", "opsets"), ("shard", "shard"),
    ("shards_merged", "shards merged"), ("converter", "converter"),
    ("backends", "backends"), ("numba_dtypes", "Numba dtypes per row"),
    ("reference", "reference"), ("started", "started"),
)


def _text(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return str(value)


def cpu_text(cpu: dict | None) -> str:
    """``model (machine; features)`` of the run's CPU (conformance.session.hardware), or
    "unknown"."""
    if not cpu:
        return "unknown"
    return (f"{cpu.get('model', '?')} ({cpu.get('machine', '?')}; "
            f"{', '.join(cpu.get('features') or []) or 'no listed SIMD features'})")


def run_settings(run: dict) -> list[tuple[str, str]]:
    shown = [(label, _text(run[key])) for key, label in RUN_KEYS if key in run]
    if "cpu" in run:
        shown.append(("CPU", cpu_text(run["cpu"])))
    known = {key for key, _ in RUN_KEYS} | {"versions", "kind", "cpu"}
    shown += [(key.replace("_", " "), _text(v)) for key, v in run.items() if key not in known]
    if "seed" not in run:
        shown.insert(3, ("seed", "derandomized (fixed per test)" if run.get("derandomize")
                         else "random (not recorded)"))
    return shown


def summary(rows: list[dict], backends: list[str]) -> dict:
    """Pass rates by category and backend, and failing cells counted by blame."""
    by_cat: dict[str, dict] = defaultdict(lambda: {"tests": 0, "ok": 0, "cells": {}})
    blame: dict[str, Counter] = defaultdict(Counter)
    states: Counter = Counter()
    for row in rows:
        cat = by_cat[row["category"] or "(none)"]
        cat["tests"] += 1
        cat["ok"] += row["status"] in ("passed", "xfailed")
        for cell in row["cells"]:
            states[cell["state"]] += 1
            if cell["state"] == "none":
                continue
            counts = cat["cells"].setdefault(cell["backend"], Counter())
            counts["run"] += 1
            counts[cell["state"]] += 1
            for name in cell["blames"]:
                blame[name][cell["state"]] += 1
    categories = []
    for name in sorted(by_cat):
        cat = by_cat[name]
        cells = {b: _rate(cat["cells"].get(b, Counter())) for b in backends}
        categories.append({"name": name, "tests": cat["tests"],
                           "test_rate": cat["ok"] / cat["tests"], "cells": cells})
    total = Counter()
    for cat in by_cat.values():
        for counts in cat["cells"].values():
            total.update(counts)
    blames = sorted(({"blame": b, **c} for b, c in blame.items()),
                    key=lambda d: (-d.get("fail", 0), -d.get("xpass", 0), d["blame"]))
    return {"categories": categories, "blames": blames, "states": states,
            "cell_rate": _rate(total)}


def _rate(counts: Counter) -> dict:
    """A cell passes when every example it judged agreed (``partial``: on the layouts the
    converter converted); a cell whose every example was refused is not judged, so it counts
    in neither part of the rate."""
    run = counts.get("run", 0)
    judged = run - counts.get("unsupported", 0)
    passed = counts.get("pass", 0) + counts.get("partial", 0)
    return {"run": run, "judged": judged, "pass": passed, "fail": counts.get("fail", 0),
            "xfail": counts.get("xfail", 0), "xpass": counts.get("xpass", 0),
            "partial": counts.get("partial", 0), "unsupported": counts.get("unsupported", 0),
            "rate": passed / judged if judged else None}


def error_plots(doc: dict, backends: list[str], metric: str = "ulp") -> dict:
    """Per op, the histogram of per-example ``metric`` errors on each backend (all the op's
    dtypes and opsets together); ops whose every example was exact are only listed."""
    hists: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for test in doc["tests"]:
        for backend, cell in test.get("backends", {}).items():
            hists[test.get("op", "")][backend].update((cell.get("err_hist") or {}).get(metric, {}))
    inexact = {op: h for op, h in hists.items()
               if any(set(c) - {"0"} for c in h.values())}
    bins = svg.bin_range({b for h in inexact.values() for c in h.values() for b in c})

    def worst(op):
        return -max(svg.bin_order(b) for c in inexact[op].values() for b in c)

    plots = []
    for op in sorted(inexact, key=lambda op: (worst(op), op)):
        series = [(b, svg.color(i), dict(inexact[op][b]))
                  for i, b in enumerate(backends) if inexact[op].get(b)]
        plots.append({"op": op, "svg": svg.histogram_strips(series, bins, metric=metric)})
    exact = sorted(op for op, h in hists.items() if op not in inexact and any(h.values()))
    return {"metric": metric, "plots": plots, "exact": exact}


def _per_operand(classes: Counter) -> dict[str, list[tuple[int, int]]]:
    """Per value class, (operand, examples that drew it there) for each operand that can
    hold it (a float-only class skips operands never a float), for ops whose cases have
    several operands (``Case.value_classes`` names them ``"<class> (x<i>)"``)."""
    found = [re.fullmatch(r"(.+) \(x(\d+)\)", key) for key in classes]
    operands = 1 + max((int(m.group(2)) for m in found if m), default=-1)
    if operands < 2:
        return {}
    floats = [classes.get(f"float (x{i})", 0) > 0 for i in range(operands)]
    return {c: [(i, classes.get(f"{c} (x{i})", 0)) for i in range(operands)
                if c not in FLOAT_ONLY or floats[i]]
            for c in VALUE_CLASSES if c != "broadcast"}


def coverage(doc: dict, rows: list[dict]) -> dict:
    """The converter coverage lists (when the results carry them) and, per op, how many
    examples its tests ran and which value classes they drew."""
    per_op: dict[str, dict] = {}
    for row, test in zip(rows, doc["tests"], strict=True):
        op = per_op.setdefault(row["op"], {"op": row["op"], "tests": 0, "examples": [],
                                           "classes": Counter(), "floats": False})
        op["tests"] += 1
        op["examples"].append(row["examples"])
        op["classes"].update(test.get("value_classes") or {})
        op["floats"] = op["floats"] or row["dtype"].startswith(("float", "complex"))
    ops = []
    for op in sorted(per_op.values(), key=lambda o: o["op"]):
        counts = op["examples"]
        classes = {c: (op["classes"].get(c, 0) if op["floats"] or c not in FLOAT_ONLY else None)
                   for c in VALUE_CLASSES}
        per_operand = _per_operand(op["classes"])
        missing = [c for c, n in classes.items() if n == 0]
        missing += [f"{c} (x{i})" for c, counts in per_operand.items()
                    for i, n in counts if n == 0 and classes[c]]
        ops.append({**op, "classes": classes, "per_operand": per_operand, "min": min(counts),
                    "median": statistics.median(counts), "max": max(counts),
                    "missing": missing})
    lists = doc.get("coverage") or {}
    graph_rows: Counter = Counter()
    for test in doc["tests"]:
        graph_rows.update(test.get("graph_rows") or {})
    return {"lists": {k: sorted(map(str, lists.get(k) or [])) if k in lists else None
                      for k in ("op_kinds", "uncovered", "onnx_ops")},
            "ops": ops, "classes": VALUE_CLASSES,
            "graph_rows": sorted(graph_rows.items(), key=lambda kv: (-kv[1], kv[0]))}


def speed(doc: dict, backends: list[str]) -> dict | None:
    """Per op, the median over its dtypes of each backend's median time per call."""
    entries = doc.get("speed")
    if not entries:
        return None
    found: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for e in entries:
        try:
            found[str(e["op"])][str(e["backend"])].append(float(e["median_us"]))
        except (KeyError, TypeError, ValueError):
            continue
    names = backends + sorted({b for d in found.values() for b in d} - set(backends))
    rows = [(op, {b: statistics.median(v) for b, v in by_backend.items()})
            for op, by_backend in sorted(found.items())]
    return {"entries": len(entries), "backends": names,
            "colors": [svg.color(i) for i in range(len(names))],
            "svg": svg.dot_plot(rows, names)}


def trend(doc: dict, rows: list[dict]) -> dict | None:
    """The trend section: the pass-rate line, the lists, and the per-op history with the
    ops whose status changed first."""
    data = doc.get("trend")
    if not data:
        return None
    index = {row["test"]: row["idx"] for row in rows}
    runs = data.get("runs", [])
    ops = data.get("ops", {})
    changed = [op for op, h in ops.items() if len({s for s in h if s is not None}) > 1]
    return {
        **data, "index": index, "changed": changed,
        "steady": [op for op in ops if op not in changed],
        "svg": svg.line_chart((r.get("label", "?"), r.get("pass_rate")) for r in runs),
    }


def records(doc: dict) -> dict | None:
    """Recorded divergences whose standing depends on the installed releases: those that did
    not show on a release newer than the records were checked against ("fixed upstream?"),
    those that a ``versions`` bound switched off (they ran as ordinary checks) and those of
    another CPU's kernels that did not show on this one."""
    fixed: dict[tuple, list[str]] = defaultdict(list)
    inactive: dict[tuple, list[str]] = defaultdict(list)
    elsewhere: dict[tuple, list[str]] = defaultdict(list)
    for test in doc["tests"]:
        for rec in test.get("not_on_this_cpu") or []:
            elsewhere[(rec.get("cpu", "?"), rec.get("blame", ""), rec.get("reason", ""))] \
                .append(test["test"])
        for rec in test.get("fixed_upstream") or []:
            fixed[(rec.get("installed", "?"), rec.get("blame", ""), rec.get("reason", ""))] \
                .append(test["test"])
        for rec in test.get("known_inactive") or []:
            inactive[(rec.get("versions") or "", rec.get("blame", ""), rec.get("reason", ""))] \
                .append(test["test"])
    if not fixed and not inactive and not elsewhere:
        return None

    def listing(found):
        return [{"what": k[0], "blame": k[1], "reason": k[2], "tests": sorted(v)}
                for k, v in sorted(found.items())]

    return {"fixed": listing(fixed), "inactive": listing(inactive),
            "elsewhere": listing(elsewhere)}


def upstream(doc: dict) -> dict | None:
    """The upstream root causes ``conformance upstream --report`` attached to the results
    (optional key ``upstream``: ``{"installed", "causes": [...]}``, see
    conformance.upstream.issues)."""
    data = doc.get("upstream")
    if not isinstance(data, dict) or not data.get("causes"):
        return None
    causes = [{"blame": str(c.get("blame", "")), "reason": str(c.get("reason", "")),
               "records": [str(r) for r in c.get("records") or []],
               "cells": [str(x) for x in c.get("cells") or []],
               "since": c.get("since"), "fixed": c.get("fixed"),
               "issue": _relative(c.get("issue")), "script": _relative(c.get("script"))}
              for c in data["causes"] if isinstance(c, dict)]
    return {"installed": [str(v) for v in data.get("installed") or []], "causes": causes}


def _relative(link) -> str | None:
    """A link to a file beside the report; anything with a scheme (javascript:) is dropped."""
    return link if isinstance(link, str) and link and ":" not in link else None
