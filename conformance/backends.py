"""Backends: each prepares a graph once and then runs it on many input sets.

A backend knows nothing of the others. ``Graph`` is the one place where derived artefacts
(the ONNX model, every backend's prepared runner) are cached.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from conformance.innergraphs import inlined, without_inner_rewrites
from conformance.rewritestore import RewriteStore

Runner = Callable[[Sequence[np.ndarray]], list[np.ndarray]]


@dataclass(eq=False)
class Graph:
    """A PyTensor graph plus everything built from it, each built at most once."""

    inputs: list
    outputs: list
    convert: Callable  # (inputs, outputs, *, opset) -> onnx.ModelProto
    #: where derived graphs outlive the run (conformance.rewritestore), under ``key``
    store: RewriteStore | None = None
    key: tuple = ()
    _models: dict = field(default_factory=dict)
    _derived: dict = field(default_factory=dict)
    _runners: dict = field(default_factory=dict)
    _functions: dict = field(default_factory=dict)

    @functools.cached_property
    def computed_floats(self) -> tuple[np.dtype, ...]:
        """The float dtypes of every value the graph computes (not its inputs), found once
        per graph rather than on every example that is judged with them."""
        try:
            from pytensor.graph.traversal import ancestors
        except ImportError:  # PyTensor 2.38
            from pytensor.graph.basic import ancestors
        return tuple(np.dtype(v.type.dtype) for v in ancestors(self.outputs)
                     if v.owner is not None and getattr(v.type, "dtype", "").startswith("float"))

    def coverage(self, opset: int) -> dict:
        """The op kinds in the graph and the ONNX operators of its model (if it converted)."""
        from conformance.coverage import onnx_ops, op_kinds

        try:
            emitted = sorted(onnx_ops(self.onnx_model(opset)))
        except ConversionFailed:
            emitted = []
        return {"op_kinds": sorted(op_kinds(self.outputs)), "onnx_ops": emitted}

    def function(self, linker: str, optimizer: str | None):
        """The graph compiled by PyTensor with ``linker`` and ``optimizer`` (once)."""
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

    def rewritten(self, optimizer: str) -> tuple[list, list]:
        """The graph as rewritten by ``optimizer`` (the inputs and outputs of the compiled
        function's graph, as ``converter.function_graph`` reads them). The Python linker
        compiles nothing, and the rewrites do not depend on the linker."""
        from converter import function_graph

        return self._derive(f"rewritten-{optimizer}",
                            lambda: function_graph(self.function("py", optimizer)))

    def rewritten_inlined(self, optimizer: str) -> tuple[list, list]:
        """:meth:`rewritten` with each OpFromGraph replaced by its inner graph, rewritten as
        the op's own function would be (conformance.innergraphs.inlined)."""
        return self._derive(f"inlined-{optimizer}",
                            lambda: inlined(*self.rewritten(optimizer), rewritten=True))

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
            except ConversionFailed as exc:  # a converter run elsewhere (conformance.isolate)
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


class HarnessFailed(RuntimeError):
    """The harness itself could not run a case (say, its child process did not start): not a
    result of the code under test, so the test ends as an error instead of comparing it."""


class Backend:
    name: str = ""
    uses_onnx: bool = False
    #: judged on each cell's canonical layout (and records' examples) only
    canonical_only: bool = False
    #: ... and run through one C batch per row (cbatch)
    batched: bool = False
    #: the PyTensor rewrite set a batched backend compiles its batch with
    optimizer: str | None = None

    def prepare(self, graph: Graph, opset: int) -> Runner:
        raise NotImplementedError


class PyTensorBackend(Backend):
    """``pytensor.function`` with a given linker and rewrite set."""

    def __init__(self, name: str, linker: str, optimizer: str | None, batched: bool = False):
        self.name, self.linker, self.optimizer = name, linker, optimizer
        self.batched = self.canonical_only = batched

    def prepare(self, graph: Graph, opset: int) -> Runner:
        fn = graph.function(self.linker, self.optimizer)

        def run(values):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                return [np.array(o, copy=True) for o in fn(*values)]

        return run


class OnnxRuntimeBackend(Backend):
    """ONNX Runtime, CPU provider, at a chosen graph-optimization level."""

    uses_onnx = True

    def __init__(self, name: str, optimize: bool = True):
        self.name, self.optimize = name, optimize

    def model(self, graph: Graph, opset: int):
        return graph.onnx_model(opset)

    def prepare(self, graph: Graph, opset: int) -> Runner:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        if not self.optimize:
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        model = self.model(graph, opset)
        session = ort.InferenceSession(
            model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
        )
        names = [i.name for i in model.graph.input]

        def run(values):
            return [np.asarray(o) for o in session.run(None, dict(zip(names, values, strict=True)))]

        return run


class RewrittenGraphBackend(OnnxRuntimeBackend):
    """ONNX Runtime on the model converted from PyTensor's rewritten graph (default rewrites,
    C linker: fused Composites, BLAS ops), as ``converter.function_to_onnx`` users get it.
    Judged on canonical layouts, as the C backends are: the rewrites and the conversion
    depend on the layout, not on the values, and every layout costs a rewrite pass."""

    canonical_only = True

    def model(self, graph: Graph, opset: int):
        graph.onnx_model(opset)  # the plain conversion must work first
        inputs, outputs = graph.rewritten("fast_run")  # shared with pytensor-c-opt's batch
        try:
            return graph.convert(inputs, outputs, opset=opset)
        # a converter failure is a result
        except Exception as exc:
            raise ConversionFailed(exc) from exc


class OnnxReferenceBackend(Backend):
    """``onnx.reference.ReferenceEvaluator``: the ONNX specification's executable reading."""

    name = "onnx-reference"
    uses_onnx = True

    def model(self, graph: Graph, opset: int):
        return graph.onnx_model(opset)

    def prepare(self, graph: Graph, opset: int) -> Runner:
        from onnx.reference import ReferenceEvaluator

        model = self.model(graph, opset)
        evaluator = ReferenceEvaluator(model)
        names = [i.name for i in model.graph.input]

        def run(values):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                outs = evaluator.run(None, dict(zip(names, values, strict=True)))
            # 0-d results may come back as numpy scalars; asarray keeps their dtype.
            return [np.asarray(o) for o in outs]

        return run


REFERENCE = PyTensorBackend("pytensor-py", linker="py", optimizer=None)

#: Every backend by name; the first is the semantic reference all others are judged against.
BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        REFERENCE,
        PyTensorBackend("pytensor-c", linker="cvm", optimizer=None, batched=True),
        PyTensorBackend("pytensor-c-opt", linker="cvm", optimizer="fast_run", batched=True),
        OnnxRuntimeBackend("onnxruntime"),
        OnnxRuntimeBackend("onnxruntime-noopt", optimize=False),
        OnnxReferenceBackend(),
        RewrittenGraphBackend("onnxruntime-rewritten"),
    )
}
DEFAULT_BACKENDS = ("pytensor-py", "pytensor-c", "pytensor-c-opt", "onnxruntime",
                    "onnx-reference", "onnxruntime-rewritten")
