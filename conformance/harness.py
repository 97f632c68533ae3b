"""Running one case on every backend and judging each against the reference."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from dataclasses import dataclass, field

from conformance import upstream_script
from conformance.backends import (
    BACKENDS,
    REFERENCE,
    Backend,
    ConversionFailed,
    Graph,
    HarnessFailed,
)
from conformance.blame import classify
from conformance.cbatch import Batch, Member
from conformance.oracle import Comparison, compare
from conformance.registry import Blame, Case, Known, Row
from conformance.strategies.canonical import canonical_cases


@dataclass(frozen=True)
class Spec:
    """One conformance test: a row at one dtype and opset, judged on some backends."""

    row: Row
    dtype: str
    opset: int
    backends: tuple[str, ...]
    opset_label: str = ""

    @property
    def records(self) -> tuple:
        """The row's recorded divergences that concern this dtype and a backend that runs,
        whether or not they hold for the installed releases (their examples always run)."""
        running = set(self.backends)
        return tuple(k for k in self.row.known_for(self.dtype) if running & set(k.backends))

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

    @property
    def outcome(self) -> str:
        if self.comparison.ok:
            return "pass"
        return "xfail" if self.known else "fail"


@dataclass
class CaseOutcome:
    spec: Spec
    case: Case
    expected: object
    actual: dict[str, object]
    verdicts: list[Verdict] = field(default_factory=list)
    conversion_error: str | None = None
    graph: Graph | None = None

    @property
    def description(self) -> str:
        return self.case.describe(self.spec.row.name)

    @property
    def unexpected(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.outcome == "fail"]

    @property
    def blame(self) -> Blame | None:
        failed = [v.backend for v in self.verdicts if not v.comparison.ok]
        if not failed:
            return None
        ran = [v.backend for v in self.verdicts]
        return classify(failed, ran, conversion_failed=self.conversion_error is not None)

    def failure_message(self) -> str:
        lines = [v.comparison.message for v in self.unexpected]
        blame = self.blame
        if blame is not None:
            lines.append(f"blame: {blame}")
        return "\n".join(lines)


def tolerance_for(spec: Spec, expected):
    """The row's tolerance for the widest float the reference returned (an int8 dot can
    give float32); integer and bool outputs are exact whatever the tolerance says."""
    floats = [] if isinstance(expected, BaseException) else [
        o.dtype for o in expected if o.dtype.kind == "f"]
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
    """What a child process needs to rebuild the case's graph (conformance.isolate)."""
    return (spec.row.name, tuple(v.dtype.str for v in case.values), case.static, case.params)


def case_code(row: Row, case: Case) -> str:
    """The case's graph as PyTensor code: standalone (numpy and pytensor only) unless the
    row renders its own, as random graphs do node by node."""
    return row.code(case) if row.code is not None else upstream_script.case_code(row, case)


class Harness:
    """Runs cases on the backends. Caches what a row's tests share (its graphs, their compiled
    functions and sessions, its C batch) and drops it when a test of another row starts, so a
    worker's memory stays flat however many rows it runs."""

    def __init__(self, convert: Callable, isolated=None, *, c_all_layouts: bool = False):
        self.convert = convert
        self.isolated = isolated  # an isolate.Isolated: convert and run backends in a child
        self.c_all_layouts = c_all_layouts
        self._row: str | None = None
        self._graphs: dict[tuple, Graph] = {}
        self._canonical: dict[str, Case] | None = None
        self._batch: Batch | None = None

    def start(self, spec: Spec) -> None:
        """Called before each test: a new row releases everything the last one built."""
        if spec.row.name == self._row:
            return
        self._row = spec.row.name
        self._graphs.clear()
        self._canonical = None
        self._batch = None
        gc.collect()  # compiled functions and sessions sit in reference cycles

    def canonical(self, spec: Spec) -> Case | None:
        """This cell's canonical case: an explicit example on every backend, and (unless
        --c-layouts all) the one layout the batched C backend judges besides records' examples."""
        if self._canonical is None:
            self._canonical = canonical_cases(spec.row.cases, spec.row.dtypes)
        return self._canonical.get(spec.dtype)

    def _c_batch(self, spec: Spec) -> Batch:
        """The row's batch: at each dtype its canonical case and the examples of records that
        name a batched backend (so that a fix upstream is still noticed there)."""
        if self._batch is None:
            self.canonical(spec)
            batched = {name for name, b in BACKENDS.items() if b.batched}
            members: dict[tuple, Member] = {}
            for dtype in spec.row.dtypes:
                cases = [self._canonical[dtype]] if dtype in self._canonical else []
                cases += [k.example(dtype) for k in spec.row.known_for(dtype)
                          if batched & set(k.backends)]
                for case in cases:
                    key = (dtype, case.graph_key())
                    if key not in members:
                        inputs, outputs = build_graph(spec.row, case)
                        members[key] = Member(key, inputs, outputs, case.values)
            self._batch = Batch(list(members.values()))
        return self._batch

    def graph(self, spec: Spec, case: Case) -> Graph:
        """The case's graph (cached per layout); isolated, its model comes from the child."""
        key = (spec.row.name, case.graph_key())
        if key not in self._graphs:
            inputs, outputs = build_graph(spec.row, case)
            convert = self.convert
            if self.isolated is not None:
                convert = functools.partial(self.isolated.convert, recipe(spec, case))
            self._graphs[key] = Graph(inputs, outputs, convert)
        return self._graphs[key]

    def _compares(self, backend: Backend, spec: Spec, case: Case) -> bool:
        """Whether ``backend`` judges ``case``: a batched backend only the layouts in its
        row's batch (canonical cases, records' examples), unless every layout was asked for."""
        if not backend.batched or self.c_all_layouts:
            return True
        return (spec.dtype, case.graph_key()) in self._c_batch(spec)

    def _run(self, graph: Graph, backend: Backend, spec: Spec, case: Case) -> object:
        values = [v.copy() for v in case.values]
        try:
            if self.isolated is not None:
                if backend.uses_onnx:  # converted once, in the child; a failure is the result
                    graph.onnx_model(spec.opset)
                return self.isolated.run(backend.name, spec.opset, recipe(spec, case), values)
            if backend.batched and not self.c_all_layouts:
                return self._c_batch(spec).run((spec.dtype, case.graph_key()), values)
            return graph.runner(backend, spec.opset)(values)
        except HarnessFailed:
            raise
        # raising is an outcome to compare across backends
        except Exception as exc:  # noqa: BLE001
            return exc

    def run(self, spec: Spec, case: Case) -> CaseOutcome:
        graph = self.graph(spec, case)
        expected = self._run(graph, REFERENCE, spec, case)
        outcome = CaseOutcome(spec, case, expected, {}, graph=graph)
        tol = tolerance_for(spec, expected)
        description = outcome.description
        known = spec.known
        for name in spec.backends:
            backend = BACKENDS[name]
            if name == REFERENCE.name or not self._compares(backend, spec, case):
                continue
            actual = self._run(graph, backend, spec, case)
            if isinstance(actual, ConversionFailed) or getattr(actual, "name", "") == (
                    "ConversionFailed"):
                outcome.conversion_error = str(actual)
            outcome.actual[name] = actual
            cmp = compare(expected, actual, tol, backend=name, reference=REFERENCE.name,
                          case=description, values=spec.row.compare_values)
            covering = () if cmp.ok else tuple(
                k for k in known if k.covers(name, cmp.message, case))
            outcome.verdicts.append(Verdict(name, cmp, covering[0] if covering else None,
                                            covering))
        return outcome
