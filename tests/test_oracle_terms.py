"""Sums of products (reductions, cumulative sums, dot products, BLAS forms) are judged in ulps
of the sum of their terms' magnitudes (``Tol.terms_ulps``): a correct cancellation stays
green, and a wrong digit of a tiny dot product shows, which an absolute floor let through."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import converter
from conformance.core.harness import Harness, Spec
from conformance.core.oracle import compare, magnitudes
from conformance.registries import row_named
from conformance.registry import Case, Tol, summed
from conformance.strategies.products import MAX_K

F32 = np.float32
#: a 2x2 dot product of operands about 1e-3: results about 1e-6
SMALL_DOT = Case((np.array([[1.1e-3, -2.3e-3], [3.7e-3, 1.9e-3]], F32),
                  np.array([[2.9e-3, 1.3e-3], [-1.7e-3, 3.1e-3]], F32)),
                 ((None, None), (None, None)))


def test_a_correct_cancellation_is_within_the_terms_budget():
    """1 + 1e-8 - 1 in float32: summed left to right it is 0, exactly it is 1e-8 (the
    reference's pairwise order may give either); ulps of the result alone call 0 wrong."""
    expected, actual, terms = [np.array([1e-8], F32)], [np.array([0.0], F32)], [
        np.array([2.0 + 1e-8], F32)]
    assert compare(expected, actual, summed(3)["float32"], backend="b", terms=terms).ok
    assert not compare(expected, actual, Tol(ulps=4), backend="b").ok


def test_a_tiny_sum_is_judged_to_its_own_digits():
    expected = [np.array([7e-30], F32)]
    off = [np.array([7e-30 * (1 + 1e-4)], F32)]
    terms = [np.array([7e-30], F32)]
    result = compare(expected, off, summed(16)["float32"], backend="b", terms=terms)
    assert not result.ok and "ulp" in result.message, result.message
    # the relative default with its absolute floor takes anything this small
    assert compare(expected, off, Tol(rtol=1e-5, atol=1e-6), backend="b").ok


def test_terms_that_do_not_fit_or_are_not_finite_never_widen_the_budget():
    expected, actual = [np.array([1.0, 1.0], F32)], [np.array([1.0, 1.5], F32)]
    tol = summed(16)["float32"]
    assert not compare(expected, actual, tol, backend="b", terms=[np.array([4.0], F32)]).ok
    nan_terms = [np.array([np.nan, np.nan], F32)]
    assert not compare(expected, actual, tol, backend="b", terms=nan_terms).ok
    assert not compare(expected, actual, tol, backend="b", terms=None).ok
    # beyond the largest finite, the scale is the largest finite one (a bound, not inf)
    huge = [np.array([np.inf, np.inf], F32)]
    assert compare(expected, actual, tol, backend="b", terms=huge).ok


def test_magnitudes_keep_the_dtype():
    x = np.array([-3.0, np.nan, -np.inf, -0.0], F32)
    got = magnitudes(x)
    assert got.dtype == F32 and got.tolist() == [3.0, 0.0, 0.0, 0.0]
    ints = magnitudes(np.array([-128, -5, 7], np.int8))
    assert ints.dtype == np.int8 and ints.tolist() == [127, 5, 7]


@pytest.mark.parametrize("kwargs", [{"terms_ulps": 2}, {"rtol": 1e-5, "terms_ulps": 2},
                                    {"ulps": 1, "terms_ulps": -1}])
def test_a_terms_budget_needs_ulps(kwargs):
    with pytest.raises(ValueError, match="terms_ulps"):
        Tol(**kwargs)


def _matmul_in_float16(*args, **kwargs):
    """The project's converter with every float32 MatMul and Gemm computed in float16: a
    plausible speed-up that keeps three significant digits."""
    model = converter.to_onnx(*args, **kwargs)
    nodes = []
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Gemm"):
            nodes.append(node)
            continue
        narrow = [f"{name}__f16" for name in node.input]
        nodes += [helper.make_node("Cast", [name], [n], to=TensorProto.FLOAT16)
                  for name, n in zip(node.input, narrow, strict=True)]
        out = node.output[0]
        node.input[:] = narrow
        node.output[0] = f"{out}__f16"
        nodes += [node, helper.make_node("Cast", [node.output[0]], [out], to=TensorProto.FLOAT)]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.checker.check_model(model, full_check=True)
    return model


def test_a_dot_product_computed_in_float16_is_caught_at_small_magnitudes():
    """Operands about 1e-3 give a dot product about 1e-6: float16's error there is about
    1e-9, far below the absolute bound the row held before (2 * k * k * u, about 2e-6)."""
    spec = Spec(row_named("dot"), "float32", 18, ("pytensor-py", "onnx-reference"))

    def verdict(convert):
        outcome = Harness(convert).run(spec, SMALL_DOT)
        (v,) = [v for v in outcome.verdicts if v.backend == "onnx-reference"]
        return outcome, v.comparison

    _, right = verdict(converter.to_onnx)
    assert right.ok, right.message
    outcome, wrong = verdict(_matmul_in_float16)
    assert not wrong.ok and "onnx-reference: out[" in wrong.message, wrong.message
    assert " ulp > " in wrong.message, wrong.message
    a_priori = Tol(atol=2 * MAX_K * MAX_K * float(np.finfo(F32).eps) / 2)
    assert compare(outcome.expected, outcome.actual["onnx-reference"], a_priori,
                   backend="onnx-reference").ok, "the old absolute bound let it through"


def test_a_bundle_replays_with_the_terms_budget(tmp_path):
    """The bundle's repro.py reads terms.npz: ONNX Runtime's dot agrees with the reference
    within the budget, and an expectation one part in 1e4 off at 1e-6 is a disagreement."""
    import subprocess
    import sys

    from conformance.core.bundle import write_bundle

    spec = Spec(row_named("dot"), "float32", 18, ("pytensor-py", "onnxruntime"))
    outcome = Harness(converter.to_onnx).run(spec, SMALL_DOT)
    assert outcome.terms is not None
    folder = write_bundle(tmp_path / "b", outcome, model=outcome.graph.onnx_model(18))
    assert (folder / "terms.npz").is_file()
    replay = [sys.executable, str(folder / "repro.py")]
    agrees = subprocess.run(replay, capture_output=True, text=True)
    assert agrees.returncode == 0, agrees.stdout + agrees.stderr
    np.savez(folder / "expected.npz", out0=outcome.expected[0] * F32(1 + 1e-4))
    differs = subprocess.run(replay, capture_output=True, text=True)
    assert differs.returncode == 1 and "still disagrees" in differs.stdout, differs.stdout
