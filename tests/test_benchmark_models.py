"""The benchmark's models (``benchmarks/models.py``) export, compute on ONNX Runtime the
log-density and gradient that PyTensor computes, and stay lean: at most 4 ONNX nodes per
node of the PyTensor function they came from, compiled in PyTensor's default mode
as ``benchmarks/test_models.py`` times them."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytensor
import pytest
from pytensor.compile.mode import Mode

import converter
from conformance import versions as releases
from conformance.core.oracle import assert_agree
from conformance.registry import DEFAULT_TOL

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed
from benchmarks.by_hand import BY_HAND
from benchmarks.models import MODELS, compiled, pytensor_nodes

SIZE = 40
MAX_NODES_PER_NODE = 4.0
#: the special-function rules emit one node per series term (``converter/ops/special.py``
#: is being rewritten to a node count independent of the series length)
SPECIAL_FUNCTIONS_UNROLLED = pytest.mark.xfail(
    strict=True, raises=AssertionError,
    reason="gammaln/psi/betaln compositions cost hundreds of nodes each")


@functools.cache
def python_reference(name: str):
    """The model as written, without rewrites, on PyTensor's Python kernels (scipy's, the
    harness's reference). Not the default mode: PyTensor 2.38's is C, whose psi is off by up
    to ~1e-10 relative (the psi row's record) and a gradient sums it 40 times; nor 2.38's
    Python linker after the default rewrites, 1e-8 off on gamma_beta_binomial's gradient
    where 3.x, 2.38's Numba mode and the unrewritten graph agree."""
    built, _ = compiled(name, SIZE)
    return pytensor.function(built.inputs, built.outputs,
                             mode=Mode(linker="py", optimizer=None))


@pytest.fixture(scope="module", params=[m.name for m in MODELS])
def exported(request):
    built, fn = compiled(request.param, SIZE)
    return request.param, built, fn, converter.function_to_onnx(fn)


def test_benchmark_model_matches_pytensor(exported):
    name, built, _, model = exported
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    jittered = [np.asarray(p + rng.normal(scale=0.3, size=p.shape)) for p in built.point]
    for where, point in (("the model's point", built.point), ("a jittered point", jittered)):
        feeds = dict(zip([i.name for i in model.graph.input], point, strict=True))
        expected = [np.asarray(v) for v in python_reference(name)(*point)]
        assert_agree(expected, session.run(None, feeds), DEFAULT_TOL["float64"],
                     backend="onnxruntime", reference="pytensor-py",
                     case=f"{name} logp and gradient at {where}")


@pytest.mark.parametrize("name", sorted(BY_HAND))
def test_model_written_by_hand_matches_pytensor(name):
    """The benchmark's hand-written ONNX graphs compute the model's function, so timing them
    measures what an ideal converter could reach."""
    built, fn = compiled(name, SIZE)
    model = BY_HAND[name](SIZE)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    point = [np.asarray(p + rng.normal(scale=0.3, size=p.shape)) for p in built.point]
    feeds = dict(zip([i.name for i in model.graph.input], point, strict=True))
    assert_agree([np.asarray(v) for v in python_reference(name)(*point)],
                 session.run(None, feeds), DEFAULT_TOL["float64"],
                 backend="onnxruntime (written by hand)", reference="pytensor-py",
                 case=f"{name} logp and gradient")
    assert len(model.graph.node) < len(converter.function_to_onnx(fn).graph.node)


#: over the bound for another reason: PyTensor fuses the HalfCauchy prior's and the
#: likelihood's ~45 scalar operations into 4 Composites, ONNX needs a node per operation,
#: and log1p (no ONNX operator; an accurate composition) alone is 11 (60 nodes for 12)
LOG1P_AND_FUSION = pytest.mark.xfail(
    strict=True, raises=AssertionError,
    reason="4 Composites of ~45 scalar operations, log1p composed of 11 nodes")
#: softplus is an accurate piecewise composition of 21 nodes (ONNX's Softplus is not
#: accurate below -17): 53 nodes for 13
SOFTPLUS = pytest.mark.xfail(strict=True, raises=AssertionError,
                             reason="softplus composed of 21 nodes")
#: a scan's outer bookkeeping: PyTensor's slices, buffer allocations and set_subtensors
#: around its two Loops become Shape/Slice/Reshape/Where chains (165 nodes for 27)
SCAN_BOOKKEEPING = pytest.mark.xfail(strict=True, raises=AssertionError,
                                     reason="slices and buffers around the Loops: 165 nodes")
#: PyTensor 2.38's default (C) mode leaves fewer, larger nodes: Gemv and four Composites,
#: 16 nodes for 65 ONNX nodes (4.06 per node; 3.x's Numba mode: 19 for 57)
C_MODE_FUSION = pytest.mark.xfail(
    releases.holds("pytensor<3"), strict=True, raises=AssertionError,
    reason="2.38's C mode: 16 nodes (Gemv, 4 Composites) for 65 ONNX nodes")
OVER_BOUND = {"eight_schools": LOG1P_AND_FUSION, "logistic_regression": SOFTPLUS,
              "exponential_smoothing": SCAN_BOOKKEEPING, "linear_regression": C_MODE_FUSION}


def _lean_marks(model) -> list:
    return [SPECIAL_FUNCTIONS_UNROLLED] if model.special else [
        mark for name, mark in OVER_BOUND.items() if name == model.name]


@pytest.mark.parametrize("name", [pytest.param(m.name, marks=_lean_marks(m)) for m in MODELS])
def test_benchmark_model_is_lean(name):
    _, fn = compiled(name, SIZE)
    onnx_nodes, pt_nodes = len(converter.function_to_onnx(fn).graph.node), pytensor_nodes(fn)
    assert onnx_nodes <= MAX_NODES_PER_NODE * pt_nodes, (
        f"{name}: {onnx_nodes} ONNX nodes for {pt_nodes} PyTensor nodes "
        f"({onnx_nodes / pt_nodes:.2f} per node, at most {MAX_NODES_PER_NODE:g} allowed)")
