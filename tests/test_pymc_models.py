"""PyMC models' compiled logp and dlogp, exported with converter.function_to_onnx, must give
ONNX Runtime the numbers PyTensor gives, at the initial point and at random points of the
unconstrained space.

Each function is compiled by PyMC three times: with the C linker (PyTensor 2.x's default),
with the Python linker, whose special functions are scipy's, and in PyTensor's default mode
(Numba from PyTensor 3 on, with the rewrites that mode adds). PyMC 6.4 needs PyTensor 3.3
and Python >= 3.12, where the project's test extra installs it; PyMC 5.28 pins PyTensor 2.38
(the ``pytensor-min`` tox env). On Python 3.11 (PyTensor 3.0.7) no PyMC release fits, and the
module skips.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
import pytensor
import pytest
from filelock import FileLock
from packaging.specifiers import SpecifierSet
from pytensor.compile.mode import Mode

import converter
from conformance import versions as releases
from conformance.core.oracle import assert_agree
from conformance.registry import DEFAULT_TOL

# PyMC imports ArviZ, whose first import of a day writes a stamp file through one fixed
# temporary name (ArviZ 0.23): two xdist workers collecting this module at the same moment
# race on it, and the loser's import raises FileNotFoundError (seen on the PyTensor 2.38
# line). One import at a time, across processes.
with FileLock(os.path.join(tempfile.gettempdir(), "pytensor-onnx-conformance-pymc.lock")):
    pm = pytest.importorskip(
        "pymc", reason="PyMC is not installed: PyMC 6 needs Python >= 3.12 and PyTensor 3.3, "
                       "PyMC 5 pins PyTensor 2.38 (`tox -e pytensor-min`)"
    )

MODES = {
    "pytensor-c": Mode(linker="cvm", optimizer="fast_run"),
    "pytensor-py": Mode(linker="py", optimizer="fast_run"),
    # what a PyMC user gets: NUMBA on PyTensor 3, the C linker's FAST_RUN on 2.x
    "pytensor-default": pytensor.compile.mode.get_default_mode(),
}
N_RANDOM_POINTS = 3
JITTER = 0.5
TOL = DEFAULT_TOL["float64"]
# Verified on 2.38.3; the C code is unchanged in 3.0.7.
C_PSI_INACCURATE = SpecifierSet("<3.1")
# the modes that compute psi with PyTensor's C code: the default one too before PyTensor 3
C_PSI_MODES = {"pytensor-c"} | ({"pytensor-default"} if releases.holds("pytensor<3") else set())


def studentt_free_nu():
    rng = np.random.default_rng(0)
    with pm.Model() as model:
        nu = pm.Gamma("nu", alpha=2.0, beta=0.1)
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.StudentT("y", nu=nu, mu=mu, sigma=sigma,
                    observed=0.3 + 1.5 * rng.standard_t(4.0, size=15))
    return model


def gamma_and_beta_priors():
    rng = np.random.default_rng(1)
    with pm.Model() as model:
        p = pm.Beta("p", alpha=2.0, beta=3.0)
        shape = pm.Gamma("shape", alpha=2.0, beta=1.0)
        rate = pm.Gamma("rate", mu=1.5, sigma=0.7)
        pm.Binomial("k", n=10, p=p, observed=rng.binomial(10, 0.3, size=8))
        pm.Gamma("t", alpha=shape, beta=rate, observed=rng.gamma(2.0, 0.5, size=12))
    return model


def negative_binomial():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 2))
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0, shape=2)
        alpha = pm.Exponential("alpha", 1.0)
        pm.NegativeBinomial("y", mu=pm.math.exp(X @ w + 2.0), alpha=alpha,
                            observed=rng.negative_binomial(3, 0.2, size=60))
    return model


def dirichlet_free_concentration():
    rng = np.random.default_rng(3)
    with pm.Model() as model:
        a = pm.Gamma("a", alpha=3.0, beta=1.2, shape=3)
        theta = pm.Dirichlet("theta", a=a)
        pm.Multinomial("k", n=30, p=theta, observed=rng.multinomial(30, [0.2, 0.5, 0.3], size=4))
        pm.Dirichlet("q", a=a, observed=rng.dirichlet([2.5, 2.5, 2.5], size=40))
    return model


def mvnormal_lkj_cholesky():
    rng = np.random.default_rng(4)
    cov = np.eye(3) + 0.5
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov("chol", n=3, eta=2.0, compute_corr=True,
                                       sd_dist=pm.Exponential.dist(1.0, shape=3))
        mu = pm.Normal("mu", 0.0, 2.0, shape=3)
        pm.MvNormal("y", mu=mu, chol=chol,
                    observed=rng.multivariate_normal([0.0, 1.0, -1.0], cov, size=10))
    return model


def marginal_gp():
    rng = np.random.default_rng(5)
    X = np.linspace(0.0, 5.0, 8)[:, None]
    with pm.Model() as model:
        ls = pm.Gamma("ls", alpha=2.0, beta=1.0)
        eta = pm.HalfNormal("eta", 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ls=ls))
        gp.marginal_likelihood("y", X=X, y=np.sin(X[:, 0]) + 0.1 * rng.normal(size=8),
                               sigma=sigma)
    return model


def garch11():
    """PyMC's GARCH(1,1): its log-density runs the volatility recursion in one scan and its
    gradient adds the backward scan."""
    rng = np.random.default_rng(6)
    returns, vol = np.empty(30), 0.3
    for t in range(30):
        returns[t] = rng.normal(0.0, vol)
        vol = np.sqrt(0.05 + 0.15 * returns[t] ** 2 + 0.7 * vol**2)
    with pm.Model() as model:
        omega = pm.HalfNormal("omega", 0.2)
        alpha_1 = pm.Beta("alpha_1", 2.0, 6.0)
        beta_1 = pm.Beta("beta_1", 6.0, 2.0)
        initial_vol = pm.HalfNormal("initial_vol", 0.5)
        pm.GARCH11("r", omega=omega, alpha_1=alpha_1, beta_1=beta_1, initial_vol=initial_vol,
                   observed=returns)
    return model


def _series(seed: int, n: int = 25) -> np.ndarray:
    """A local-level series: a random walk seen through noise."""
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.normal(0.0, 0.3, size=n)) + rng.normal(0.0, 0.5, size=n)


def exponential_smoothing():
    """One-step forecasts by simple exponential smoothing, written with pytensor.scan."""
    y = _series(7)
    with pm.Model() as model:
        alpha = pm.Beta("alpha", 2.0, 2.0)
        level0 = pm.Normal("level0", y[0], 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        levels = pytensor.scan(lambda y_t, level, a: a * y_t + (1 - a) * level,
                               sequences=[pytensor.tensor.as_tensor(y[:-1])],
                               outputs_info=[level0], non_sequences=[alpha],
                               return_updates=False)
        forecasts = pytensor.tensor.concatenate([level0[None], levels[:-1]])
        pm.Normal("y", mu=forecasts, sigma=sigma, observed=y[1:])
    return model


def local_level_kalman():
    """The exact log-likelihood of a local-level model by a Kalman filter: a scan carrying
    the filtered level and its variance and emitting each step's log-density."""
    pt = pytensor.tensor
    y = _series(8)

    def step(y_t, level, var, obs_var, level_var):
        f = var + obs_var
        v = y_t - level
        gain = var / f
        ll = -0.5 * (pt.log(2 * np.pi * f) + v**2 / f)
        return level + gain * v, var * (1 - gain) + level_var, ll

    with pm.Model() as model:
        sigma_obs = pm.HalfNormal("sigma_obs", 1.0)
        sigma_level = pm.HalfNormal("sigma_level", 0.5)
        _, _, lls = pytensor.scan(step, sequences=[pt.as_tensor(y)],
                                  outputs_info=[np.float64(0.0), np.float64(10.0), None],
                                  non_sequences=[sigma_obs**2, sigma_level**2],
                                  return_updates=False)
        pm.Potential("loglik", lls.sum())
    return model


@dataclass(frozen=True)
class PymcModel:
    build: Callable
    #: the gradient evaluates Psi (digamma): of a free Gamma shape, StudentT nu, NegativeBinomial
    #: alpha or Dirichlet concentration
    psi_in_gradient: bool
    #: the compiled function holds a Scan (checked, so that the export really converts one)
    scans: bool = False


MODELS = [
    PymcModel(studentt_free_nu, psi_in_gradient=True),
    PymcModel(gamma_and_beta_priors, psi_in_gradient=True),
    PymcModel(negative_binomial, psi_in_gradient=True),
    PymcModel(dirichlet_free_concentration, psi_in_gradient=True),
    PymcModel(mvnormal_lkj_cholesky, psi_in_gradient=False),
    PymcModel(marginal_gp, psi_in_gradient=False),
    PymcModel(garch11, psi_in_gradient=False, scans=True),
    PymcModel(exponential_smoothing, psi_in_gradient=False, scans=True),
    PymcModel(local_level_kalman, psi_in_gradient=False, scans=True),
]

# At these seeds and points the C gradients are 2.5 to 500 tolerances off (the Dirichlet
# data are drawn at the prior's concentration so that the gradient is small next to the error).
C_PSI_XFAIL = pytest.mark.xfail(
    pytensor.__version__ in C_PSI_INACCURATE, strict=True, raises=AssertionError,
    reason="PyTensor's C Psi (AS 103 series with 10-digit constants) is off by up to ~1.5e-10 "
           "absolute, e.g. psi(1) = -0.57721566499618; ONNX Runtime matches the Python "
           "linker (scipy) within float64 tolerance",
)


def cases():
    for m in MODELS:
        for kind in ("logp", "dlogp"):
            for mode in MODES:
                psi_off = mode in C_PSI_MODES and kind == "dlogp" and m.psi_in_gradient
                yield pytest.param(m, kind, mode, marks=[C_PSI_XFAIL] if psi_off else [],
                                   id=f"{m.build.__name__}-{kind}-{mode}")


def points(model, seed: int = 0):
    """The initial point, then ``N_RANDOM_POINTS`` normal jitters of it in the unconstrained
    space (every value variable is unconstrained there)."""
    start = model.initial_point()
    yield "initial point", start
    rng = np.random.default_rng(seed)
    for k in range(N_RANDOM_POINTS):
        yield f"random point {k}", {
            name: np.asarray(v + rng.normal(scale=JITTER, size=np.shape(v)), dtype=v.dtype)
            for name, v in start.items()
        }


@pytest.mark.parametrize(("model", "kind", "mode"), list(cases()))
def test_exported_pymc_function_matches_pytensor(model, kind, mode):
    pymc_model = model.build()
    compile_fn = pymc_model.compile_logp if kind == "logp" else pymc_model.compile_dlogp
    point_fn = compile_fn(mode=MODES[mode])
    if model.scans:
        ops = {type(n.op).__name__ for n in point_fn.f.maker.fgraph.apply_nodes}
        assert "Scan" in ops, f"{model.build.__name__} {kind} compiled without a Scan: {ops}"
    onnx_model = converter.function_to_onnx(point_fn.f)
    onnx.checker.check_model(onnx_model, full_check=True)
    session = ort.InferenceSession(onnx_model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    input_names = [i.name for i in onnx_model.graph.input]
    for where, point in points(pymc_model):
        expected = [np.asarray(point_fn(point))]
        got = session.run(None, {name: point[name] for name in input_names})
        assert_agree(expected, got, TOL, backend="onnxruntime", reference=mode,
                     case=f"{model.build.__name__} {kind} at the {where}")


def onnx_cases():
    for m in MODELS:
        for kind in ("logp", "dlogp"):
            yield pytest.param(m, kind, id=f"{m.build.__name__}-{kind}")


@pytest.mark.parametrize(("model", "kind"), list(onnx_cases()))
def test_pymc_functions_compile_and_agree_in_the_onnx_mode(model, kind):
    """``model.compile_logp(mode="ONNX")`` (and dlogp) give the Python linker's values."""
    pymc_model = model.build()
    compile_fn = pymc_model.compile_logp if kind == "logp" else pymc_model.compile_dlogp
    in_onnx, reference = compile_fn(mode="ONNX"), compile_fn(mode=MODES["pytensor-py"])
    for where, point in points(pymc_model):
        assert_agree([np.asarray(reference(point))], [np.asarray(in_onnx(point))], TOL,
                     backend="pytensor-onnx", reference="pytensor-py",
                     case=f"{model.build.__name__} {kind} at the {where}")


def test_nuts_in_the_onnx_mode_samples_the_default_modes_posterior():
    """pm.sample(compile_kwargs={"mode": "ONNX"}) against the default mode, same seed: a
    wrong log-density or gradient moves the posterior by many tenths of its spread, where
    the two samplers' draws differ only by rounding."""
    rng = np.random.default_rng(0)
    observed = rng.normal(1.0, 2.0, size=50)
    with pm.Model() as normal:
        mu = pm.Normal("mu", 0, 10)
        sigma = pm.HalfNormal("sigma", 5)
        pm.Normal("y", mu, sigma, observed=observed)
    moments = {}
    for mode in ("ONNX", None):
        with normal:
            kwargs = {"compile_kwargs": {"mode": mode}} if mode else {}
            posterior = pm.sample(draws=400, tune=400, chains=1, cores=1, random_seed=1,
                                  progressbar=False, compute_convergence_checks=False,
                                  **kwargs).posterior
        moments[mode] = {v: (float(posterior[v].mean()), float(posterior[v].std()))
                         for v in ("mu", "sigma")}
    for var, (mean, sd) in moments[None].items():
        got_mean, got_sd = moments["ONNX"][var]
        assert abs(got_mean - mean) <= 0.1 * sd, (
            f"pytensor-onnx: posterior mean of {var} {got_mean:.4f} but the default mode's "
            f"{mean:.4f} (more than 0.1 posterior sd {sd:.4f} apart)")
        assert abs(got_sd - sd) <= 0.1 * sd, (
            f"pytensor-onnx: posterior sd of {var} {got_sd:.4f} but the default mode's {sd:.4f}")
