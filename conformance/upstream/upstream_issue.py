"""The texts ``conformance upstream`` writes for a root cause: issue.md, repro.py, and the
index (index.json, read by the report's "upstream" section)."""

from __future__ import annotations

import inspect
import json
import platform
import textwrap
from pathlib import Path

import numpy as np

from conformance import versions
from conformance.upstream import upstream_script as script

SPEC_URL = "https://onnx.ai/onnx/operators/onnx__{op}.html"
NEEDS = {"onnxruntime": ("numpy", "onnxruntime"), "onnx": ("numpy", "onnx"),
         "pytensor": ("numpy", "pytensor")}
IMPORTS = {
    "onnxruntime": "import onnxruntime as ort",
    "onnx": "import onnx\nfrom onnx.reference import ReferenceEvaluator",
    "pytensor": "import importlib.util\nimport os\n\n"
                "# inner graphs (OpFromGraph) on the cvm linker, as the harness ran them\n"
                "if \"linker=\" not in os.environ.get(\"PYTENSOR_FLAGS\", \"\"):\n"
                "    os.environ[\"PYTENSOR_FLAGS\"] = "
                "(os.environ.get(\"PYTENSOR_FLAGS\", \"\") + \",linker=cvm\").lstrip(\",\")\n"
                "import pytensor\nimport pytensor.tensor as pt\n"
                "from pytensor.compile.mode import Mode",
}
RUNNERS = {
    "onnxruntime": '''
def run_onnxruntime(model_bytes, inputs, optimize=True):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    feed = dict(zip([i.name for i in session.get_inputs()], inputs))
    return [np.asarray(o) for o in session.run(None, feed)]
''',
    "onnx": '''
def run_reference(model, inputs):
    feed = dict(zip([i.name for i in model.graph.input], inputs))
    return [np.asarray(o) for o in ReferenceEvaluator(model).run(None, feed)]
''',
    "pytensor": '''
def compiled_run(graph, inputs, linker, optimizer):
    graph_inputs, graph_outputs = graph()
    fn = pytensor.function(graph_inputs, graph_outputs, on_unused_input="ignore",
                           mode=Mode(linker=linker, optimizer=optimizer))
    return [np.array(o, copy=True) for o in fn(*inputs)]


def run_pytensor(graph, inputs, linker, optimizer):
    """compiled_run in a child process where there is fork: a case that takes the process
    down (XLA aborting, an out-of-bounds write) is then an outcome, not the script's end."""
    if linker == "jax" and importlib.util.find_spec("jax") is None:
        raise RuntimeError("this case needs jax, which is not installed")
    if not hasattr(os, "fork"):
        return compiled_run(graph, inputs, linker, optimizer)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            result = ("returned", compiled_run(graph, inputs, linker, optimizer))
        except BaseException as exc:  # the parent raises it
            result = ("raised", f"{type(exc).__name__}: {exc}")
        with os.fdopen(write, "wb") as out:
            pickle.dump(result, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as got:
        data = got.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        raise RuntimeError(f"crashed the process (killed by signal {os.WTERMSIG(status)})")
    kind, value = pickle.loads(data)
    if kind == "raised":
        raise RuntimeError(value)
    return value
''',
}
MAIN = '''

{differs}

def show(value):
    if isinstance(value, str):
        return value
    return "; ".join(np.array2string(v, threshold=20, separator=", ") for v in value)


#: an exception that means "this release cannot load the model" (or run the case), not the bug
CANNOT_LOAD = ("Unsupported model IR version", "max supported IR version", "is till opset",
               "which is not installed")


def main():
    shown = unjudged = 0
    for c in CASES:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                actual = c["run"]([v.copy() for v in c["inputs"]])
        except Exception as exc:  # a raise is an outcome to compare
            text = str(exc).strip().splitlines()
            actual = f"raises {type(exc).__name__}: {text[0][:300] if text else ''}"
        problem = differs(c["expected"], actual, c["rtol"], c["atol"], c["values"],
                          c["signed_zeros"], c["ulps"], c["operand_ulps"], c["inputs"],
                          c.get("terms"), c.get("terms_ulps", 0.0))
        cannot = problem and isinstance(actual, str) and any(m in actual for m in CANNOT_LOAD)
        masked = problem and c.get("masked")  # another bug, filed apart, hides this one
        print(f"{c['case']} on {c['backend']}:")
        print(f"  expected ({c['right']}): {show(c['expected'])}")
        print(f"  actual:   {show(actual)}")
        print(f"  {'CANNOT JUDGE' if cannot or masked else 'BUG' if problem else 'ok'}"
              f"{': ' + problem if problem else ''}")
        if masked:
            print(f"  (another bug, filed apart, shows here instead: {masked})")
        cannot = cannot or masked
        unjudged += bool(cannot)
        shown += bool(problem) and not cannot
    print(f"{shown} of {len(CASES)} cases show the bug"
          + (f", {unjudged} cannot be judged on this release" if unjudged else ""))
    if shown:
        return 1
    return 3 if unjudged else 0


if __name__ == "__main__":
    sys.exit(main())
'''


MAIN = MAIN.replace("{differs}\n", inspect.getsource(script.differs))


def installed() -> list[str]:
    found = [f"{p} {versions.installed(p)}" for p in ("onnxruntime", "onnx", "pytensor", "numpy")
             if versions.installed(p) is not None]
    return [*found, f"python {platform.python_version()}"]


def _package_of(cause) -> str:
    """The package a script imports: onnxruntime, onnx (reference evaluator) or pytensor."""
    faulty = {r.faulty for r in cause.repros}
    if faulty & {"onnxruntime", "onnxruntime-noopt", "onnxruntime-rewritten"}:
        return "onnxruntime"
    return "onnx" if "onnx-reference" in faulty else "pytensor"


def script_text(cause) -> str:
    package = _package_of(cause)
    needs = " and ".join(NEEDS[package])
    head = [
        f'"""{cause.title}',
        "",
        "Standalone reproduction written by `conformance upstream` (pytensor-onnx-conformance);",
        f"it needs only {needs}. For each case it prints what is expected and what",
        f"{package} gives, and exits 1 while the bug shows, 0 once it is fixed (3: nothing",
        "could be judged: this release cannot load the models, or another bug, filed apart,",
        'shows in every case instead)."""',
        "import base64", "import io", "import pickle", "import sys", "import warnings", "",
        "import numpy as np", "from numpy import inf, nan", IMPORTS[package], "",
        RUNNERS[package].strip("\n"), "", "", "CASES = []", "",
    ]
    body = "\n\n".join(r.code for r in cause.repros)
    return "\n".join(head) + "\n" + body + "\n" + MAIN


def _spec_quote(op: str, opset: int) -> str:
    import onnx.defs

    try:
        doc = onnx.defs.get_schema(op, opset).doc or ""
    except Exception:  # noqa: BLE001 - an op outside the default domain
        return ""
    quote = ""
    for sentence in " ".join(doc.split()).split(". "):
        quote = f"{quote}. {sentence}" if quote else sentence
        if len(quote) >= 160:
            break
    return quote.strip()[:400]


def _pytensor_quote(build) -> str:
    """The first paragraph of a PyTensor function's docstring (what it promises)."""
    if not (getattr(build, "__module__", "") or "").startswith("pytensor") or not build.__doc__:
        return ""
    return " ".join(textwrap.dedent(build.__doc__).strip().split("\n\n")[0].split())[:400]


def _short(value) -> str:
    if isinstance(value, BaseException):
        lines = str(value).strip().splitlines()
        return f"raises {type(value).__name__}: {lines[0][:200] if lines else ''}"
    return "; ".join(f"{np.asarray(v).dtype}{list(np.shape(v))} "
                     f"{np.array2string(np.asarray(v), threshold=12, separator=', ')}"
                     for v in value)


def _expected_from(rights: list[str]) -> str:
    """Where the expected values come from: PyTensor's Python linker, or (for its own bugs)
    the backends that agree with each other; a merged cause may have cases of both."""
    reference = ("pytensor-py (PyTensor's Python linker, this project's reference; only the "
                 "backends named below disagree with it)")
    others = [r for r in rights if r != "pytensor-py"]
    agree = (f"{', '.join(others)} (the backends that agree with each other and with numpy's "
             "semantics; PyTensor's own Python linker is the odd one out)")
    if not others:
        return f"The expected values come from {reference}."
    if len(others) == len(rights):
        return f"The expected values come from {agree}."
    return (f"The expected values come from {reference} where another backend is at fault, "
            f"and from {agree} where the Python linker is; each case below names its source.")


def reported_url(reported: str) -> str:
    """The address of an upstream issue named owner/repo#number."""
    repo, number = reported.split("#")
    return f"https://github.com/{repo}/issues/{number}"


def issue_text(cause) -> str:
    if cause.reported:  # tracked upstream already: a pointer, not a second issue to file
        return "\n".join([
            f"# {cause.title}", "",
            f"Already reported upstream: [{cause.reported}]({reported_url(cause.reported)}). "
            "Do not file it again; `repro.py` beside this file shows it on the installed "
            f"releases ({', '.join(installed())}) and may be added there.", ""])
    package = _package_of(cause) if cause.repros else cause.package
    lines = [f"# {cause.title}", "",
             f"Package at fault: **{cause.package}** (blame: `{cause.blame}`). "
             f"Installed: {', '.join(installed())}."]
    if cause.versions:
        lines.append(f"Recorded as holding for `{cause.versions}`.")
    lines += ["", "## What is expected, and why", ""]
    opset = cause.cells[0].opset
    onnx_ops = sorted({op for r in cause.repros for op in r.onnx_ops} - {"Identity"})
    for op in onnx_ops:
        quote = _spec_quote(op, opset)
        link = SPEC_URL.format(op=op)
        lines.append(f"- ONNX [{op}]({link})" + (f": \u201c{quote}\u201d" if quote else ""))
    py_ops = sorted({op for r in cause.repros for op in r.pytensor_ops})
    if py_ops:
        lines.append(f"- PyTensor ops in the graph: {', '.join(f'`{o}`' for o in py_ops)}")
    builds = {id(c.row.build): c.row.build for c in cause.cells}
    for build in builds.values() if cause.package == "pytensor" else ():
        quote = _pytensor_quote(build)
        if quote:
            name = getattr(build, "__name__", None) or str(build)
            lines.append(f"- PyTensor `{name}`: \u201c{quote}\u201d")
    lines += ["", _expected_from(sorted({r.right for r in cause.repros})), "",
              "## What happens", ""]
    for r in cause.repros[:6]:
        where = f"`{r.faulty}`" + (f" (opset {r.cell.opset})" if r.onnx_ops else "")
        lines += [f"- `{r.case.describe(r.cell.row.name)}` on {where}: expected "
                  f"{_short(r.expected)} (from {script.expected_from(r)}), got {_short(r.actual)}"
                  + (f" (hidden on the installed release by another bug: {r.masked})"
                     if r.masked else "" if r.shown
                     else " (does not show on the installed release)")]
    if len(cause.repros) > 6:
        lines.append(f"- ... and {len(cause.repros) - 6} more cases in repro.py")
    shown = sum(r.shown for r in cause.repros)
    lines += ["", "## Affected", "",
              f"{len(cause.records)} records, {len(cause.cells)} cells; "
              f"{shown} of {len(cause.repros)} cases show the bug on the installed releases.",
              "", "| row | record | dtypes | opsets | backends | recorded as |",
              "|---|---|---|---|---|---|"]
    by_record: dict = {}
    for c in cause.cells:
        by_record.setdefault((c.row.name, c.index), []).append(c)
    for (row, index), cells in sorted(by_record.items()):
        dtypes = ", ".join(dict.fromkeys(c.dtype for c in cells))
        opsets = ", ".join(map(str, sorted({c.opset for c in cells})))
        known = cells[0].known
        recorded = known.reason.replace("|", "\\|") + (
            f" (`{known.versions}`)" if known.versions else "")
        shared = f"; shared by {', '.join(known.shared_by)}" if known.shared_by else ""
        lines.append(f"| {row} | {index} | {dtypes} | {opsets} | "
                     f"{', '.join(known.backends)}{shared} | {recorded} |")
    if any(c.known.shared_by for c in cause.cells):
        lines += ["", "A backend that shares the fault computes the same wrong value as "
                  "PyTensor's Python linker (the same formula in its own kernel), so it needs "
                  "the same fix."]
    if cause.problems:
        lines += ["", "Cells with no script case:", *[f"- {p}" for p in cause.problems]]
    if cause.refused:
        lines += ["", "Cells the installed releases cannot show (no model to run):",
                  *[f"- {p}" for p in cause.refused]]
    lines += ["", "## Reproduce", "",
              f"`python repro.py` needs only {' and '.join(NEEDS[package])}; it exits 1 while "
              "the bug shows and 0 once it is fixed (3 when nothing could be judged: another "
              "bug hides every case, or the release cannot load the models).", ""]
    return "\n".join(lines)


def index_entry(cause) -> dict:
    return {"slug": cause.slug, "title": cause.title, "package": cause.package,
            "blame": cause.blame, "reason": cause.summary, "cause": cause.key.cause,
            "records": cause.records,
            "cells": sorted({f"{c.row.name}[{c.dtype}]" for c in cause.cells}),
            "opsets": sorted({c.opset for c in cause.cells}),
            "versions": cause.versions,
            "shown": sum(r.shown for r in cause.repros), "cases": len(cause.repros),
            "masked": sum(bool(r.masked) for r in cause.repros),
            "problems": cause.problems, "refused": cause.refused,
            "reported": cause.reported,
            "issue": f"{cause.slug}/issue.md", "script": f"{cause.slug}/repro.py"}


def write_index(causes, out) -> None:
    doc = {"installed": installed(), "causes": [index_entry(c) for c in causes]}
    (out / "index.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    lines = ["# Upstream root causes", ""] + [
        f"- [{c.title}]({c.slug}/issue.md) ({len(c.records)} records, {len(c.cells)} cells)"
        + (f", already reported: [{c.reported}]({reported_url(c.reported)})"
           if c.reported else "")
        for c in causes]
    (out / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def bounds(requirement: str | None) -> tuple[str | None, str | None]:
    """(since, fixed in) read off a record's ``versions``: ``>=1.2`` since, ``<1.3`` fixed."""
    from conformance.versions import parse_requirement

    since = fixed = None
    for text in (requirement or "").split(", "):
        if not text:
            continue
        req = parse_requirement(text)
        for spec in req.specifier:
            if spec.operator in (">=", "=="):
                since = f"{req.name} {spec.version}"
            elif spec.operator == "<":
                fixed = f"{req.name} {spec.version}"
    return since, fixed


def report_entries(out, html) -> dict:
    """The report's ``upstream`` data: index.json's causes, links relative to the report,
    since/fixed from the records' ``versions`` or a bisect.json that ``conformance bisect``
    wrote beside the script."""
    import os

    index = json.loads((out / "index.json").read_text(encoding="utf-8"))
    base = html.resolve().parent
    for cause in index["causes"]:
        cause["since"], cause["fixed"] = bounds(cause.get("versions"))
        found = out / cause["slug"] / "bisect.json"
        if found.is_file():
            result = json.loads(found.read_text(encoding="utf-8"))
            cause["since"] = result.get("since") or cause["since"]
            cause["fixed"] = result.get("fixed") or cause["fixed"]
        for key in ("issue", "script"):
            cause[key] = Path(os.path.relpath((out / cause[key]).resolve(), base)).as_posix()
    return index
