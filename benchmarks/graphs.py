"""What the benchmarks run on: deterministic PyTensor graphs, fixed harness cases and the
per-op speed graphs. Everything here is built outside the timed regions."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.special import softmax

from conformance.strategies import fixed

_UNARY = (pt.exp, pt.tanh, pt.sin, pt.neg, pt.abs, pt.cos, pt.sigmoid)
_BINARY = (pt.add, pt.mul, pt.sub, pt.maximum, pt.minimum)


def _new_nodes(var, seen: set) -> int:
    """How many Apply nodes behind ``var`` are not in ``seen`` (which is then updated)."""
    count, stack = 0, [var]
    while stack:
        node = stack.pop().owner
        if node is None or node in seen:
            continue
        seen.add(node)
        count += 1
        stack.extend(node.inputs)
    return count


@functools.lru_cache(maxsize=2)
def chain(n_nodes: int, *, seed: int = 0) -> tuple[list, list]:
    """Inputs and output of a random-ish but deterministic elemwise/reduction DAG with
    ``n_nodes`` Apply nodes (or a few more): unary and binary elemwise ops on recent values,
    scalar constants (half of them repeated, half fresh), a broadcast vector input, and row
    or column sums and maxima broadcast back. About one node in twenty adds a constant."""
    rng = random.Random(seed)
    x, v = pt.matrix("x"), pt.vector("v")
    recent = [x, x * 0.5 + v]
    seen: set = set()
    count = _new_nodes(recent[-1], seen)
    while count < n_nodes:
        a = recent[-1]
        kind = rng.random()
        if kind < 0.35:
            out = rng.choice(_UNARY)(a)
        elif kind < 0.65:
            out = rng.choice(_BINARY)(a, rng.choice(recent))
        elif kind < 0.8:
            value = rng.choice((0.5, 2.0)) if rng.random() < 0.5 else round(rng.uniform(-2, 2), 6)
            out = a * np.float64(value)
        elif kind < 0.9:
            out = a + v
        else:
            axis = rng.choice((0, 1))
            out = a - rng.choice((pt.sum, pt.max))(a, axis=axis, keepdims=True)
        recent = [*recent[-7:], out]
        count += _new_nodes(out, seen)
    return [x, v], [recent[-1]]


#: Harness cases: (registry row, dtype, a dtype -> Case function), small as Hypothesis draws.
HARNESS_CASES = {
    "exp": ("exp", "float64", fixed(np.linspace(-2, 2, 12).reshape(3, 4))),
    "add-broadcast": ("add", "float32", fixed(np.arange(12.0).reshape(3, 4), [1, 2, 3, 4])),
    "sum-axis": ("sum", "int64", fixed(np.arange(12).reshape(3, 4), params=(("axis", 1),))),
}


@dataclass(frozen=True)
class SpeedOp:
    """One op for the speed comparison: input shapes per size, and the graph on them."""

    shapes: Callable[[int], list[tuple[int, ...]]]
    build: Callable


def _matrix(size: int) -> tuple[int, int]:
    cols = min(size, 1000)
    return (size // cols, cols)


SPEED_OPS = {
    "exp": SpeedOp(lambda n: [(n,)], pt.exp),
    "add-broadcast": SpeedOp(lambda n: [_matrix(n), _matrix(n)[1:]], pt.add),
    "sum-axis1": SpeedOp(lambda n: [_matrix(n)], lambda x: pt.sum(x, axis=1)),
    "matmul": SpeedOp(lambda n: [(int(n**0.5),) * 2] * 2, pt.dot),
    "softmax": SpeedOp(lambda n: [_matrix(n)], lambda x: softmax(x, axis=-1)),
}
#: Sizes are the element count of the first input (matmul: the nearest square).
SPEED_SIZES = {"exp": (1_000, 1_000_000), "add-broadcast": (1_000, 1_000_000),
               "sum-axis1": (1_000, 1_000_000), "matmul": (1_024, 262_144),
               "softmax": (1_000, 1_000_000)}
SPEED_DTYPES = ("float32", "float64")


def speed_graph(op: str, dtype: str, size: int) -> tuple[list, list, list[np.ndarray]]:
    """Symbolic inputs, outputs and seeded input values for one speed benchmark."""
    spec = SPEED_OPS[op]
    rng = np.random.default_rng(size)
    shapes = spec.shapes(size)
    inputs = [pt.tensor(name=f"x{i}", dtype=dtype, shape=(None,) * len(s))
              for i, s in enumerate(shapes)]
    values = [rng.uniform(-1, 1, s).astype(dtype) for s in shapes]
    return inputs, [spec.build(*inputs)], values


def ort_session(model, *, optimize: bool = True):
    """An ONNX Runtime session configured as ``conformance.backends.OnnxRuntimeBackend``."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def call_floor(model, outputs):
    """A model with ``model``'s inputs and outputs that computes nothing: each output is a
    stored copy of ``outputs`` (what the real model returns). Timed like the real model, it
    is the least any export of the same function can cost per ONNX Runtime call (feeding
    the inputs, returning the outputs), however lean its graph."""
    import onnx
    from onnx import helper, numpy_helper

    stored = [numpy_helper.from_array(np.asarray(value), f"floor_{k}")
              for k, value in enumerate(outputs)]
    nodes = [helper.make_node("Identity", [t.name], [out.name])
             for t, out in zip(stored, model.graph.output, strict=True)]
    graph = helper.make_graph(nodes, "call_floor", list(model.graph.input),
                              list(model.graph.output), stored)
    floor = helper.make_model(graph, opset_imports=list(model.opset_import),
                              ir_version=model.ir_version)
    onnx.checker.check_model(floor, full_check=True)
    return floor
