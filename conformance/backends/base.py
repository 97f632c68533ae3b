"""What every backend shares: ``Graph`` (the one cache of what is built from a graph: the ONNX
model, rewritten graphs, compiled functions, every backend's prepared runner), the ``Backend``
interface (prepare once, run many times) and the semantics a backend declares.

A backend knows nothing of the others.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from conformance.compile.innergraphs import inlined, rewritten_unlinked, without_inner_rewrites
from conformance.compile.rewritestore import RewriteStore
from conformance.compile.widened import Widths, computes_narrow, widened
from converter import compat, function_graph

Runner = Callable[[Sequence[np.ndarray]], list[np.ndarray]]


@dataclass(eq=False)
class Graph:
    """A PyTensor graph plus everything built from it, each built at most once."""

    inputs: list
    outputs: list
    convert: Callable  # (inputs, outputs, *, opset) -> onnx.ModelProto
    #: where derived graphs outlive the run (conformance.compile.rewritestore), under ``key``
    store: RewriteStore | None = None
    key: tuple = ()
    _models: dict = field(default_factory=dict)
    _derived: dict = field(default_factory=dict)
    _runners: dict = field(default_factory=dict)
    _functions: dict = field(default_factory=dict)

    @functools.cached_property
    def computed_dtypes(self) -> tuple[np.dtype, ...]:
        """The dtypes of every tensor the graph computes (not its inputs)."""
        ancestors = compat.lookup("ancestors")
        return tuple({np.dtype(v.type.dtype) for v in ancestors(self.outputs)
                      if v.owner is not None and hasattr(v.type, "dtype")})

    @functools.cached_property
    def computed_floats(self) -> tuple[np.dtype, ...]:
        """The float dtypes of every value the graph computes (not its inputs), found once
        per graph rather than on every example that is judged with them."""
        ancestors = compat.lookup("ancestors")
        return tuple(np.dtype(v.type.dtype) for v in ancestors(self.outputs)
                     if v.owner is not None and getattr(v.type, "dtype", "").startswith("float"))

    @functools.cached_property
    def has_inner_graphs(self) -> bool:
        """Whether an op of the graph holds a graph of its own (Scan, OpFromGraph, IfElse's
        branches are not: they are the outer graph's)."""
        applys_between = compat.lookup("applys_between")
        return any(getattr(node.op, "fgraph", None) is not None
                   for node in applys_between(self.inputs, self.outputs))

    @functools.cached_property
    def writes_through_indices(self) -> bool:
        """Whether the graph (inner graphs included) writes at indices it is given: a backend
        that checks no bounds may then write out of bounds, where reading only may not."""
        applys_between = compat.lookup("applys_between")
        pending, seen = [(self.inputs, self.outputs)], set()
        while pending:
            inputs, outputs = pending.pop()
            for node in applys_between(inputs, outputs):
                op = node.op
                if "IncSubtensor" in type(op).__name__:
                    return True
                inner = getattr(op, "fgraph", None)
                if inner is not None and id(inner) not in seen:
                    seen.add(id(inner))
                    pending.append((inner.inputs, inner.outputs))
        return False

    def coverage(self, opset: int) -> dict:
        """The op kinds in the graph and the ONNX operators of its model (if it converted)."""
        from conformance.core.coverage import onnx_ops, op_kinds

        try:
            emitted = sorted(onnx_ops(self.onnx_model(opset)))
        except ConversionFailed:
            emitted = []
        return {"op_kinds": sorted(op_kinds(self.outputs)), "onnx_ops": emitted}

    def function(self, linker: str, optimizer: str | None):
        """The graph compiled by PyTensor with ``linker`` and ``optimizer`` (once): the mode
        ``Mode(linker, optimizer)`` that a user writes, the linker's required rewrites
        included."""
        key = (linker, optimizer)
        if key not in self._functions:
            import pytensor
            from pytensor.compile.mode import Mode

            outputs = self.outputs if optimizer else without_inner_rewrites(self.outputs, linker)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # BLAS-fallback advice on pip installs
                self._functions[key] = pytensor.function(
                    self.inputs, outputs, mode=Mode(linker=linker, optimizer=optimizer),
                    on_unused_input="ignore",
                )
        return self._functions[key]

    def function_in(self, key: str, mode):
        """The graph compiled by ``pytensor.function`` in ``mode`` (once per ``key``), as a
        user compiles it: the mode's rewrites and linker, nothing else."""
        if key not in self._functions:
            import pytensor

            self._functions[key] = pytensor.function(self.inputs, self.outputs, mode=mode,
                                                     on_unused_input="ignore")
        return self._functions[key]

    def rewritten(self, optimizer: str, linker: str = "cvm") -> tuple[list, list]:
        """The graph as ``Mode(linker, optimizer)`` rewrites it (the inputs and outputs of the
        compiled function's graph, as ``converter.function_graph`` reads them), taken before
        any linker links it (see innergraphs.rewritten_unlinked). The rewrites depend on
        the linker only through what it requires and excludes (Numba's mode has no BLAS or C
        fusion rewrites), which :func:`rewrite_query` carries over."""
        what = f"rewritten-{optimizer}" if linker == "cvm" else f"rewritten-{optimizer}-{linker}"
        return self._derive(what, lambda: self._rewriting(optimizer, linker))

    def _rewriting(self, optimizer: str, linker: str) -> tuple[list, list]:
        if linker == "cvm":  # cvm requires and excludes nothing: the py linker's own mode
            return function_graph(self.function("py", optimizer))
        query = rewrite_query(optimizer, linker)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # before 3.3, constant folding compiles an OpFromGraph's function in the mode being
            # compiled, which a stand-in linker would stop: only a linked function folds it
            graph = (rewritten_unlinked(self.inputs, self.outputs, query, linker)
                     if compat.builds("inner_graph_baked_by_outer") else None)
            if graph is not None:
                return graph
            import pytensor
            from pytensor.compile.mode import Mode

            return function_graph(pytensor.function(
                self.inputs, self.outputs, on_unused_input="ignore",
                mode=Mode(linker="py", optimizer=query)))

    def rewrites_nothing(self, optimizer: str, linker: str) -> bool:
        """Whether :meth:`rewritten` gives back the graph itself: the same ops on the same
        inputs (an inplace or fused op is another op)."""
        key = ("unchanged", optimizer, linker)
        if key not in self._derived:
            equal_computations = compat.lookup("equal_computations")
            inputs, outputs = self.rewritten(optimizer, linker)
            self._derived[key] = (len(outputs) == len(self.outputs) and len(inputs) == len(
                self.inputs) and equal_computations(list(outputs), list(self.outputs),
                                                    list(inputs), list(self.inputs)))
        return self._derived[key]

    def rewritten_inlined(self, optimizer: str) -> tuple[list, list]:
        """:meth:`rewritten` with each OpFromGraph replaced by its inner graph, rewritten as
        the op's own function would be (conformance.compile.innergraphs.inlined)."""
        return self._derive(f"inlined-{optimizer}",
                            lambda: inlined(*self.rewritten(optimizer), rewritten=True))

    def widened(self, widths: Widths) -> Graph | None:
        """The graph with the narrow dtypes of ``widths`` computed in the wide ones
        (conformance.compile.widened), or None where some op cannot be rebuilt so. Kept in memory
        only: it is cheap beside the reference run it is built for."""
        key = ("widened", tuple(sorted(widths.items())))
        if key not in self._derived:
            rebuilt = widened(self.inputs, self.outputs, widths)
            self._derived[key] = None if rebuilt is None else Graph(*rebuilt, self.convert)
        return self._derived[key]

    def _derive(self, what: str, build: Callable[[], tuple[list, list]]) -> tuple[list, list]:
        if what not in self._derived:
            self._derived[what] = (build() if self.store is None else
                                   self.store.get((*self.key, what), build))
        return self._derived[what]

    def onnx_model(self, opset: int):
        """The converted model, or the exception the converter raised (kept, not retried)."""
        if opset not in self._models:
            try:
                self._models[opset] = self.convert(self.inputs, self.outputs, opset=opset)
            except ConversionFailed as exc:  # converted elsewhere (conformance.session.isolate)
                self._models[opset] = exc
            except HarnessFailed:
                raise
            # a failure to convert or prepare is a result to record
            except Exception as exc:  # noqa: BLE001
                self._models[opset] = ConversionFailed(exc)
        model = self._models[opset]
        if isinstance(model, ConversionFailed):
            raise ConversionFailed(model.cause, model.detail) from model.cause
        return model

    def runner(self, backend: Backend, opset: int) -> Runner:
        """``backend``'s prepared runner; PyTensor backends share one across opsets."""
        key = (backend.name, opset if backend.uses_onnx else None)
        if key not in self._runners:
            try:
                self._runners[key] = backend.prepare(self, opset)
            # a failure to convert or prepare is a result to record
            except Exception as exc:  # noqa: BLE001
                self._runners[key] = exc
        prepared = self._runners[key]
        if isinstance(prepared, BaseException):
            raise prepared
        return prepared


class ConversionFailed(Exception):
    """The converter under test raised (or, run in a child process, crashed or hung); the ONNX
    backends have nothing to run. ``detail`` says what happened, by default the cause's type
    and text."""

    def __init__(self, cause: BaseException, detail: str | None = None):
        self.detail = detail or f"{type(cause).__name__}: {cause}"
        super().__init__(f"conversion failed: {self.detail}")
        self.cause = cause


class Crashed(RuntimeError):
    """Code under test took its (child) process down (conformance.session.isolate)."""


class Hung(RuntimeError):
    """Code under test did not answer within its timeout (conformance.session.isolate)."""


class HarnessFailed(RuntimeError):
    """The harness itself could not run a case (say, its child process did not start): not a
    result of the code under test, so the test ends as an error instead of comparing it."""


def rewrite_query(optimizer: str, linker: str):
    """The rewrites ``Mode(linker, optimizer)`` applies, as a query any linker can use: the
    optimizer's, plus what the linker requires, minus what it cannot take."""
    from pytensor.compile.mode import predefined_linkers, predefined_optimizers

    query = predefined_optimizers[optimizer]
    target = predefined_linkers[linker]
    if required := getattr(target, "required_rewrites", ()):
        query = query.including(*required)
    if incompatible := getattr(target, "incompatible_rewrites", ()):
        query = query.excluding(*incompatible)
    return query


class Declined(Exception):
    """The backend does not run graphs of this kind by design (its declared ``Semantics``:
    Numba has no float16). Judged as the backend's "unsupported" cell, as a converter's
    refusal is: nothing ran, so nothing is right or wrong."""


@dataclass(frozen=True)
class Semantics:
    """What a backend promises by design, read by the harness and the oracle instead of a
    record on every row. ``source`` says where the declaration comes from."""

    #: -0.0 and 0.0 are told apart (False under fast-math's no-signed-zeros)
    signed_zeros: bool = True
    #: dtypes the backend declines any graph computing or taking (see Declined)
    declines: frozenset[str] = frozenset()
    #: float dtypes whose subnormals the backend may flush to zero, read as inputs or written
    #: as results (x86's DAZ and FTZ modes): both sides' subnormal results are read as zeros,
    #: and it is right if it agrees with the reference on the inputs as given or with those
    #: subnormals read as zeros
    flushes_subnormals: frozenset[str] = frozenset()
    #: narrow float dtype -> the wider one the backend computes it in, rounding once where a
    #: chain of such nodes ends (ONNX Runtime's CPU float16): it is also right, element by
    #: element, where it agrees with the reference's graph rebuilt so (conformance.compile.widened)
    widens: Widths = field(default_factory=dict)
    source: str = ""

    def declines_graph(self, graph: Graph) -> str | None:
        """The declined dtype that ``graph`` takes or computes, if any."""
        if not self.declines:
            return None
        dtypes = {getattr(v.type, "dtype", "") for v in graph.inputs}
        dtypes.update(np.dtype(d).name for d in graph.computed_dtypes)
        found = sorted(self.declines & dtypes)
        return found[0] if found else None

    @property
    def widening(self) -> str:
        """What ``widens`` declares, in words: "float16 computed in float32"."""
        return ", ".join(f"{narrow} computed in {wide}" for narrow, wide in self.widens.items())

    def widens_graph(self, graph: Graph) -> bool:
        """Whether ``graph`` takes or computes a dtype the backend widens."""
        return bool(self.widens) and computes_narrow(graph.inputs, graph.computed_dtypes,
                                                     self.widens)


#: what a backend promises unless it says otherwise: everything the reference does
EXACT_SEMANTICS = Semantics(source="every promise of the reference")


class Backend:
    name: str = ""
    #: what the backend promises (see Semantics)
    semantics: Semantics = EXACT_SEMANTICS
    uses_onnx: bool = False
    #: converts the graph PyTensor's rewrites made, not the graph as built (blame reads it)
    converts_rewritten: bool = False
    #: judged on each cell's canonical layout (and records' examples) only
    canonical_only: bool = False
    #: ... and the layouts of the special-value grid (strategies.grid) besides
    judges_grid: bool = False
    #: ... and run through one batch per row (see ``batch``)
    batched: bool = False
    #: the PyTensor rewrite set a batched backend compiles its batch with
    optimizer: str | None = None
    #: the linker whose mode's rewrites ``optimizer`` means (see Graph.rewritten)
    rewrites_for: str = "cvm"
    #: runs in a child process of its own (conformance.session.isolate.Sandbox): it may corrupt
    #: memory and crash cases later
    runs_apart: bool = False
    #: the backend that compiles the unrewritten graph with the same linker: where this
    #: backend's rewrites leave a graph unchanged, it compiles the very same function, so its
    #: outputs are that backend's (computed once, see Graph.rewrites_nothing)
    unrewritten: str | None = None

    def prepare(self, graph: Graph, opset: int) -> Runner:
        raise NotImplementedError

    def same_function(self, graph: Graph) -> bool:
        """Whether this backend compiles the very function its :attr:`unrewritten` backend
        compiles for ``graph``: its rewrites leave the graph as it is."""
        return self.unrewritten is not None and graph.rewrites_nothing(self.optimizer,
                                                                       self.rewrites_for)

    def batch(self, members: list):
        """A batched backend's runner for a row's canonical members (cbatch.Member), with a
        ``run(key, values)`` method."""
        raise NotImplementedError(f"{self.name} is not batched")


