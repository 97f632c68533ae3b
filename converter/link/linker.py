"""ONNX as a PyTensor backend: a ``JITLinker`` that converts the compiled function's graph
with the converter's own machinery and runs it on ONNX Runtime (or, for debugging, on
``onnx.reference.ReferenceEvaluator``), built as PyTensor builds ``link/jax/linker.py``.

The linker owns the session, the binding of inputs and the outputs, nothing else. PyTensor's
``Function`` keeps the rest of the semantics: it filters inputs (a bad value is its own
``TypeError``), keeps shared variables in containers and writes updates back. For that the
whole function graph is converted, shared variables included, as model inputs: their values
are read at every call, never baked into the model.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from pytensor.link.basic import JITLinker
from pytensor.link.utils import raise_with_op
from pytensor.tensor.random.type import RandomType

from converter import compat
from converter._core import build_model
from converter._opset import default_opset
from converter.errors import ConversionError, ModelNotLoaded, NotRunnable, UnsupportedOpError

#: where a session runs: ONNX Runtime, or the reference evaluator (slow, for debugging)
EVALUATORS = ("onnxruntime", "reference")
#: ONNX Runtime's graph optimization levels by the names ``onnx_mode`` takes
OPTIMIZATION_LEVELS = {"all": "ORT_ENABLE_ALL", "extended": "ORT_ENABLE_EXTENDED",
                       "basic": "ORT_ENABLE_BASIC", "none": "ORT_DISABLE_ALL"}


@dataclass(frozen=True)
class SessionOptions:
    """How a compiled function's model runs (see ``converter.onnx_mode``)."""

    evaluator: str = "onnxruntime"
    providers: tuple[str, ...] = ("CPUExecutionProvider",)
    #: ONNX Runtime's intra-op threads; None leaves its own default (one per core)
    threads: int | None = None
    optimization: str = "all"
    #: None: converter.default_opset()
    opset: int | None = None


class ONNXLinker(JITLinker):
    """A ``Linker`` that runs the whole function graph as one ONNX model."""

    # what the mode's rewrite query leaves out for this linker; each says why
    incompatible_rewrites = (
        # rewrites to ops that only have C code (no Python, Numba or ONNX form)
        "cxx_only",
        # Gemm/Gemv/Dot22 serve C's BLAS calls; ONNX's MatMul takes the plain Dot, and a
        # BLAS op converts to more nodes (its alpha/beta terms) for the same work
        "BlasOpt",
        # ONNX has no in-place ops: ONNX Runtime plans its own buffers, and an inplace op
        # only restricts the rewrites that follow it
        "inplace",
        # an elementwise graph fused into a CAReduce's scalar op, which no ONNX reduction takes
        "local_careduce_fusion",
        # Scan buffers preallocated for C's in-place writes, by each release's tag
        *compat.SCAN_PREALLOC_REWRITES,
    )

    def __init__(self, options: SessionOptions | None = None, **kwargs):
        super().__init__(**kwargs)
        self.options = options or SessionOptions()

    def accept(self, fgraph, no_recycling=None, profile=None):
        # PyTensor's accept makes a plain ``type(self)()`` for a second graph, which would
        # drop the options; a copy keeps them
        if self.fgraph is not None and self.fgraph is not fgraph:
            fresh = copy.copy(self)
            fresh.fgraph = None
            return fresh.accept(fgraph, no_recycling, profile)
        return super().accept(fgraph, no_recycling, profile)

    def fgraph_convert(self, fgraph, **kwargs):
        refuse_random_state(fgraph)
        if not fgraph.outputs:  # neither outputs nor updates (an update is an output here)
            return lambda *values: None
        opset = self.options.opset if self.options.opset is not None else default_opset()
        try:
            model = build_model(fgraph.inputs, fgraph.outputs, opset=opset, live_shared=True,
                                names=value_names(fgraph.inputs, fgraph.outputs))
        except UnsupportedOpError:
            raise
        except ConversionError as exc:
            raise NotRunnable(f"mode='ONNX' cannot run this function: {exc}") from exc
        # a rule that breaks is the converter's fault, not a refusal; it is said so here, in
        # pytensor.function, where an error of the rewrites before it stays as it was raised
        except Exception as exc:
            raise ConversionError(f"the converter failed on this function's graph: "
                                  f"{type(exc).__name__}: {exc}") from exc
        return session(model, self.options)

    def jit_compile(self, fn):
        return fn

    def create_jitable_thunk(self, compute_map, order, input_storage, output_storage,
                             storage_map):
        # JITLinker's thunk calls ``fn(*(cell[0] for cell in inputs))``; ONNX Runtime takes a
        # dict of the values by name, so this one builds that dict from the storage cells
        # directly (a generator and a call with *args less per call) and writes the outputs
        thunks, nodes, run = super().create_jitable_thunk(
            compute_map, order, input_storage, output_storage, storage_map)
        feed = getattr(run, "feed", None)
        if feed is None:  # nothing to run (no outputs)
            return thunks, nodes, run
        pairs = list(zip(feed.names, thunks[0].inputs, strict=True))
        outputs, call, fgraph = thunks[0].outputs, feed.call, self.fgraph

        def thunk():
            try:
                values = call({name: cell[0] for name, cell in pairs})
            except Exception:  # noqa: BLE001 - raise_with_op re-raises it, naming the node
                raise_with_op(fgraph, nodes[0], thunk)
            for cell, value in zip(outputs, values, strict=True):
                cell[0] = value

        thunk.inputs, thunk.outputs, thunk.lazy = thunks[0].inputs, outputs, False
        return [thunk], nodes, run

    def create_thunk_inputs(self, storage_map):
        return [storage_map[var] for var in self.fgraph.inputs]


def refuse_random_state(fgraph) -> None:
    """Refuse a graph holding random generator state: ONNX has no type for a numpy
    ``Generator`` and its random operators follow no seed PyTensor's draws do."""
    holders = [v for v in fgraph.variables if isinstance(v.type, RandomType)]
    if holders:
        raise UnsupportedOpError(
            holders[0].owner.op if holders[0].owner else "a random generator input",
            [v.type for v in holders[:3]],
            "the function draws random numbers: its shared random Generator state cannot be "
            "carried by an ONNX model, so mode='ONNX' refuses it; draw the values outside "
            "(or compile this function with mode='NUMBA') and pass them as inputs")


def value_names(inputs, outputs) -> tuple[list, list]:
    """Each variable's own name where it is a string no other input or output has taken,
    else None (a generated name): a compiled function may hold two shared variables of one
    name, or return one variable twice, which an export refuses but a function may do."""
    taken: set[str] = set()

    def claim(var):
        name = var.name
        if not isinstance(name, str) or not name or name in taken:
            return None
        taken.add(name)
        return name

    ins = [claim(v) for v in inputs]
    return ins, [claim(v) for v in outputs]


def session(model, options: SessionOptions):
    """The model loaded once for ``options``: a function of the input values (in the
    model's input order) returning the output arrays."""
    if options.evaluator == "reference":
        return _reference_session(model)
    import onnxruntime as ort

    # ONNX Runtime warns and runs on the CPU for a provider it lacks: refused here instead
    missing = [p for p in options.providers if p not in ort.get_available_providers()]
    if missing:
        raise NotRunnable(f"ONNX Runtime {ort.__version__} has no provider "
                          f"{', '.join(map(repr, missing))}; this installation has "
                          f"{', '.join(ort.get_available_providers())}")
    opts = ort.SessionOptions()
    # a failed run raises with ONNX Runtime's message; its log would print it a second time
    opts.log_severity_level = 4
    if options.threads is not None:
        opts.intra_op_num_threads = options.threads
        opts.inter_op_num_threads = 1
    opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel,
                                            OPTIMIZATION_LEVELS[options.optimization])
    try:
        sess = ort.InferenceSession(model.SerializeToString(), opts,
                                    providers=list(options.providers))
    except Exception as exc:  # ONNX Runtime raises its own Fail/InvalidGraph/... types
        raise ModelNotLoaded(f"ONNX Runtime could not load the converted model: {exc}") from exc
    names = [i.name for i in model.graph.input]
    outputs = [o.name for o in model.graph.output]
    # InferenceSession.run checks, at every call, that the feed names every input and that
    # no OrtValue belongs to another device, then calls its C++ session (``_sess``): the
    # feed built here always names every input with a numpy array, so the call goes to the
    # C++ session directly (an eighth of a small model's call, see docs/converter.md)
    run = sess._sess.run

    def call(feed):
        return run(outputs, feed, None)

    def run_session(*values):
        return call(dict(zip(names, values, strict=True)))

    run_session.session, run_session.model = sess, model
    run_session.feed = Feed(names, call)
    return run_session


@dataclass(frozen=True)
class Feed:
    """How the thunk calls a session: the model's input names, in order, and the call that
    takes their values by name."""

    names: list
    call: object


def _reference_session(model):
    import numpy as np
    from onnx.reference import ReferenceEvaluator

    try:
        evaluator = ReferenceEvaluator(model)
    except Exception as exc:  # the evaluator raises whatever its op classes raise
        raise ModelNotLoaded(
            f"onnx.reference.ReferenceEvaluator could not load the converted model: {exc}"
        ) from exc
    names = [i.name for i in model.graph.input]

    def run_reference(*values):
        # the evaluator may return numpy scalars; Function wants arrays
        return [np.asarray(o) for o in evaluator.run(None, dict(zip(names, values, strict=True)))]

    run_reference.model = model
    return run_reference
