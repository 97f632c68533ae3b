"""Running one case on every backend and judging each against the reference."""

from __future__ import annotations

import dataclasses
import enum
import functools
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import onnx

from conformance.backends import (
    BACKENDS,
    REFERENCE,
    Backend,
    ConversionFailed,
    Declined,
    Graph,
    HarnessFailed,
)
from conformance.backends.base import Crashed, Hung
from conformance.backends.cbatch import Member
from conformance.compile import compilestats
from conformance.compile.rewritestore import RewriteStore
from conformance.compile.widened import rounded, widened_values
from conformance.core.blame import classify
from conformance.core.covering import covering_together, covers, shared_fault
from conformance.core.oracle import (
    Comparison,
    also_tried,
    compare,
    describe_error,
    either_expectation,
    flushed,
    holds_subnormals,
    magnitudes,
)
from conformance.registry import Blame, Case, Known, Row
from conformance.session import interrupt
from conformance.strategies import elemwise, grid
from conformance.strategies.canonical import Store
from conformance.upstream import upstream_script
from converter.errors import UnsupportedOpError

#: rows between full garbage collections (see Harness._collect)
THAW_EVERY = 16

#: What a converter raises to decline a graph cleanly: judged as "unsupported", not as wrong.
REFUSALS = (UnsupportedOpError, NotImplementedError)


class RefusedElsewhere(Exception):
    """A clean refusal (one of REFUSALS) made in another process (conformance.session.isolate),
    carried back by type name and text."""


def is_refusal(exc: BaseException) -> bool:
    """Whether the converter declined cleanly: a type check, never a message read as text."""
    return isinstance(exc, (*REFUSALS, RefusedElsewhere))


class InvalidModel(Exception):
    """The converter returned something that is not a valid ONNX model: its fault, whatever
    the backends make of it."""


def validated(convert: Callable) -> Callable:
    """``convert``, with every model it returns checked by
    ``onnx.checker.check_model(full_check=True)`` before any backend sees it."""

    @functools.wraps(convert)
    def checked(inputs, outputs, *, opset):
        model = convert(inputs, outputs, opset=opset)
        if not isinstance(model, onnx.ModelProto):
            raise InvalidModel(f"the converter returned {type(model).__name__}; expected an "
                               "onnx.ModelProto")
        try:
            onnx.checker.check_model(model, full_check=True)
        # the checker raises ValidationError, InferenceError or others for a bad model
        except Exception as exc:  # noqa: BLE001
            raise InvalidModel(f"the converter's model fails onnx.checker.check_model("
                               f"full_check=True): {describe_error(exc)}") from None
        return model

    return checked


class CellOutcome(enum.StrEnum):
    """One backend's outcome on one example."""

    PASS = "pass"
    FAIL = "fail"
    XFAIL = "xfail"
    #: the converter cleanly refused the graph: nothing to run, nothing wrong
    UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class Spec:
    """One conformance test: a row at one dtype and opset, judged on some backends."""

    row: Row
    dtype: str
    opset: int
    backends: tuple[str, ...]
    opset_label: str = ""
    #: backends this test leaves to its cell's test at the run's first opset (PyTensor's,
    #: which never read the opset): a record naming one is not judged here when unseen
    deferred: tuple[str, ...] = ()
    #: the converter under test is the project's own: records blamed on the converter
    #: (its faults and the semantic gaps it bridges) describe it, and no other converter
    own_converter: bool = True

    @property
    def records(self) -> tuple:
        """The row's recorded divergences that concern this dtype and a backend that runs it
        (not one that declines the dtype by design), whether or not they hold for the
        installed releases (their examples always run). Against another converter, those
        blamed on the converter describe the project's, so they neither excuse nor XPASS."""
        return tuple(k for k in self.row.known_for(self.dtype) if self.showing(k)
                     and (self.own_converter or k.blame != Blame.CONVERTER))

    def showing(self, known: Known) -> tuple[str, ...]:
        """The running backends that could show ``known``: those it names (``backends``, and
        ``shared_by`` for a fault they share with the reference), less those that
        decline the dtype by design and, for a divergence only a zero's sign shows, those
        that do not promise signed zeros (a run of Numba alone beside the reference neither
        shows nor contradicts the C backends' record)."""
        return tuple(b for b in self.backends if (b in known.backends or b in known.shared_by)
                     and self.dtype not in BACKENDS[b].semantics.declines
                     and (BACKENDS[b].semantics.signed_zeros or not known.about_zero_signs))

    @property
    def known(self) -> tuple:
        """The records expected to show on the installed releases."""
        return tuple(k for k in self.records if k.active)

    @property
    def test_id(self) -> str:
        suffix = f"-{self.opset_label}" if self.opset_label else ""
        return f"{self.row.name}[{self.dtype}{suffix}]"


@dataclass
class Verdict:
    backend: str
    comparison: Comparison
    known: Known | None = None
    #: every record that covers the disagreement (``known`` is the first), all of them seen
    covering: tuple[Known, ...] = ()
    #: the converter cleanly refused the graph this backend would have run
    refused: bool = False
    #: the backend does not run such graphs by design (backends.Declined)
    declined: bool = False
    #: it agreed with the reference where a record says both are wrong (Known.shared_by)
    shared: bool = False

    @property
    def outcome(self) -> CellOutcome:
        if self.comparison.ok:
            return CellOutcome.PASS
        if self.known:
            return CellOutcome.XFAIL
        return CellOutcome.UNSUPPORTED if self.refused or self.declined else CellOutcome.FAIL


@dataclass
class CaseOutcome:
    spec: Spec
    case: Case
    expected: object
    actual: dict[str, object]
    verdicts: list[Verdict] = field(default_factory=list)
    #: a conversion failure other than a clean refusal (a crash, an invalid model)
    conversion_error: str | None = None
    graph: Graph | None = None
    #: the reference's outputs on the operands' magnitudes, for a ``Tol.terms_ulps`` budget
    terms: object = None

    @property
    def description(self) -> str:
        return self.case.describe(self.spec.row.name)

    @property
    def unexpected(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.outcome == CellOutcome.FAIL]

    @property
    def unsupported(self) -> list[Verdict]:
        """The backends the converter's refusal left with nothing to run."""
        return [v for v in self.verdicts if v.outcome == CellOutcome.UNSUPPORTED and v.refused]

    @property
    def blame(self) -> Blame | None:
        """Read off the unexpected disagreements only: a backend whose divergence is
        recorded, or that had nothing to run (a refusal), says nothing about this one. A
        refusal alone is the converter's (it fails a test only when the converter claims
        the row)."""
        failed = [v.backend for v in self.unexpected]
        if not failed:
            return Blame.CONVERTER if self.unsupported else None
        ran = [v.backend for v in self.verdicts
               if v.outcome in (CellOutcome.PASS, CellOutcome.FAIL)]
        return classify(failed, ran, conversion_failed=self.conversion_error is not None,
                        actual=self.actual)

    def failure_message(self) -> str:
        lines = [v.comparison.message for v in self.unexpected or self.unsupported]
        blame = self.blame
        if blame is not None:
            lines.append(f"blame: {blame}")
        return "\n".join(lines)


def tolerance_for(spec: Spec, expected, graph: Graph | None = None):
    """The row's tolerance for the narrowest float ``graph`` computes anywhere (an error made
    in float16 survives a cast to float64, and one output of a random graph may be float32
    beside a float64 one), else for the widest float the reference returned (an int8 dot
    gives float32); integer and bool outputs are exact whatever the tolerance says."""
    computed = graph.computed_floats if graph is not None else ()
    floats = [] if isinstance(expected, BaseException) else [
        o.dtype for o in expected if o.dtype.kind == "f"]
    if computed:
        dtype = min(computed, key=lambda d: d.itemsize).name
    else:
        dtype = max(floats, key=lambda d: d.itemsize).name if floats else spec.dtype
    return spec.row.tolerance(dtype)


def build_graph(row: Row, case: Case):
    """Symbolic inputs typed after ``case`` and the row's outputs built on them."""
    import pytensor.tensor as pt

    inputs = [
        pt.tensor(name=f"x{i}", dtype=v.dtype, shape=s)
        for i, (v, s) in enumerate(zip(case.values, case.static, strict=True))
    ]
    out = row.build(*inputs, **dict(case.params))
    outputs = list(out) if isinstance(out, list | tuple) else [out]
    return inputs, outputs


def recipe(spec: Spec, case: Case) -> tuple:
    """What a child process needs to rebuild the case's graph (conformance.session.isolate)."""
    return (spec.row.name, tuple(v.dtype.str for v in case.values), case.static, case.params)


def case_code(row: Row, case: Case) -> str:
    """The case's graph as PyTensor code: standalone (numpy and pytensor only) unless the
    row renders its own, as random graphs do node by node."""
    return row.code(case) if row.code is not None else upstream_script.case_code(row, case)


class Harness:
    """Runs cases on the backends. Caches what a row's tests share (its graphs, their compiled
    functions and sessions, its C batch) and drops it when a test of another row starts, so a
    worker's memory stays flat however many rows it runs."""

    def __init__(self, convert: Callable, isolated=None, *, c_all_layouts: bool = False,
                 claims_every_row: bool = False, canonical_store: Store | None = None,
                 rewrite_store: RewriteStore | None = None, sandbox=None):
        self.convert = convert
        self.canonical_store = canonical_store or Store()
        self.rewrite_store = rewrite_store
        self.isolated = isolated  # an isolate.Isolated: convert and run backends in a child
        #: an isolate.Sandbox: the child where backends that ``runs_apart`` run
        self.sandbox = sandbox
        self.c_all_layouts = c_all_layouts
        #: the converter claims every registry row (the project's own): a refusal fails
        self.claims_every_row = claims_every_row
        self._row: str | None = None
        self._graphs: dict[tuple, Graph] = {}
        self._canonical: dict[str, Case] | None = None
        self._judged_cases: dict[str, dict[tuple, Case]] = {}
        self._batches: dict[str, object] = {}
        self._rows_started = 0
        self._timing = False

    def start(self, spec: Spec) -> None:
        """Called before each test: a new row releases everything the last one built."""
        if spec.row.name == self._row:
            return
        self._row = spec.row.name
        if self.sandbox is not None:
            self.sandbox.new_row()
        self._graphs.clear()
        self._canonical = None
        self._judged_cases.clear()
        self._batches.clear()
        self._collect()

    def _collect(self) -> None:
        """Free the last row's compiled functions and sessions: they sit in reference cycles.
        A full collection walks every tracked object, most of them long-lived (modules, the
        registry, caches), so what survives one is frozen out of the next ones; every
        :data:`THAW_EVERY` rows all is walked again, for anything frozen that has died since."""
        self._rows_started += 1
        if self._rows_started % THAW_EVERY == 0:
            gc.unfreeze()
        gc.collect()
        gc.freeze()

    def canonical(self, spec: Spec) -> Case | None:
        """This cell's canonical case: an explicit example on every backend, and (unless
        --c-layouts all) the one layout the batched C backend judges besides records' examples."""
        if self._canonical is None:
            self._canonical = self.canonical_store.cases(spec.row)
        return self._canonical.get(spec.dtype)

    def _judged(self, spec: Spec, backend: Backend) -> dict[tuple, Case]:
        """What canonical-only ``backend`` judges in this row, by (dtype, layout): at each
        dtype its canonical case and the examples of records that name the backend, as showing
        the fault or sharing it (so that a fix upstream is still noticed there). Another
        backend's records add nothing here: each layout costs a canonical-only backend
        rewrites or C code. A backend that
        ``judges_grid`` takes the special-value grid's layouts too. Found once per row."""
        if backend.name not in self._judged_cases:
            self.canonical(spec)
            cases: dict[tuple, Case] = {}
            for dtype in spec.row.dtypes:
                chosen = [self._canonical[dtype]] if dtype in self._canonical else []
                chosen += [k.example(dtype) for k in spec.row.known_for(dtype)
                           if backend.name in (*k.backends, *k.shared_by)]
                if backend.judges_grid:
                    chosen += grid.grid_cases(spec.row.cases, dtype, domains=spec.row.grid,
                                              base=self._canonical.get(dtype))
                for case in chosen:
                    cases.setdefault((dtype, case.graph_key()), case)
            self._judged_cases[backend.name] = cases
        return self._judged_cases[backend.name]

    def _batch(self, spec: Spec, backend: Backend):
        """The row's batch of ``backend``'s canonical members: the graphs it compiles (rewritten
        first if the backend rewrites: the same rewritten graphs onnxruntime-rewritten
        converts), built once per row."""
        if backend.name not in self._batches:
            members = []
            for key, case in self._judged(spec, backend).items():
                graph = self.graph(spec, case)  # built once for every backend (pt.pad is slow)
                if self._same_function(graph, backend):
                    continue
                # a record's example shows a bug, which may take the process down: apart
                raises = (case is not self._canonical.get(key[0]) or isinstance(
                    self._run(graph, REFERENCE, spec, case), Exception))
                try:
                    members.append(Member(key, *backend.compiled_graph(graph), case.values,
                                          raises=raises))
                # a rewrite that raises is this backend's result on every input
                except Exception as exc:  # noqa: BLE001
                    members.append(Member(key, graph.inputs, graph.outputs, case.values, exc))
            self._batches[backend.name] = backend.batch(members)
        return self._batches[backend.name]

    def _same_function(self, graph: Graph, backend: Backend) -> bool:
        """Whether ``backend`` would compile the very function its ``unrewritten`` backend
        compiles (its rewrites leave the graph as it is): then that backend's outputs are its
        own, and Numba compiles them once rather than twice (a second or more each)."""
        if backend.unrewritten is None or backend.unrewritten not in BACKENDS:
            return False
        try:
            return backend.same_function(graph)
        except Exception:  # noqa: BLE001 - a rewrite that raises is the backend's own result
            return False

    def graph(self, spec: Spec, case: Case) -> Graph:
        """The case's graph (cached per layout); isolated, its model comes from the child."""
        key = (spec.row.name, case.graph_key())
        if key not in self._graphs:
            inputs, outputs = build_graph(spec.row, case)
            convert = validated(self.convert)
            if self.isolated is not None:  # the child validates
                convert = functools.partial(self.isolated.convert, recipe(spec, case))
            self._graphs[key] = Graph(inputs, outputs, convert, self.rewrite_store, key)
        return self._graphs[key]

    def _compares(self, backend: Backend, spec: Spec, case: Case) -> bool:
        """Whether ``backend`` judges ``case``: a canonical-only backend only the layouts of
        its row's canonical cases and records' examples, unless every layout was asked for."""
        if not backend.canonical_only or self.c_all_layouts:
            return True
        return (spec.dtype, case.graph_key()) in self._judged(spec, backend)

    def _run(self, graph: Graph, backend: Backend, spec: Spec, case: Case) -> object:
        # a swallowed Ctrl-C stops the run here, not after the example (a cold example may
        # compile for minutes)
        interrupt.check()
        # timed once, outermost: a batch built on the way runs the reference for the backend
        start, self._timing = (time.perf_counter() if not self._timing else None), True
        try:
            return self.outputs(graph, backend, spec, case)
        except HarnessFailed:
            raise
        # raising is an outcome to compare across backends
        except Exception as exc:  # noqa: BLE001
            return exc
        finally:
            if start is not None:
                self._timing = False
                compilestats.add_backend_time(backend.name, time.perf_counter() - start)

    def outputs(self, graph: Graph, backend: Backend, spec: Spec, case: Case) -> list:
        """``backend``'s outputs for ``case``, computed where the backend runs: the isolated
        child (--isolate), the sandbox (a backend that ``runs_apart``), or here."""
        values = [v.copy() for v in case.values]
        if self.isolated is not None:
            if backend.uses_onnx:  # converted once, in the child; a failure is the result
                graph.onnx_model(spec.opset)
            return self.isolated.run(backend.name, spec.opset, recipe(spec, case), values)
        if backend.runs_apart and self.sandbox is not None:
            return self.sandbox.judge(backend.name, spec, case, values)
        if self._same_function(graph, backend):
            return self.outputs(graph, BACKENDS[backend.unrewritten], spec, case)
        if backend.batched and not self.c_all_layouts:
            batch = self._batch(spec, backend)
            key = (spec.dtype, case.graph_key())
            if key in batch:
                return batch.run(key, values)
        return graph.runner(backend, spec.opset)(values)

    def _flushed_reference(self, graph: Graph, spec: Spec, case: Case, backend: Backend):
        """The reference's outputs for ``case`` with the subnormals that ``backend`` may read
        as zeros replaced by zeros of their sign."""
        dtypes = backend.semantics.flushes_subnormals
        values = tuple(flushed(v, dtypes) for v in case.values)
        return self._run(graph, REFERENCE, spec, dataclasses.replace(case, values=values))

    def _widened_reference(self, graph: Graph, spec: Spec, case: Case, backend: Backend,
                           expected):
        """The reference's outputs for ``case`` on the graph rebuilt with the dtypes
        ``backend`` widens computed in the wide ones, rounded once (conformance.compile.widened), or
        None where it cannot be rebuilt (then the reference alone judges). Run here even when
        isolated: the Python linker compiles nothing."""
        widths = backend.semantics.widens
        if (wide := graph.widened(widths)) is None:
            return None
        try:
            outputs = wide.runner(REFERENCE, spec.opset)(widened_values(case.values, widths))
        except Exception as exc:  # noqa: BLE001 - raising is an outcome to compare
            return exc
        return rounded(outputs, [o.type.dtype for o in graph.outputs], expected)

    def _terms(self, graph: Graph, spec: Spec, case: Case):
        """The reference's outputs on the operands' magnitudes (``Tol.terms_ulps``): for a sum
        of products of the operands, the sum of its terms' magnitudes. None where that raises
        (the result's own budget alone then judges)."""
        values = tuple(magnitudes(v) for v in case.values)
        terms = self._run(graph, REFERENCE, spec, dataclasses.replace(case, values=values))
        return None if isinstance(terms, BaseException) else terms

    def run(self, spec: Spec, case: Case) -> CaseOutcome:
        graph = self.graph(spec, case)
        expected = spec.row.expected(spec.dtype, case.values,
                                     self._run(graph, REFERENCE, spec, case))
        outcome = CaseOutcome(spec, case, expected, {}, graph=graph)
        tol = tolerance_for(spec, expected, graph)
        terms = outcome.terms = self._terms(graph, spec, case) if tol.terms_ulps else None
        description = outcome.description
        known = spec.known
        for name in spec.backends:
            backend = BACKENDS[name]
            if name == REFERENCE.name or not self._compares(backend, spec, case):
                continue
            actual = self._run(graph, backend, spec, case)
            if (backend.runs_apart and self.sandbox is not None
                    and isinstance(expected, IndexError) and not isinstance(actual, Exception)
                    and graph.writes_through_indices):
                # it wrote out of bounds where the reference refused: what it wrote there
                # may crash the child cases later, so the next case gets a fresh one
                self.sandbox.restart()
            refused = isinstance(actual, ConversionFailed) and is_refusal(actual.cause)
            if isinstance(actual, Declined):
                outcome.actual[name] = actual
                outcome.verdicts.append(Verdict(name, Comparison(
                    False, f"{name} declined: {actual} [{description}]"), declined=True))
                continue
            if isinstance(actual, ConversionFailed) and not refused:
                outcome.conversion_error = str(actual)
            outcome.actual[name] = actual
            signed = backend.semantics.signed_zeros and spec.row.judges_zero_signs(case)
            judge = functools.partial(
                compare, tol=tol, backend=name, reference=REFERENCE.name, case=description,
                values=spec.row.compare_values, signed_zeros=signed,
                flushes_subnormals=backend.semantics.flushes_subnormals, operands=case.values,
                terms=terms)
            cmp = judge(expected, actual)
            flush, expectation = backend.semantics.flushes_subnormals, expected
            if not cmp.ok and holds_subnormals(case.values, flush):
                # a backend that may read subnormal inputs as zeros (DAZ) is also right, element
                # by element, where it agrees with the reference on those inputs read as zeros
                alternative = self._flushed_reference(graph, spec, case, backend)
                expectation = either_expectation(expected, alternative, actual, tol, flush,
                                                 operands=case.values, terms=terms)
                cmp = judge(expectation, actual)
            if (not cmp.ok and not isinstance(actual, BaseException)
                    and backend.semantics.widens_graph(graph) and (wide := self._widened_reference(
                        graph, spec, case, backend, expected)) is not None):
                # likewise, one that computes a narrow float in a wider one where it agrees with
                # PyTensor's graph computed so (never with the model's own reading of it)
                cmp = also_tried(judge(either_expectation(
                    expectation, wide, actual, tol, flush, signed_zeros=signed,
                    operands=case.values, terms=terms), actual),
                    wide, f"{REFERENCE.name} on the graph with {backend.semantics.widening}")
            if cmp.ok and isinstance(actual, Crashed | Hung):
                # a backend that took its process down did not raise what the reference did
                cmp = Comparison(False, f"{name} {describe_error(actual)} but {REFERENCE.name} "
                                        f"raised {describe_error(expected)} [{description}]")
            elif cmp.ok and isinstance(actual, ConversionFailed):
                # nothing ran: a failed conversion never agrees with the reference raising
                cmp = Comparison(False, f"{name} raised {describe_error(actual)} but "
                                        f"{REFERENCE.name} raised {describe_error(expected)}; "
                                        f"a failed conversion is not agreement [{description}]")
            # raising as the reference does where a record says it raises wrongly is sharing
            # its fault too (a crash, hang or refusal never got here as agreement)
            shared = None if not cmp.ok else shared_fault(known, name, case)
            if shared is not None:
                cmp = Comparison(False, f"{name} agrees with {REFERENCE.name} where the record "
                                        f"says it is wrong: shares its fault ({shared.reason}) "
                                        f"[{description}]")
            where = {}
            # an element of an elementwise op's output comes from the same element of its
            # operands (broadcast); any other op's may come from anywhere in them
            if (isinstance(spec.row.cases, elemwise) and cmp.where is not None
                    and not isinstance(actual, BaseException)):
                where = {"shape": actual[cmp.where[0]].shape, "elements": cmp.elements}
            covering = (shared,) if shared else () if cmp.ok else tuple(
                k for k in known if covers(k, name, cmp.message, actual, case, refused=refused,
                                           records_refusals=self.claims_every_row,
                                           where=where))
            if not cmp.ok and where and not covering:
                covering = covering_together(known, name, cmp.message, case, where)
            outcome.verdicts.append(Verdict(name, cmp, covering[0] if covering else None,
                                            covering, refused, shared=shared is not None))
        return outcome
