"""From recorded divergences to upstream issues: one issue text and one standalone script
per root cause.

**Grouping rule.** A record that declares ``Known.cause`` belongs to that cause: records
of one upstream bug that are worded differently (Max and Min, one bug reached through
several ops) declare the same slug, and all of them must blame the same package the same
way. The cause's title is its entry in ``CAUSES`` (every declared slug has one), its folder
``<package>-<slug>``. A record without ``cause`` shares a root cause with the others
without one that blame the same package the same way (``Known.package`` and
``Known.blame``) and whose reasons are the same once dtype names and dtype lists
(``int16/uint16``) are replaced by ``<dtype>`` and a trailing parenthetical remark is
dropped: "no CPU kernel for Max on int16/uint16" and "... for Max on int16 (uint8 with
int8)" are one cause; its title is the first record's reason. Either way a cause spans
whatever rows, dtypes and opsets its records concern.

**Cells.** A root cause covers cells (record, dtype, opset). Without a run, every dtype a
record names at the converter's default opset; with a run's results, the tests whose
records showed (``xfail_seen``) or whose strict records did not, at their opsets.

**Scripts.** Each cell's example runs on the reference and the backends the record names.
The side at fault is the record's backend (preferring ``onnxruntime``, then ``-noopt``,
``-rewritten``, ``onnx-reference``); for PyTensor records that name ONNX backends, the
reference (PyTensor's Python linker) itself, judged against the ONNX backend; for records of
PyTensor's rewrites (``pytensor-c-opt``, perhaps with ``onnxruntime-rewritten``),
``pytensor-c-opt`` against the reference. The script
embeds the inputs and the expected outputs (computed by the side that is right) and runs
the side at fault with only numpy and that package imported (see upstream_script).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from conformance.registry import ALL_DTYPES, JAX_BACKENDS, Blame, Case, Known, Row
from conformance.upstream import upstream_script as script
from conformance.upstream.causes import CAUSES

UPSTREAM = (Blame.ONNXRUNTIME, Blame.ONNXRUNTIME_OPTIMIZER, Blame.ONNX_REFERENCE,
            Blame.PYTENSOR)
_DTYPE = "|".join(sorted(ALL_DTYPES, key=len, reverse=True))
_DTYPES = re.compile(rf"\b(?:{_DTYPE})(?:/(?:{_DTYPE}))*\b")
_TAIL = re.compile(r"\s*\([^()]*\)\s*$")
PYTENSOR_SIDE = ("pytensor-c", "pytensor-c-opt", "pytensor-numba", "pytensor-numba-opt",
                 "pytensor-jax", "pytensor-jax-opt")
#: The rewritten backends: a record naming one without its unrewritten twin is a rewrite's
REWRITES = {"pytensor-c-opt": "pytensor-c", "pytensor-numba-opt": "pytensor-numba",
            "pytensor-jax-opt": "pytensor-jax"}
#: Which of a record's backends a script runs, first found first.
FAULTY_ORDER = ("onnxruntime", "onnxruntime-noopt", "onnxruntime-rewritten", "onnx-reference",
                "pytensor-c", "pytensor-c-opt", "pytensor-numba", "pytensor-numba-opt",
                "pytensor-jax", "pytensor-jax-opt")
#: How a script compiles a PyTensor backend's function: (linker, optimizer); the JAX linker
#: with fast_run is the JAX mode (the linker adds its required rewrites, drops the others)
MODES = {"pytensor-py": ("py", None), "pytensor-c": ("cvm", None),
         "pytensor-c-opt": ("cvm", "fast_run"), "pytensor-numba": ("numba", None),
         "pytensor-numba-opt": ("numba", "fast_run"), "pytensor-jax": ("jax", None),
         "pytensor-jax-opt": ("jax", "fast_run")}
TITLES = {"onnxruntime": "ONNX Runtime", "onnx": "ONNX reference evaluator",
          "pytensor": "PyTensor"}


def inner_graphs_on_cvm() -> None:
    """PyTensor's default linker set to cvm (unless PYTENSOR_FLAGS names one), as in
    conformance runs (conformance.compile.pytensor_env): OpFromGraph inner graphs then run C code,
    not numba, which is slow to compile. The scripts do the same."""
    import os

    import pytensor

    if "linker=" not in os.environ.get("PYTENSOR_FLAGS", ""):
        pytensor.config.linker = "cvm"


class RootKey(NamedTuple):
    """What records of one root cause share (see the module): the declared ``cause``, or
    (no cause declared) the reason with dtypes and a trailing remark removed."""

    package: str
    blame: str
    cause: str | None
    reason: str | None


def root_key(known: Known) -> RootKey:
    if known.cause is not None:
        if known.cause not in CAUSES:
            raise ValueError(f"Known({known.reason!r}): cause={known.cause!r} has no entry "
                             "in CAUSES (conformance/upstream/causes.py; add one line there); "
                             f"described: {sorted(CAUSES)}")
        return RootKey(blamed_package(known), str(known.blame), known.cause, None)
    reason = _TAIL.sub("", _DTYPES.sub("<dtype>", known.reason)).strip()
    return RootKey(blamed_package(known), str(known.blame), None, reason)


def blamed_package(known: Known) -> str:
    """The package whose bug the record is: its blame's (``versions`` may bound another
    package, e.g. an ONNX Runtime bug that only PyTensor 3's graphs reach)."""
    from conformance.versions import BLAMED_PACKAGE

    return BLAMED_PACKAGE.get(str(known.blame)) or known.package or str(known.blame)


@dataclass(frozen=True)
class Cell:
    """One record of one row at one dtype and opset."""

    row: Row
    index: int  # the record's position in row.known
    dtype: str
    opset: int

    @property
    def known(self) -> Known:
        return self.row.known[self.index]

    @property
    def name(self) -> str:
        return f"{self.row.name}[{self.dtype}]:{self.index}"


@dataclass
class Repro:
    """A cell made concrete: the case, the side at fault and what it should give."""

    cell: Cell
    case: Case
    faulty: str
    right: str
    expected: object  # outputs or the exception the right side raised
    actual: object
    tol: object
    shown: bool
    message: str
    code: str  # the case's entry in the script
    #: the reason of another record that covers what the faulty side gives on this release
    #: (the C code generation failing where a rewrite's wrong value was): the case cannot
    #: show this cause's bug, and the script says so rather than counting it
    masked: str = ""
    unjudged: bool = False  # masked, or its backend's package is not installed
    #: the reference's outputs on the operands' magnitudes (``Tol.terms_ulps``), or None
    terms: object = None
    onnx_ops: tuple[str, ...] = ()
    pytensor_ops: tuple[str, ...] = ()

    @property
    def signed_zeros(self) -> bool:
        """Whether the script tells -0.0 from 0.0, as the harness does: where the row judges
        zero signs and neither side declares them meaningless (Numba's fast-math)."""
        from conformance.backends import BACKENDS

        return (self.cell.row.judges_zero_signs(self.case)
                and all(BACKENDS[b].semantics.signed_zeros for b in (self.faulty, self.right)))


@dataclass
class RootCause:
    key: RootKey
    cells: list[Cell] = field(default_factory=list)
    repros: list[Repro] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # cells that became no script case
    #: cells the converter refuses on the installed release, as another active record of the
    #: row says it does (PyTensor 2.38's integer Softmax): no model, so nothing to script
    refused: list[str] = field(default_factory=list)
    slug: str = ""

    @property
    def package(self) -> str:
        return self.key.package

    @property
    def blame(self) -> str:
        return self.key.blame

    @property
    def summary(self) -> str:
        """The bug in one line: the declared cause's description, else the first reason."""
        return CAUSES[self.key.cause] if self.key.cause else self.cells[0].known.reason

    @property
    def title(self) -> str:
        return f"[{TITLES.get(self.package, self.package)}] {self.summary}"

    @property
    def records(self) -> list[str]:
        return sorted({f"{c.row.name}:{c.index}" for c in self.cells})

    @property
    def reported(self) -> str | None:
        """The upstream issue (owner/repo#number) a record says already tracks the bug."""
        return next((c.known.reported for c in self.cells if c.known.reported), None)

    @property
    def versions(self) -> str | None:
        """Where the records hold: None (every release) if one of them has no bound."""
        found = {c.known.versions for c in self.cells}
        return None if None in found else ", ".join(sorted(found))


def registry_cells(rows: Iterable[Row], opset: int) -> list[Cell]:
    """Every upstream record's dtypes at ``opset``."""
    from conformance.backends import BACKENDS

    def shown(known: Known, dtype: str) -> bool:
        """A dtype every backend of the record declines by design has nothing to show, nor
        does one the script's backend declines (Numba's float16 of a record that names
        onnxruntime-rewritten too: the script runs PyTensor alone)."""
        return (known.applies(dtype)
                and any(dtype not in BACKENDS[b].semantics.declines for b in known.backends)
                and dtype not in BACKENDS[sides(known)[0]].semantics.declines)

    return [Cell(row, i, d, opset) for row in rows for i, known in enumerate(row.known)
            if known.blame in UPSTREAM for d in row.dtypes if shown(known, d)]


def results_cells(doc: dict, rows: Iterable[Row]) -> tuple[list[Cell], list[str]]:
    """The cells of a results document: records that showed (``xfail_seen``) or that a
    strict XPASS reported, matched back to the registry by row, reason and blame; and a
    line for each upstream failure that no record covers (they have no example)."""
    by_name = {row.name: row for row in rows}
    cells, unmatched = [], []
    for test in doc.get("tests", []):
        row = by_name.get(test.get("op"))
        failure = test.get("failure") or {}
        hit = {int(i) for i in (test.get("xfail_seen") or {})}
        if failure.get("message", "").startswith("XPASS"):
            hit |= set(range(len(test.get("known") or [])))
        for i in sorted(hit):
            rec = (test.get("known") or [])[i] if i < len(test.get("known") or []) else {}
            index = _record_index(row, rec) if row else None
            if index is None:
                unmatched.append(f"{test.get('test')}: record {rec.get('reason')!r} is not in "
                                 "this checkout's registry")
            elif row.known[index].blame in UPSTREAM:
                cells.append(Cell(row, index, test["dtype"], int(test["opset"])))
        if failure.get("blame") in {str(b) for b in UPSTREAM} and \
                not failure.get("message", "").startswith("XPASS"):
            unmatched.append(f"{test.get('test')}: unrecorded {failure['blame']} divergence "
                             f"({failure.get('case', '?')}); record it (Row.xfail with an "
                             "example) to get a script, or replay it: "
                             f"{failure.get('repro', 'conformance repro')}")
    unique = {(c.row.name, c.index, c.dtype, c.opset): c for c in cells}
    return list(unique.values()), unmatched


def _record_index(row: Row, rec: dict) -> int | None:
    for i, known in enumerate(row.known):
        if known.reason == rec.get("reason") and str(known.blame) == rec.get("blame"):
            return i
    return None


def group(cells: Iterable[Cell]) -> list[RootCause]:
    """Root causes by the rule in the module; records that declare one cause but blame
    different packages or blame them differently are an error."""
    causes: dict[RootKey, RootCause] = {}
    declared: dict[str, tuple[RootKey, str]] = {}
    for cell in cells:
        key = root_key(cell.known)
        if key.cause is not None:
            first, where = declared.setdefault(key.cause, (key, cell.name))
            if first != key:
                raise ValueError(f"cause={key.cause!r}: {cell.name} blames {key.package} "
                                 f"({key.blame}), {where} blames {first.package} "
                                 f"({first.blame}); one cause is one package's bug")
        causes.setdefault(key, RootCause(key)).cells.append(cell)
    found = sorted(causes.values(), key=lambda c: (c.package, c.blame, c.summary))
    used: set[str] = set()
    for cause in found:
        base = _slug(f"{cause.package}-{cause.key.cause or _TAIL.sub('', cause.summary)}")
        slug, n = base, 2
        while slug in used:
            slug, n = f"{base}-{n}", n + 1
        used.add(slug)
        cause.slug = slug
    return found


def _slug(text: str, limit: int = 60) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return words if len(words) <= limit else words[:limit].rsplit("-", 1)[0]


# ---- running a cell --------------------------------------------------------------------

def sides(known: Known) -> tuple[str, str]:
    """(backend at fault, backend that is right) for a record, by the rule in the module."""
    named = [b for b in FAULTY_ORDER if b in known.backends]
    rewritten = [b for b, plain in REWRITES.items()
                 if b in known.backends and plain not in known.backends]
    rewrites = bool(rewritten) and set(known.backends) <= {*PYTENSOR_SIDE,
                                                           "onnxruntime-rewritten"}
    if known.blame == Blame.PYTENSOR and rewrites:  # PyTensor's rewrites, seen on c-opt
        return rewritten[0], "pytensor-py"
    if known.blame == Blame.PYTENSOR and not set(known.backends) <= set(PYTENSOR_SIDE):
        right = next(b for b in ("onnx-reference", *FAULTY_ORDER) if b in known.backends)
        return "pytensor-py", right
    if not named:
        raise ValueError(f"record {known.reason!r} names no backend a script can run")
    return named[0], "pytensor-py"


def reproduce(cell: Cell, convert: Callable, harness_cache: dict) -> Repro:
    """Run the cell's example on the sides that matter and render its script entry."""
    from conformance.backends import BACKENDS
    from conformance.backends.base import ConversionFailed
    from conformance.core.harness import Harness, Spec, tolerance_for

    known = cell.known
    faulty, right = sides(known)
    case = known.example(cell.dtype)
    backends = tuple(dict.fromkeys(["pytensor-py", faulty, right]))
    spec = Spec(cell.row, cell.dtype, cell.opset, backends)
    # one harness: start() releases the last row's graphs when a new row begins
    if "harness" not in harness_cache:
        harness_cache["harness"] = Harness(convert, c_all_layouts=True, sandbox=_sandbox())
    harness = harness_cache["harness"]
    harness.start(spec)
    outcome = harness.run(spec, case)
    failed = outcome.actual.get(faulty)
    if isinstance(failed, ConversionFailed):
        refusal = _recorded_refusal(cell, case, faulty, str(failed))
        if refusal is not None:
            raise RecordedRefusal(f"{cell.name}: the converter refuses it on the installed "
                                  f"releases, as recorded: {refusal.reason}")
    values = {"pytensor-py": outcome.expected, **outcome.actual}
    expected, actual = values[right], values[faulty]
    tol = tolerance_for(spec, expected, outcome.graph)
    repro = Repro(cell, case, faulty, right, expected, actual, tol, False, "", "")
    # the script's own comparison, so that "shown" here is the script's exit status
    repro.terms = outcome.terms
    problem = script.differs(_plain(expected), _plain(actual), tol.rtol, tol.atol,
                             cell.row.compare_values, repro.signed_zeros, tol.ulps,
                             tol.operand_ulps, case.values, repro.terms, tol.terms_ulps)
    covering = [k for v in outcome.verdicts if v.backend == faulty for k in v.covering]
    if problem is not None and covering and known not in covering:
        repro.masked = covering[0].reason
    # without jax the JAX pair raises ModuleNotFoundError: the script cannot judge that case
    unavailable = faulty in JAX_BACKENDS and importlib.util.find_spec("jax") is None
    repro.shown = problem is not None and not repro.masked and not unavailable
    repro.message = problem or ""
    repro.unjudged = bool(repro.masked) or unavailable
    repro.code = _entry(repro, outcome.graph, BACKENDS[faulty])
    return repro


class RecordedRefusal(Exception):
    """A cell whose model the converter refuses on the installed releases, as another active
    record of the row says: an ONNX-side bug cannot be scripted without the model."""


def _recorded_refusal(cell: Cell, case, faulty: str, message: str) -> Known | None:
    """The row's other active record that explains the converter refusing this cell."""
    from conformance.backends import BACKENDS

    if not BACKENDS[faulty].uses_onnx:
        return None
    return next((k for i, k in enumerate(cell.row.known)
                 if i != cell.index and k.active and k.applies(cell.dtype)
                 and k.covers(faulty, message, case)), None)


def _plain(outputs):
    """Outputs as the script holds them: arrays, or "raises ..." text for an exception."""
    if isinstance(outputs, BaseException):
        return f"raises {type(outputs).__name__}"
    return [np.asarray(o) for o in outputs]


def _entry(repro: Repro, graph, backend) -> str:
    """The script's definitions for one case and its CASES entry (as source)."""
    cell = repro.cell
    name = f"case_{cell.row.name}_{cell.dtype}_{cell.index}"
    lines = [f"# {repro.case.describe(cell.row.name)}: registry row {cell.row.name!r}, "
             f"{cell.dtype}, opset {cell.opset}; "
             f"expected values from {script.expected_from(repro)}"]
    if backend.uses_onnx:
        model = backend.model(graph, cell.opset)
        repro.onnx_ops = tuple(sorted({node.op_type for node in model.graph.node}))
        lines.append(script.model_code(model, f"model_{name}",
                                       as_bytes=repro.faulty != "onnx-reference"))
        if repro.faulty == "onnx-reference":
            run = f"lambda inputs: run_reference(model_{name}(), inputs)"
        else:
            optimize = repro.faulty != "onnxruntime-noopt"
            run = f"lambda inputs: run_onnxruntime(model_{name}(), inputs, optimize={optimize})"
    else:
        from pytensor.graph.traversal import io_toposort

        repro.pytensor_ops = tuple(sorted({_op_name(node.op) for node in
                                           io_toposort(graph.inputs, graph.outputs)}))
        lines.append(script.graph_code(cell.row, repro.case, f"graph_{name}"))
        linker, optimizer = MODES[repro.faulty]
        run = (f"lambda inputs: run_pytensor(graph_{name}, inputs, linker={linker!r}, "
               f"optimizer={optimizer!r})")
    inputs = "[" + ", ".join(script.array_code(v) for v in repro.case.values) + "]"
    lines.append(
        f"CASES.append(dict(case={repro.case.describe(cell.row.name)!r}, "
        f"backend={repro.faulty!r}, right={repro.right!r},\n"
        f"    inputs={inputs},\n    expected={script.outputs_code(repro.expected)},\n"
        f"    rtol={repro.tol.rtol!r}, atol={repro.tol.atol!r}, ulps={repro.tol.ulps!r}, "
        f"operand_ulps={repro.tol.operand_ulps!r}, "
        + (f"terms={script.outputs_code(repro.terms)}, terms_ulps={repro.tol.terms_ulps!r},\n"
           "    " if repro.tol.terms_ulps and repro.terms is not None else "")
        + f"values={cell.row.compare_values!r}, "
        f"signed_zeros={repro.signed_zeros!r},\n"
        + (f"    masked={repro.masked!r},\n" if repro.masked else "")
        + f"    run={run}))")
    return "\n".join(lines)


def _op_name(op) -> str:
    scalar = getattr(op, "scalar_op", None)
    return f"{type(op).__name__}{{{type(scalar).__name__}}}" if scalar else type(op).__name__


def build(causes: list[RootCause], convert: Callable,
          progress: Callable[[str], None] = lambda _: None) -> None:
    """Reproduce every cell; one that cannot become a script case is listed in problems."""
    import time

    cache: dict = {}
    try:
        for cause in causes:
            started = time.monotonic()
            for cell in cause.cells:
                try:
                    cause.repros.append(reproduce(cell, convert, cache))
                except RecordedRefusal as exc:
                    cause.refused.append(str(exc)[:300])
                # any failure to build a cell is reported per cell, never silently dropped
                except Exception as exc:  # noqa: BLE001
                    cause.problems.append(f"{cell.name}: {type(exc).__name__}: {exc}"[:300])
            progress(f"{cause.slug}: {len(cause.cells)} cells, "
                     f"{time.monotonic() - started:.1f}s")
    finally:
        if "harness" in cache:
            cache["harness"].sandbox.close()


#: seconds a backend that runs apart may take for one cell (compiling included)
SANDBOX_TIMEOUT = 600


def _sandbox():
    """The child process where the backends that run apart (Numba, JAX) reproduce a cell: a
    case that crashes them (XLA aborting, an out-of-bounds write) is the cell's result, not
    the end of ``conformance upstream``. Those backends convert nothing, so the child loads
    the project's converter whatever ``--converter`` says."""
    from conformance.core.converters import PROJECT
    from conformance.session.isolate import Sandbox

    return Sandbox(PROJECT, SANDBOX_TIMEOUT, {"c_all_layouts": True})


def main_output(causes: list[RootCause], out) -> dict:
    """Write every cause's issue.md and repro.py under ``out``; the summary counts."""
    from conformance.upstream import upstream_issue

    out.mkdir(parents=True, exist_ok=True)
    for cause in causes:
        folder = out / cause.slug
        folder.mkdir(exist_ok=True)
        (folder / "repro.py").write_text(upstream_issue.script_text(cause), encoding="utf-8")
        (folder / "issue.md").write_text(upstream_issue.issue_text(cause), encoding="utf-8")
    upstream_issue.write_index(causes, out)
    return {"causes": len(causes), "records": sum(len(c.records) for c in causes),
            "cells": sum(len(c.cells) for c in causes),
            "problems": [p for c in causes for p in c.problems]}


#: Runs a script with the project made unimportable: ``python -I`` (no PYTHONPATH, no user
#: site, no script folder) and an import hook that refuses ``conformance`` and ``converter``
#: (the project's editable install would otherwise still find them).
CLEAN = """
import runpy, sys
class _Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("conformance", "converter"):
            raise ImportError(f"{name} is not importable in a clean run")
sys.meta_path.insert(0, _Refuse())
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_clean(path, *, python: str, timeout: float = 600, cwd=None):
    """(exit status, output) of ``path`` run in a clean interpreter (see CLEAN)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        try:
            done = subprocess.run([python, "-I", "-c", CLEAN, str(path)], cwd=cwd or tmp,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout:.0f}s"
    return done.returncode, done.stdout + done.stderr
