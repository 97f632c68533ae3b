"""Ratios between benchmarks measured in the same run, and the rows of reports/speed.json.

Each benchmark tags itself with ``benchmark.extra_info`` (``kind`` plus the parameters
that identify it); a ``Compare`` divides the timings of two benchmarks of one kind that
differ only in ``key``. Ratios of medians are the headline; ratios of minima are printed
beside them as a check on noise (on a quiet machine the two agree).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Compare:
    kind: str
    key: str
    numerator: object
    denominator: object
    target: float | None = None
    label: str = ""
    #: only the measurements of this context ("case=tiny"), where a target holds for one
    context: str | None = None


COMPARISONS = (
    Compare("convert-scaling", "nodes", 2000, 1000, label="converter 2k / 1k nodes"),
    Compare("convert-scaling", "nodes", 10000, 5000, label="converter 10k / 5k nodes"),
    Compare("convert-scaling", "nodes", 20000, 10000, 2.2, "converter 20k / 10k nodes"),
    Compare("convert", "how", "converter", "direct", 2.0, "converter / direct onnx.helper"),
    Compare("harness", "how", "harness", "bare", 1.5, "Harness.run / bare backend loop"),
    Compare("harness", "how", "runners", "bare", None, "prepared runners / bare backend loop"),
    Compare("harness", "how", "harness", "runners", None, "Harness.run / prepared runners"),
    Compare("op-speed", "backend", "onnxruntime", "pytensor-c", None, "onnxruntime / pytensor-c"),
    Compare("model", "backend", "onnxruntime", "pytensor", None,
            "onnxruntime / pytensor default mode"),
    Compare("model", "backend", "onnxruntime-floor", "pytensor", None,
            "onnxruntime call floor / pytensor default mode"),
    Compare("model", "backend", "onnxruntime-by-hand", "pytensor", None,
            "onnxruntime by hand / pytensor default mode"),
    Compare("model", "backend", "onnxruntime", "onnxruntime-by-hand", None,
            "onnxruntime / by hand"),
    # the ONNX mode's call (PyTensor's Function around the session) against the bare session
    Compare("onnx-mode", "how", "mode", "bare", 1.2, "ONNX mode / bare session", "case=tiny"),
    Compare("onnx-mode", "how", "mode", "bare", 1.1, "ONNX mode / bare session", "case=large"),
    Compare("onnx-mode", "how", "mode", "bare", None, "ONNX mode / bare session", "case=pymc"),
    Compare("onnx-mode", "how", "session", "bare", None,
            "ONNX mode's session call / bare session"),
    Compare("onnx-mode", "how", "mode", "session", None,
            "ONNX mode / its session call (the rest is PyTensor's Function)"),
    Compare("onnx-mode", "how", "mode", "cvm", None, "ONNX mode / C VM mode"),
    Compare("onnx-mode", "how", "mode", "numba", None, "ONNX mode / NUMBA mode"),
    Compare("nuts", "how", "ONNX", "default", None, "NUTS run, ONNX mode / default mode"),
    Compare("onnx-rewrites", "rewrites", "no-fusion", "chosen", None,
            "ONNX mode without fusion / as chosen"),
    Compare("onnx-rewrites", "rewrites", "blas", "chosen", None,
            "ONNX mode with BLAS forms / as chosen"),
)
#: the targets set for the models' ratios: (geometric mean, worst model), per data size
MODEL_TARGETS = {40: (1.5, 4.0), 100_000: (1.0, None)}
MAX_NODES_PER_NODE = 4.0


@dataclass(frozen=True)
class Ratio:
    label: str
    context: str
    median: float
    minimum: float
    target: float | None

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        return "met" if self.median <= self.target else "MISSED"

    def line(self) -> str:
        where = f" [{self.context}]" if self.context else ""
        target = f"  target <= {self.target:g}: {self.verdict}" if self.target else ""
        return f"{self.label}{where}: {self.median:.2f}x (min {self.minimum:.2f}x){target}"


def _context(info: dict, key: str) -> tuple:
    # a model's node count describes a measurement, it does not tell two apart
    return tuple(sorted((k, v) for k, v in info.items() if k not in (key, "kind", "nodes")))


def ratios(records: list[dict]) -> list[Ratio]:
    """Every ratio of ``COMPARISONS`` whose two sides were both measured."""
    found = []
    for cmp in COMPARISONS:
        sides: dict[tuple, dict] = {}
        for rec in records:
            info = rec["info"]
            if info.get("kind") == cmp.kind and info.get(cmp.key) in (cmp.numerator,
                                                                     cmp.denominator):
                sides.setdefault(_context(info, cmp.key), {})[info[cmp.key]] = rec
        for context, pair in sides.items():
            where = ", ".join(f"{k}={v}" for k, v in context)
            if cmp.context is not None and where != cmp.context:
                continue
            if cmp.numerator in pair and cmp.denominator in pair:
                num, den = pair[cmp.numerator], pair[cmp.denominator]
                found.append(Ratio(cmp.label, where, num["median"] / den["median"],
                                   num["min"] / den["min"], cmp.target))
    return found


def speed_rows(records: list[dict]) -> list[dict]:
    """reports/speed.json: one row per (op, dtype, size, backend), median in microseconds."""
    return [
        {"op": r["info"]["op"], "dtype": r["info"]["dtype"], "backend": r["info"]["backend"],
         "median_us": round(r["median"] * 1e6, 3), "size": r["info"]["size"]}
        for r in records if r["info"].get("kind") == "op-speed"
    ]


def per_node(records: list[dict]) -> str:
    """Converter microseconds per node at each measured graph size (flat when linear)."""
    scaling = sorted((r["info"]["nodes"], r["median"]) for r in records
                     if r["info"].get("kind") == "convert-scaling")
    return ", ".join(f"{n}: {t / n * 1e6:.1f}" for n, t in scaling)


def _geometric_mean(found: list[Ratio]) -> float:
    return math.exp(sum(math.log(r.median) for r in found) / len(found))


def model_summary(records: list[dict]) -> list[str]:
    """Per data size: the geometric mean and the worst of the models' ONNX Runtime / PyTensor
    median ratios against the targets, beside the geometric mean of the call floor (a model
    of the same signature that computes nothing) / PyTensor, the least any export could
    reach, and of the models written by hand in ONNX; and the worst ONNX nodes per compiled
    PyTensor node."""
    found = ratios(records)
    lines = []
    for size, (mean_target, worst_target) in MODEL_TARGETS.items():
        def picked(label, size=size):
            return [r for r in found if r.label == label
                    and f"size={size}" in r.context.split(", ")]
        models = picked("onnxruntime / pytensor default mode")
        if not models:
            continue
        mean, worst = _geometric_mean(models), max(models, key=lambda r: r.median)
        verdict = "met" if mean <= mean_target else "MISSED"
        line = (f"models at n={size}: geometric mean {mean:.2f}x (target <= {mean_target:g}: "
                f"{verdict}), worst {worst.median:.2f}x [{worst.context}]")
        if worst_target is not None:
            line += f" (target <= {worst_target:g}: "
            line += "met)" if worst.median <= worst_target else "MISSED)"
        floors = picked("onnxruntime call floor / pytensor default mode")
        if floors:
            line += (f"; call floor {_geometric_mean(floors):.2f}x "
                     f"(worst {max(r.median for r in floors):.2f}x)")
        for hand in picked("onnxruntime by hand / pytensor default mode"):
            line += f"; written by hand {hand.median:.2f}x [{hand.context}]"
        lines.append(line)
    per_node = {}
    for r in records:
        info = r["info"]
        if info.get("kind") == "model":
            per_node[info["model"]] = info["onnx_nodes"] / info["pytensor_nodes"]
    if per_node:
        name = max(per_node, key=per_node.get)
        verdict = "met" if per_node[name] <= MAX_NODES_PER_NODE else "MISSED"
        lines.append(f"ONNX nodes per PyTensor node: worst {per_node[name]:.2f} ({name}; "
                     f"target <= {MAX_NODES_PER_NODE:g}: {verdict})")
    return lines


def rewrite_nodes(records: list[dict]) -> str:
    """The ONNX mode's model size under each measured rewrite choice, by case."""
    found = sorted((r["info"]["case"], r["info"]["rewrites"], r["info"]["nodes"])
                   for r in records if r["info"].get("kind") == "onnx-rewrites")
    return "; ".join(f"{case} {rewrites}: {nodes}" for case, rewrites, nodes in found)
