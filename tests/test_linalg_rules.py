"""Converter-level checks of the linear-algebra rules that the conformance rows cannot make:
refusals of ops with no rule, which ONNX operators a rule chooses, and PyMC-style graphs."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytensor
import pytensor.tensor as pt
import pytest
from onnx.reference import ReferenceEvaluator
from pytensor.tensor.blas import gemv_no_inplace

import converter
from converter import MIN_OPSET, UnsupportedOpError, compat

MatrixPinv = compat.lookup("MatrixPinv")


def _ops(model) -> set[str]:
    return {node.op_type for node in model.graph.node}


def test_a_blockwise_over_an_op_without_rule_is_refused_with_the_reason():
    a = pt.matrix("a")
    with pytest.raises(UnsupportedOpError, match="no rule for Blockwise over MatrixPinv") as info:
        converter.to_onnx([a], [pt.linalg.pinv(a)])
    assert "supported_ops()" in str(info.value)


def test_a_bare_core_op_without_rule_is_refused():
    a = pt.matrix("a")
    with pytest.raises(UnsupportedOpError, match="MatrixPinv"):
        converter.to_onnx([a], [MatrixPinv(hermitian=False)(a)])


def test_solve_reading_only_some_diagonals_is_refused():
    a, b = pt.matrix("a"), pt.vector("b")
    with pytest.raises(UnsupportedOpError, match="assume_a='tridiagonal'"):
        converter.to_onnx([a, b], [pt.linalg.solve(a, b, assume_a="tridiagonal")])


def test_factorisations_and_solvers_are_listed_as_supported():
    ops = converter.supported_ops()["ops"]
    assert {"Cholesky", "SolveTriangular", "Solve", "CholeskySolve", "MatrixInverse", "Det",
            "SLogDet"} <= set(ops)
    assert "MatrixPinv" not in ops


def _run_both(model, feeds):
    """The model's outputs on ONNX Runtime and on the ONNX reference evaluator."""
    names = [i.name for i in model.graph.input]
    feeds = {n: feeds[n] for n in names}
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds), ReferenceEvaluator(model).run(None, feeds)


def _mvnormal_logp():
    """PyMC's MvNormal logp with a squared-exponential covariance of a free length scale."""
    x, mu, t, log_ls = pt.vector("x"), pt.vector("mu"), pt.vector("t"), pt.scalar("log_ls")
    dist = (t[:, None] - t[None, :]) / pt.exp(log_ls)
    cov = pt.exp(-0.5 * dist**2) + 0.1 * pt.eye(t.shape[0])
    chol = pt.linalg.cholesky(cov)
    z = pt.linalg.solve_triangular(chol, x - mu, lower=True)
    n = x.shape[0].astype("float64")
    logp = -0.5 * pt.sum(z**2) - pt.sum(pt.log(pt.diag(chol))) - 0.5 * n * np.log(2 * np.pi)
    return [x, mu, t, log_ls], logp


def _gp_marginal_loglik():
    """A GP marginal likelihood: cho_solve for alpha, log|K| from slogdet."""
    y, t, log_noise = pt.vector("y"), pt.vector("t"), pt.scalar("log_noise")
    cov = pt.exp(-0.5 * (t[:, None] - t[None, :]) ** 2) + pt.exp(log_noise) * pt.eye(t.shape[0])
    alpha = pt.linalg.cho_solve((pt.linalg.cholesky(cov), True), y)
    _, logdet = pt.linalg.slogdet(cov)
    return [y, t, log_noise], -0.5 * pt.dot(y, alpha) - 0.5 * logdet


@pytest.mark.parametrize("graph", [_mvnormal_logp, _gp_marginal_loglik])
def test_pymc_style_logp_converts_from_the_compiled_function(graph):
    inputs, logp = graph()
    fn = pytensor.function(inputs, logp)
    model = converter.function_to_onnx(fn)
    assert "Loop" in _ops(model)
    rng = np.random.default_rng(7)
    feeds = {"x": rng.normal(size=6), "mu": rng.normal(size=6), "y": rng.normal(size=6),
             "t": np.linspace(0.0, 3.0, 6), "log_ls": np.array(0.2), "log_noise": np.array(-1.0)}
    expected = fn(*(feeds[v.name] for v in inputs))
    for outputs in _run_both(model, feeds):
        np.testing.assert_allclose(outputs[0], expected, rtol=1e-10)


def test_non_positive_definite_cholesky_is_all_nan_like_pytensor():
    a = pt.matrix("a")
    model = converter.to_onnx([a], [pt.linalg.cholesky(a)])
    feeds = {"a": np.array([[4.0, 2.0], [2.0, -1.0]])}
    for (out,) in _run_both(model, feeds):
        assert np.isnan(out).all()


@pytest.mark.parametrize(("dtype", "det_nodes"), [("float32", 1), ("float64", 0)])
def test_det_uses_onnx_det_except_on_float64(dtype, det_nodes):
    a = pt.matrix("a", dtype=dtype)
    model = converter.to_onnx([a], [pt.linalg.det(a)])
    assert sum(n.op_type == "Det" for n in model.graph.node) == det_nodes
    feeds = {"a": np.array([[0.0, 2.0], [3.0, 4.0]], dtype)}
    for (out,) in _run_both(model, feeds):
        np.testing.assert_allclose(out, -6.0, rtol=1e-6)


@pytest.mark.parametrize("opset", [MIN_OPSET, None])
def test_float_einsum_is_one_onnx_einsum(opset):
    a, b = pt.matrix("a"), pt.matrix("b")
    model = converter.to_onnx([a, b], [pt.einsum("ij,jk->ik", a, b)], opset=opset)
    assert "Einsum" in _ops(model)


def test_integer_einsum_keeps_pytensor_inner_graph():
    a = pt.matrix("a", dtype="int8")
    out = pt.einsum("ij->", a)
    assert out.dtype == "int64"
    model = converter.to_onnx([a], [out])
    assert "Einsum" not in _ops(model)


def test_gemv_ignores_y_when_beta_is_zero():
    f32 = "float32"
    y, a, x = pt.vector("y", dtype=f32), pt.matrix("a", dtype=f32), pt.vector("x", dtype=f32)
    alpha, beta = pt.scalar("alpha", dtype=f32), pt.scalar("beta", dtype=f32)
    model = converter.to_onnx([y, alpha, a, x, beta], [gemv_no_inplace(y, alpha, a, x, beta)],
                              opset=MIN_OPSET)
    f32 = np.float32
    feeds = [np.array([np.nan], f32), f32(2), np.ones((1, 2), f32), np.ones(2, f32), f32(0)]
    names = [i.name for i in model.graph.input]
    (out,) = ReferenceEvaluator(model).run(None, dict(zip(names, feeds, strict=True)))
    np.testing.assert_array_equal(out, np.array([4.0], f32))


@pytest.mark.parametrize("solver", [
    lambda a, b: pt.linalg.solve(a, b),
    lambda a, b: pt.linalg.solve(a, b, assume_a="pos", lower=True),
    lambda a, b: pt.linalg.cho_solve((pt.linalg.cholesky(a), True), b),
    lambda a, b: pt.linalg.solve_triangular(a, b, lower=False, trans=1),
])
def test_solvers_broadcast_a_matrix_against_a_batch_of_right_hand_sides(solver):
    a, b = pt.matrix("a"), pt.tensor3("b")
    out = solver(a, b)
    rng = np.random.default_rng(3)
    m = rng.uniform(-1, 1, (3, 3))
    feeds = {"a": m @ m.T + 3 * np.eye(3), "b": rng.uniform(-1, 1, (2, 3, 2))}
    expected = pytensor.function([a, b], out, mode="FAST_COMPILE")(feeds["a"], feeds["b"])
    for (got,) in _run_both(converter.to_onnx([a, b], [out]), feeds):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
