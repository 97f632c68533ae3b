"""The pytest plugin behind ``pytest conformance``: options, test generation, recording,
merging the xdist workers' records and rendering the report at the end."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import time
import zlib
from pathlib import Path

import pytest

from conformance.backends import (
    BACKENDS,
    DEFAULT_BACKENDS,
    NUMBA_DTYPE_ORDER,
    OPTIONAL_BACKENDS,
    REFERENCE,
    expand_backends,
    without_numba_beyond,
)
from conformance.compile import compilestats, fastcompile, pytensor_env
from conformance.compile.rewritestore import RewriteStore
from conformance.core import converters
from conformance.core.harness import CaseOutcome, Harness, Spec
from conformance.core.results import ExampleTally, ResultsWriter, merge, write_results
from conformance.session import hardware, interrupt, profiles
from conformance.session.runner import failure_record, repro_command
from conformance.strategies.canonical import Store

KEEP_RUNS = 5
#: seconds the sandbox (Numba) may take for one request: compiling a row's batch included
SANDBOX_TIMEOUT = 600.0


def pytest_addoption(parser):
    group = parser.getgroup("conformance", "PyTensor -> ONNX conformance")
    group.addoption("--conformance-profile", default=None, choices=sorted(profiles.PROFILES),
                    help="Hypothesis profile: dev (default), ci (derandomized; default when "
                         "CI=true), nightly (many examples)")
    group.addoption("--examples", type=int, default=None,
                    help="examples per test, overriding the profile's number")
    group.addoption("--converter", default="converter:to_onnx",
                    help="converter under test, as module:callable with the signature of "
                         "converter.to_onnx (default: %(default)s)")
    group.addoption("--opsets", default="default,min",
                    help="comma-separated opsets to test: 'default', 'min' or numbers "
                         "(default: %(default)s)")
    group.addoption("--backends", default="default",
                    help=f"comma-separated backends, from: {', '.join(BACKENDS)}; 'all' for "
                         "every installed one, 'default' for the default set "
                         f"({', '.join(DEFAULT_BACKENDS)})")
    group.addoption("--numba-dtypes", default="auto",
                    help="dtypes the Numba backends judge per row: a number N (each row's "
                         "first N in the order " + ", ".join(NUMBA_DTYPE_ORDER) + "), 'all', "
                         "or 'auto' (default): 1 when --backends is left at the default set, "
                         "all otherwise")
    group.addoption("--report-dir", default="reports",
                    help="where results.json, conformance.html and repro bundles go")
    group.addoption("--shard", default=None,
                    help="i/n: run only the i-th of n deterministic slices of the tests")
    group.addoption("--graph-ops", default="",
                    help="comma-separated registry rows random graphs may use (default: "
                         "every row that declares how it composes)")
    group.addoption("--isolate", action="store_true",
                    help="convert and run every backend in a child process: a segfault, "
                         "abort, exit or hang of the converter or a backend becomes a recorded "
                         "failure instead of ending the run")
    group.addoption("--isolate-timeout", type=float, default=120.0,
                    help="seconds a conversion or a backend may take per example with "
                         "--isolate, including a first compile (default: %(default)s)")
    group.addoption("--strict-records", action="store_true",
                    help="fail when a recorded divergence does not show, even on a release "
                         "newer than the records were checked against (default there: a "
                         "'fixed upstream?' warning)")
    group.addoption("--c-layouts", default="canonical", choices=("canonical", "all"),
                    help="layouts the batched C backend compares: one canonical layout per "
                         "cell, compiled in one batch per row (default), or every layout drawn, "
                         "one C module each (the nightly)")
    group.addoption("--target-error", action="store_true",
                    help="steer Hypothesis toward the largest error (in ulp) per op, dtype "
                         "and backend, so a run climbs toward the worst inputs")


def load_converter(spec: str):
    try:
        return converters.load(spec)
    except converters.ConverterSpecError as exc:
        raise pytest.UsageError(f"--converter={exc}") from None


def parse_opsets(text: str) -> list[tuple[int, str]]:
    """(opset, label) pairs; the default opset has an empty label (plain test ids)."""
    import converter

    found = []
    for word in (w.strip() for w in text.split(",") if w.strip()):
        if word == "default":
            found.append((converter.default_opset(), ""))
        elif word == "min":
            found.append((converter.MIN_OPSET, f"opset{converter.MIN_OPSET}"))
        elif word.isdigit():
            found.append((int(word), f"opset{word}"))
        else:
            raise pytest.UsageError(f"--opsets: {word!r} is not 'default', 'min' or a number")
    unique = {}
    for opset, label in found:
        unique.setdefault(opset, label)
    return list(unique.items())


def parse_numba_dtypes(text: str, backends: str) -> int | None:
    """How many of each row's dtypes the Numba backends judge (None: all)."""
    if text == "auto":  # the default run keeps within a newcomer's cold budget
        return 1 if backends.strip() == "default" else None
    if text == "all":
        return None
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise pytest.UsageError(f"--numba-dtypes={text!r}: give a number >= 1, 'all' or 'auto'")


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        index, count = (int(p) for p in text.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard={text!r} must look like i/n, e.g. 1/4") from None
    if not 1 <= index <= count:
        raise pytest.UsageError(f"--shard={text!r}: i must be between 1 and n")
    return index, count


class ConformanceSession:
    """Per-process state: the harness, the results writer and the run's settings."""

    def __init__(self, config):
        self.config = config
        self.profile = profiles.choose(config.getoption("conformance_profile"))
        self.settings = profiles.load(self.profile, config.getoption("examples"))
        self.converter_spec = config.getoption("converter")
        isolated = None
        if config.getoption("isolate"):
            from conformance.session.isolate import Isolated

            isolated = Isolated(self.converter_spec, config.getoption("isolate_timeout"))
        convert = load_converter(self.converter_spec)
        cache = getattr(config, "cache", None)  # None with -p no:cacheprovider
        c_all_layouts = config.getoption("c_layouts") == "all"
        canonical = Store(cache.mkdir("conformance-canonical") if cache is not None else None)
        rewritten = RewriteStore(cache.mkdir("conformance-rewritten") if cache is not None
                                 else None)
        graph_ops = tuple(w.strip() for w in config.getoption("graph_ops").split(",")
                          if w.strip())
        sandbox = None
        if isolated is None:
            from conformance.session.isolate import Sandbox

            sandbox = Sandbox(self.converter_spec, SANDBOX_TIMEOUT, {
                "c_all_layouts": c_all_layouts, "canonical": canonical.folder,
                "rewritten": rewritten.base, "graph_ops": graph_ops})
        self.harness = Harness(convert, isolated, c_all_layouts=c_all_layouts,
                               claims_every_row=converters.claims_every_row(convert),
                               canonical_store=canonical, rewrite_store=rewritten,
                               sandbox=sandbox)
        self.converter_info = {"spec": self.converter_spec,
                               "version": converters.version(self.converter_spec)}
        self.strict_records = config.getoption("strict_records")
        names = expand_backends(config.getoption("backends"),
                                lambda package: importlib.util.find_spec(package) is not None)
        unknown = [b for b in names if b not in BACKENDS]
        if unknown:
            raise pytest.UsageError(f"--backends: unknown {unknown}; choose from "
                                    f"{list(BACKENDS)}, 'default' or 'all'")
        missing = sorted({OPTIONAL_BACKENDS[b] for b in names if b in OPTIONAL_BACKENDS
                          and importlib.util.find_spec(OPTIONAL_BACKENDS[b]) is None})
        if missing:
            wanting = ", ".join(b for b in names if b in OPTIONAL_BACKENDS)
            raise pytest.UsageError(f"--backends: {wanting} need {', '.join(missing)}, which "
                                    f"is not installed "
                                    f"(pip install '.[{','.join(missing)}]')")
        self.backends = tuple(dict.fromkeys([REFERENCE.name, *names]))
        self.numba_dtypes = parse_numba_dtypes(config.getoption("numba_dtypes"),
                                               config.getoption("backends"))
        self.opsets = parse_opsets(config.getoption("opsets"))
        self.shard = parse_shard(config.getoption("shard"))
        self.report_dir = Path(config.getoption("report_dir"))
        self.target_error = config.getoption("target_error")
        from conformance.registries import graph_composer

        try:
            graph_composer().restrict(
                w.strip() for w in config.getoption("graph_ops").split(",") if w.strip())
        except ValueError as exc:
            raise pytest.UsageError(f"--graph-ops: {exc}") from None
        graph_composer().judged = frozenset(self.backends)
        workerinput = getattr(config, "workerinput", None)
        if workerinput is None:
            self.run_dir = self._new_run_dir()
            worker = "main"
        else:
            self.run_dir = Path(workerinput["conformance_run_dir"])
            worker = workerinput["workerid"]
        self.worker = worker
        self._compiled = compilestats.totals()
        self._backend_seconds = compilestats.backend_seconds()
        self.writer = ResultsWriter(self.run_dir / f"{worker}.jsonl")
        self._graphs_seen: set[tuple] = set()
        #: examples of the tests under way, written with each test's record
        self._tallies: dict[str, ExampleTally] = {}
        if workerinput is None:
            self.writer.write({"kind": "run", **self.run_info()})

    def _new_run_dir(self) -> Path:
        runs = self.report_dir / ".runs"
        run_dir = runs / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        run_dir.mkdir(parents=True, exist_ok=True)
        for old in sorted(p for p in runs.iterdir() if p.is_dir())[:-KEEP_RUNS]:
            shutil.rmtree(old, ignore_errors=True)
        return run_dir

    def run_info(self) -> dict:
        from conformance.core.bundle import versions

        return {
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "profile": self.profile, "max_examples": self.settings.max_examples,
            "derandomize": self.settings.derandomize, "converter": self.converter_spec,
            "converter_version": self.converter_info["version"],
            "refusals": "fail" if self.harness.claims_every_row else "unsupported",
            "backends": list(self.backends), "reference": REFERENCE.name,
            "opsets": {label or "default": opset for opset, label in self.opsets},
            "shard": "/".join(map(str, self.shard)) if self.shard else "1/1",
            "graph_ops": self.config.getoption("graph_ops") or "all",
            "target_error": self.target_error,
            "isolate": self.config.getoption("isolate"),
            "strict_records": self.strict_records,
            "c_layouts": self.config.getoption("c_layouts"),
            "numba_dtypes": "all" if self.numba_dtypes is None else str(self.numba_dtypes),
            "versions": versions(), "cpu": hardware.cpu(),
        }

    def specs(self) -> list[Spec]:
        from conformance.registries import all_rows

        # PyTensor's backends never read the opset: the first opset's tests judge them, and
        # at the others they would only run the same functions on the same explicit examples
        onnx_only = tuple(b for b in self.backends
                          if b == REFERENCE.name or BACKENDS[b].uses_onnx)
        own = self.harness.claims_every_row  # the project's converter (see Spec.own_converter)
        # row-major, so that a row's tests run one after another even without xdist
        deferred = tuple(b for b in self.backends if b not in onnx_only)

        def judging(names, row, dtype):
            return without_numba_beyond(names, dtype, row.dtypes, self.numba_dtypes)

        return [
            Spec(row, dtype, opset, onnx_only, label, judging(deferred, row, dtype), own)
            if position else
            Spec(row, dtype, opset, judging(self.backends, row, dtype), label,
                 own_converter=own)
            for row in all_rows()
            for dtype in row.dtypes
            for position, (opset, label) in enumerate(self.opsets)
        ]

    # -- recording ------------------------------------------------------------
    def record_example(self, spec: Spec, outcome: CaseOutcome) -> None:
        key = (spec.test_id, id(outcome.graph))
        if outcome.graph is not None and key not in self._graphs_seen:
            self._graphs_seen.add(key)
            self.writer.write({"kind": "graph", "test": spec.test_id,
                               **outcome.graph.coverage(spec.opset)})
        nodes = dict(outcome.case.params).get("nodes") or ()
        self._tallies.setdefault(spec.test_id, ExampleTally()).add(
            outcome.case.value_classes(), [node[0] for node in nodes],
            {v.backend: [v.outcome, v.comparison.max_abs, v.comparison.max_rel,
                         v.comparison.max_ulp] for v in outcome.verdicts})

    def record_crash(self, nodeid: str, worker: str, detail: str) -> None:
        """In the controller: a test whose worker died has no record of its own; without
        this one it would be missing from the results while pytest counts it failed."""
        from conformance.registries import row_named

        found = re.search(r"\[(([A-Za-z0-9_]+)\[([a-z0-9]+)[^\]]*\])\]$", nodeid)
        if found is None:
            return
        tid, op, dtype = found.groups()
        self.writer.write({
            "kind": "test", "test": tid, "op": op, "category": row_named(op).category,
            "dtype": dtype, "outcome": "failed", "known": [], "worker": worker,
            "failure": {"message": f"the worker process crashed while running {tid} "
                                   f"({detail}); rerun with --isolate to record the input",
                        "blame": "unknown"}})

    def record_test(self, record: dict) -> None:
        tally = self._tallies.pop(record["test"], None)
        if tally is not None:
            self.writer.write(tally.record(record["test"]))
        totals = compilestats.totals()
        compiled = {k: round(totals[k] - self._compiled[k], 2) for k in totals}
        self._compiled = totals
        spent = compilestats.backend_seconds()
        seconds = {name: round(s - self._backend_seconds.get(name, 0.0), 3)
                   for name, s in spent.items() if s > self._backend_seconds.get(name, 0.0)}
        self._backend_seconds = spent
        self.writer.write({"kind": "test", **record, "worker": self.worker,
                           "compiled": compiled, "backend_seconds": seconds,
                           "ended": round(time.time(), 3)})

    def failure(self, outcome: CaseOutcome, notes) -> dict:
        from conformance.core.bundle import bundle_name, write_bundle

        graph = self.harness.graph(outcome.spec, outcome.case)
        try:
            model = graph.onnx_model(outcome.spec.opset)
        # the conversion error is already recorded in the outcome
        except Exception:  # noqa: BLE001
            model = None
        folder = self.report_dir / "repro" / bundle_name(outcome.spec.test_id)
        bundle = write_bundle(folder, outcome, notes=notes, model=model,
                              converter=self.converter_info)
        return failure_record(outcome, notes, bundle, repro_command(bundle))

    def finish(self, session, moved: list[str] | None = None) -> Path | None:
        """``moved``: the scheduling units that ran away from their home worker."""
        if self.config.option.collectonly:  # nothing ran: keep the last run's report
            self.writer.close()
            shutil.rmtree(self.run_dir, ignore_errors=True)
            return None
        # a test stopped before its record still shows its examples (an incomplete row)
        for test, tally in self._tallies.items():
            self.writer.write(tally.record(test))
        self._tallies.clear()
        self.writer.write({"kind": "compile", **compilestats.totals()})
        if getattr(self.config, "workerinput", None) is None:
            self.writer.write({"kind": "finish", "exitstatus": int(session.exitstatus),
                               "planned": session.testscollected, "moved": moved or []})
        self.writer.close()
        if self.harness.isolated is not None:
            self.harness.isolated.close()
        if self.harness.sandbox is not None:
            self.harness.sandbox.close()
        if getattr(self.config, "workerinput", None) is not None:
            return None
        from conformance.report import render_report

        doc = merge(sorted(self.run_dir.glob("*.jsonl")))
        self.run_summary = doc["run"]
        results = self.report_dir / "results.json"
        write_results(doc, results)
        return render_report(doc, self.report_dir / "conformance.html")


def pytest_configure(config):
    # rows that test a dropped runtime check say so in their records and the report; the
    # terminal is for what a person acts on (-W default::converter.errors.RuntimeCheckDropped
    # shows them again)
    config.addinivalue_line("filterwarnings", "ignore::converter.errors.RuntimeCheckDropped")
    if getattr(config, "workerinput", None) is None:
        pytensor_env.hand_down()
    import pytensor

    # first, so that the compile seconds counted include building the headers
    fastcompile.install(Path(pytensor.config.compiledir) / "conformance-pch")
    compilestats.install()
    interrupt.install()
    session = ConformanceSession(config)
    config.pluginmanager.register(session, "conformance-session")
    if getattr(config, "workerinput", None) is None:
        _controller["session"] = session
        _controller.pop("sched", None)  # a scheduler of an earlier session in this process


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "load":
        from conformance.session.schedule import RowAffinityScheduling

        _controller["sched"] = RowAffinityScheduling(config, log)
        return _controller["sched"]
    return None


def _session(config) -> ConformanceSession:
    return config.pluginmanager.get_plugin("conformance-session")


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem, report, sched):
    node = getattr(report, "node", None)
    detail = str(report.longrepr).strip().splitlines()[0] if report.longrepr else "no message"
    _controller["session"].record_crash(crashitem, node.gateway.id if node else "?", detail)


_controller: dict = {}


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput["conformance_run_dir"] = str(_session(node.config).run_dir)


def pytest_generate_tests(metafunc):
    if "spec" in metafunc.fixturenames:
        specs = _session(metafunc.config).specs()
        metafunc.parametrize("spec", specs, ids=[s.test_id for s in specs])


def pytest_collection_modifyitems(config, items):
    shard = _session(config).shard
    if not shard:
        return
    index, count = shard
    keep, drop = [], []
    for item in items:
        (keep if zlib.crc32(item.nodeid.encode()) % count == index - 1 else drop).append(item)
    items[:] = keep
    config.hook.pytest_deselected(items=drop)


@pytest.fixture
def conformance_session(request) -> ConformanceSession:
    return _session(request.config)


def pytest_runtest_setup(item):
    interrupt.check()


@pytest.hookimpl(tryfirst=True)
def pytest_keyboard_interrupt(excinfo):
    interrupt.drop_lineless_entries(excinfo)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.when == "call":  # the worker's running compile totals travel with the report
        report.user_properties.append(("conformance_compiled", compilestats.totals()))
    return report


def pytest_runtest_logreport(report):
    """In the controller: a line about C compilation every half minute while it goes on, so
    a cold first run does not look stuck; and each row's seconds, for the scheduler."""
    for key, totals in getattr(report, "user_properties", ()):
        if key == "conformance_compiled":
            _progress.update(report, totals)
    sched = _controller.get("sched")
    if sched is not None:  # how long each row took, for the next run's order
        sched.note(report.nodeid, report.duration)


class _Progress:
    EVERY = 30.0

    def __init__(self):
        self.per_worker: dict[str, dict] = {}
        self.shown = (0, time.monotonic())
        self.terminal = None

    def update(self, report, totals: dict) -> None:
        node = getattr(report, "node", None)
        self.per_worker[node.gateway.id if node is not None else "main"] = totals
        modules = sum(t["modules"] for t in self.per_worker.values())
        seconds = sum(t["seconds"] for t in self.per_worker.values())
        last, when = self.shown
        if self.terminal is None or modules == last or time.monotonic() - when < self.EVERY:
            return
        self.shown = (modules, time.monotonic())
        self.terminal.write_line(f"[conformance] compiling PyTensor C code: {modules} modules "
                                 f"so far ({seconds:.0f} s of g++); they are cached for the "
                                 "next run")


_progress = _Progress()


def pytest_sessionstart(session):
    if getattr(session.config, "workerinput", None) is None:  # a worker's stdout is not a tty
        _progress.terminal = session.config.pluginmanager.get_plugin("terminalreporter")


def pytest_sessionfinish(session):
    sched = _controller.get("sched")  # ours, when xdist's controller schedules with it
    if sched is not None:
        sched.save_placement()
    state = _session(session.config)
    state.report_path = state.finish(session, moved=getattr(sched, "moved", None))


def pytest_terminal_summary(terminalreporter, config):
    path = getattr(_session(config), "report_path", None)
    if path is not None:
        terminalreporter.write_sep("-", "conformance report")
        terminalreporter.write_line(f"report:  {path}")
        terminalreporter.write_line(f"results: {path.parent / 'results.json'}")
        run = getattr(_session(config), "run_summary", {})
        if run.get("c_modules_compiled") is not None:
            numba = (f"; Numba functions compiled: {run['numba_functions_compiled']} in "
                     f"{run['numba_compile_seconds']:.0f} s"
                     if run.get("numba_functions_compiled") else "")
            terminalreporter.write_line(
                f"C modules compiled: {run['c_modules_compiled']} in "
                f"{run['compile_seconds']:.0f} s of g++{numba} (all workers; both are cached "
                "for the next run)")
        if run.get("backend_seconds"):
            spent = sorted(run["backend_seconds"].items(), key=lambda kv: -kv[1])
            terminalreporter.write_line("time by backend (all workers): " + ", ".join(
                f"{name} {seconds:.0f} s" for name, seconds in spent))
        if run.get("rows_moved"):
            terminalreporter.write_line(
                f"rows a worker took over from their home worker: {len(run['rows_moved'])} "
                "(their C modules compile again where that worker never ran them)")
        if run.get("interrupted"):
            terminalreporter.write_line(
                f"interrupted: {run['tests_ran']} of {run.get('tests_planned', '?')} tests ran")
