"""ONNX Runtime (CPU provider) on the converted model: all graph optimizations, none, the
model converted from PyTensor's rewritten graph (what ``converter.function_to_onnx`` gets),
and the ``ONNX`` mode end to end (``pytensor.function(..., mode="ONNX")``).

A refusal to load or run a model is raised as an ``ort_status.OrtError``: ONNX Runtime's
status, the stage, and for a run the spec rule the model breaks there (what blame reads)."""

from __future__ import annotations

import functools
import warnings

import numpy as np

import converter
from conformance.backends.base import (
    Backend,
    ConversionFailed,
    Declined,
    Graph,
    Runner,
    Semantics,
)
from conformance.backends.ort_status import Stage, typed

#: Every optimization level alike: the Cast insertion and the removal of the pairs between
#: nodes run when the CPU provider takes the graph, before any optional optimization
#: (ORT_DISABLE_ALL computes float16 x * y / z with x * y above 65504 as the float32 chain).
SEMANTICS = Semantics(
    widens={"float16": "float32"},
    source="ONNX Runtime's CPU provider has few float16 kernels: its InsertCastTransformer "
           "casts a float16 node's operands to float32 and its results back, then removes "
           "the Cast pairs between consecutive such nodes, so a float16 chain runs in float32 "
           "and is rounded once where it ends (an explicit Cast to float16 still rounds)")


class OnnxRuntimeBackend(Backend):
    """ONNX Runtime, CPU provider, at a chosen graph-optimization level."""

    uses_onnx = True
    semantics = SEMANTICS

    def __init__(self, name: str, optimize: bool = True):
        self.name, self.optimize = name, optimize

    def model(self, graph: Graph, opset: int):
        return graph.onnx_model(opset)

    def prepare(self, graph: Graph, opset: int) -> Runner:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        # fatal only: a run that raises is an outcome, its error comes back as the exception
        opts.log_severity_level = 4
        if not self.optimize:
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        model = self.model(graph, opset)
        try:
            session = ort.InferenceSession(
                model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            if (error := typed(exc, Stage.LOAD)) is exc:
                raise
            raise error from exc
        names = [i.name for i in model.graph.input]

        def run(values):
            try:
                outputs = session.run(None, dict(zip(names, values, strict=True)))
            except Exception as exc:
                if (error := typed(exc, Stage.RUN, model, values)) is exc:
                    raise
                raise error from exc
            return [np.asarray(o) for o in outputs]

        return run


def default_linker() -> str:
    """The linker of the installed PyTensor's default mode, whatever the run set: Numba from
    PyTensor 3 on (``linker="auto"``), the C ``cvm`` on 2.38."""
    from packaging.version import Version

    from conformance.versions import installed

    version = installed("pytensor")
    return "numba" if version is None or version >= Version("3") else "cvm"


class RewrittenGraphBackend(OnnxRuntimeBackend):
    """ONNX Runtime on the model converted from the graph PyTensor's default mode rewrites
    (the NUMBA mode's rewrites on 3.x, fused Composites and no BLAS; the C mode's on 2.38,
    with BLAS ops), as ``converter.function_to_onnx`` gets it from ``pytensor.function``.
    Judged on canonical layouts, as the C backends are: the rewrites and the conversion
    depend on the layout, not on the values, and every layout costs a rewrite pass."""

    canonical_only = converts_rewritten = True

    def model(self, graph: Graph, opset: int):
        graph.onnx_model(opset)  # the plain conversion must work first
        # shared with pytensor-numba-opt (3.x) or pytensor-c-opt (2.38)
        inputs, outputs = graph.rewritten("fast_run", linker=default_linker())
        try:
            return graph.convert(inputs, outputs, opset=opset)
        # a converter failure is a result
        except Exception as exc:
            raise ConversionFailed(exc) from exc


class OnnxModeBackend(Backend):
    """``pytensor.function(inputs, outputs, mode=converter.onnx_mode(threads=1))`` as a user
    calls it: the mode's rewrites, the conversion of the whole function graph, the session,
    and PyTensor's ``Function`` around them. Judged on canonical layouts, as the rewritten
    backends are: every layout costs a rewrite pass. It runs this project's converter (the
    mode's), so a run judging another converter leaves it out (Declined)."""

    uses_onnx = canonical_only = converts_rewritten = True
    semantics = SEMANTICS

    def __init__(self, name: str):
        self.name = name

    def prepare(self, graph: Graph, opset: int) -> Runner:
        if getattr(graph.convert, "__wrapped__", graph.convert) is not converter.to_onnx:
            raise Declined("the ONNX mode runs this project's converter; another converter "
                           "is judged by the other ONNX backends")
        # no plain conversion first: the mode converts its own rewritten graph, and a refusal
        # of the graph as built must not hide what the mode computes
        try:
            fn = graph.function_in(f"onnx-mode-{opset}", _mode(opset))
        # ONNX Runtime refusing the model is its outcome (as for the other sessions), never a
        # refusal to convert; the linker's refusals and failures are conversion results; an
        # error of PyTensor's rewrites before it is raised as it is, the backend's outcome
        except converter.ModelNotLoaded as exc:
            raise typed(exc.__cause__ or exc, Stage.LOAD) from None
        except converter.ConversionError as exc:
            raise ConversionFailed(exc) from exc

        model = getattr(fn.vm.jit_fn, "model", None)  # None: a function without outputs

        def run(values):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    return [np.array(o, copy=True) for o in fn(*values)]
            except Exception as exc:
                if (error := typed(exc, Stage.RUN, model, values)) is exc:
                    raise
                raise error from exc

        return run


@functools.cache
def _mode(opset: int):
    return converter.onnx_mode(threads=1, opset=opset)
