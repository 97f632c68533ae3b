"""Exported models against PyTensor itself: the log-density and gradient of PyMC-style
models (``benchmarks/models.py``), per evaluation, at a few dozen observations (per-call
cost) and at 100,000 (throughput). ONNX Runtime runs ``converter.function_to_onnx(fn)`` on one
intra-op thread with all graph optimizations; PyTensor runs ``fn`` itself, compiled in its
default mode (Numba on PyTensor 3, C on 2.38). A third side, ``onnxruntime-floor``, runs a
model with the same inputs and outputs that computes nothing (``benchmarks.graphs.call_floor``):
the least any export of the function can cost per ONNX Runtime call; where a model has a
hand-written ONNX graph (``benchmarks/by_hand.py``), ``onnxruntime-by-hand`` runs it: what an
ideal converter could emit. The sides of each model and size run one after the other, so
their ratios are measured side by side; the summary prints them with the ONNX node count per
node of the compiled PyTensor graph."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import converter
from benchmarks.by_hand import BY_HAND
from benchmarks.graphs import call_floor, ort_session
from benchmarks.models import MODELS, compiled, pytensor_nodes

BACKENDS = ("onnxruntime", "onnxruntime-by-hand", "onnxruntime-floor", "pytensor")
PARAMS = [(m.name, size, backend) for m in MODELS for size in m.sizes for backend in BACKENDS
          if backend != "onnxruntime-by-hand" or m.name in BY_HAND]


@functools.lru_cache(maxsize=2)
def exported(name: str, size: int):
    _, fn = compiled(name, size)
    return converter.function_to_onnx(fn)


def _runner(name: str, size: int, backend: str):
    built, fn = compiled(name, size)
    if backend == "pytensor":
        return lambda: fn(*built.point)
    model = exported(name, size)
    if backend == "onnxruntime-by-hand":
        model = BY_HAND[name](size)
    elif backend == "onnxruntime-floor":
        model = call_floor(model, fn(*built.point))
    session = ort_session(model)
    feeds = dict(zip([i.name for i in model.graph.input], built.point, strict=True))
    return lambda: session.run(None, feeds)


@pytest.mark.benchmark(max_time=0.5)
@pytest.mark.parametrize(("model", "size", "backend"), PARAMS)
def test_model_speed(benchmark, model, size, backend):
    built, fn = compiled(model, size)
    run = _runner(model, size, backend)
    expected = fn(*built.point)
    for got, want in zip(run(), expected, strict=True):  # also the first (compiling) call
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    benchmark.group = f"model {model} n={size}"
    benchmark.extra_info.update(
        kind="model", model=model, size=size, backend=backend,
        onnx_nodes=len(exported(model, size).graph.node), pytensor_nodes=pytensor_nodes(fn))
    benchmark(run)
