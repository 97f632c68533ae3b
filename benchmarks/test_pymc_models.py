"""Models PyMC builds (``benchmarks/pymc_models.py``): logp and gradient in one function as
a sampler evaluates them, exported with ``converter.function_to_onnx`` and timed on ONNX
Runtime beside the PyTensor function PyMC compiled (its default mode: Numba on PyTensor 3).
Skipped where PyMC is not installed (Python 3.11, whose newest PyTensor no PyMC fits)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import converter
from benchmarks import pymc_models
from benchmarks.graphs import ort_session

pytestmark = pytest.mark.skipif(pymc_models.pm is None, reason="PyMC is not installed")

PARAMS = [(name, size, backend) for name in pymc_models.MODELS for size in pymc_models.SIZES
          for backend in ("onnxruntime", "pytensor")]


@functools.lru_cache(maxsize=2)
def exported(name: str, size: int):
    return converter.function_to_onnx(pymc_models.compiled(name, size).fn)


@pytest.mark.benchmark(max_time=0.5)
@pytest.mark.parametrize(("model", "size", "backend"), PARAMS)
def test_pymc_model_speed(benchmark, model, size, backend):
    built = pymc_models.compiled(model, size)
    expected = built.fn(*built.point)
    if backend == "pytensor":
        run = functools.partial(built.fn, *built.point)
    else:
        onnx_model = exported(model, size)
        session = ort_session(onnx_model)
        feeds = dict(zip([i.name for i in onnx_model.graph.input], built.point, strict=True))
        run = functools.partial(session.run, None, feeds)
    for i, (got, want) in enumerate(zip(run(), expected, strict=True)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9,
                                   err_msg=f"{backend} output {i} of PyMC's {model} n={size}")
    benchmark.group = f"pymc {model} n={size}"
    benchmark.extra_info.update(kind="pymc-model", model=model, size=size, backend=backend,
                                onnx_nodes=len(exported(model, size).graph.node))
    benchmark(run)
