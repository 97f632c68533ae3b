"""PyMC-style log-densities and their gradients, built with PyTensor alone (so they run on
PyTensor 3, which PyMC does not support yet): what a sampler evaluates thousands of times.

Each model is written as PyMC's logp would produce it: the free parameters live in the
unconstrained space (a positive parameter as its log, with the log-Jacobian added), observed
data are constants of the graph, and the outputs are the joint log-density and its gradient
with respect to every free parameter. ``build(n)`` makes a model with ``n`` observations
from a fixed seed; the same ``n`` always gives the same graph and data.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.special import betaln

LOG_2PI = float(np.log(2 * np.pi))
#: observation counts: per-call cost, then throughput
SIZES = (40, 100_000)


@dataclass(frozen=True)
class Built:
    """A model's graph at one data size: free inputs, ``[logp, *gradients]``, and a point
    of the unconstrained space to evaluate them at (one array per input)."""

    inputs: list
    outputs: list
    point: list[np.ndarray]


@dataclass(frozen=True)
class Model:
    name: str
    build: Callable[[int], Built]
    #: special functions the log-density or its gradient evaluates (each costs many ONNX
    #: nodes until the special-function rules are vectorized)
    special: tuple[str, ...] = ()
    #: observation counts it is timed at (a scan's steps run one after the other)
    sizes: tuple[int, ...] = SIZES


def _normal(x, mu, sigma):
    return -0.5 * ((x - mu) / sigma) ** 2 - pt.log(sigma) - 0.5 * LOG_2PI


def _log_positive(name: str):
    """A positive parameter as PyMC samples it: its log, and the log-Jacobian of exp."""
    log_value = pt.scalar(f"{name}_log__", dtype="float64")
    return log_value, pt.exp(log_value), log_value


def _gamma(x, alpha, beta):
    return (alpha - 1) * pt.log(x) - beta * x + alpha * pt.log(beta) - pt.gammaln(alpha)


def _finish(inputs, logp, point) -> Built:
    logp = pt.as_tensor_variable(logp)
    grads = pytensor.grad(logp, inputs)
    return Built(list(inputs), [logp, *grads], [np.asarray(v, dtype="float64") for v in point])


def _design(rng, n: int, k: int) -> np.ndarray:
    return rng.normal(size=(n, k))


def linear_regression_data(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = _design(rng, n, 3)
    return X, X @ np.array([1.0, -2.0, 0.5]) + 0.3 + rng.normal(scale=0.7, size=n)


def linear_regression(n: int) -> Built:
    X, y = linear_regression_data(n)
    beta, alpha = pt.vector("beta", dtype="float64"), pt.scalar("alpha", dtype="float64")
    s_log, sigma, jac = _log_positive("sigma")
    logp = (pt.sum(_normal(beta, 0.0, 10.0)) + _normal(alpha, 0.0, 10.0)
            + np.log(2.0) + _normal(sigma, 0.0, 5.0) + jac
            + pt.sum(_normal(pt.constant(y), pt.dot(X, beta) + alpha, sigma)))
    return _finish([beta, alpha, s_log], logp, [[0.9, -1.5, 0.4], 0.2, -0.3])


def logistic_regression(n: int) -> Built:
    rng = np.random.default_rng(1)
    X = _design(rng, n, 4)
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ np.array([1.0, -1.0, 0.5, 0.0]))))).astype(float)
    w, b = pt.vector("w", dtype="float64"), pt.scalar("b", dtype="float64")
    eta = pt.dot(X, w) + b
    logp = (pt.sum(_normal(w, 0.0, 2.5)) + _normal(b, 0.0, 2.5)
            + pt.sum(pt.constant(y) * eta - pt.softplus(eta)))
    return _finish([w, b], logp, [[0.8, -0.7, 0.3, 0.1], -0.2])


def eight_schools(n: int) -> Built:
    """Non-centred hierarchical normal: ``n`` observations spread over 8 schools."""
    rng = np.random.default_rng(2)
    school = np.arange(n) % 8
    sigma = rng.uniform(5.0, 18.0, size=n)
    y = rng.normal(4.0 + 3.0 * rng.normal(size=8)[school], sigma)
    mu = pt.scalar("mu", dtype="float64")
    t_log, tau, jac = _log_positive("tau")
    theta_tilde = pt.vector("theta_tilde", dtype="float64")
    theta = mu + tau * theta_tilde[pt.constant(school)]
    # HalfCauchy(5) prior on tau
    logp = (_normal(mu, 0.0, 5.0) + np.log(2 / (np.pi * 5.0)) - pt.log1p((tau / 5.0) ** 2) + jac
            + pt.sum(_normal(theta_tilde, 0.0, 1.0))
            + pt.sum(_normal(pt.constant(y), theta, pt.constant(sigma))))
    return _finish([mu, t_log, theta_tilde], logp,
                   [1.5, 0.8, np.linspace(-1.0, 1.0, 8)])


def student_t_regression(n: int) -> Built:
    """Robust regression with a free degrees-of-freedom parameter (gammaln; psi in the
    gradient)."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-2.0, 2.0, size=n)
    y = 0.5 + 1.2 * x + 0.8 * rng.standard_t(3.0, size=n)
    a, b = pt.scalar("a", dtype="float64"), pt.scalar("b", dtype="float64")
    s_log, sigma, s_jac = _log_positive("sigma")
    nu_log, nu, nu_jac = _log_positive("nu")
    z = (pt.constant(y) - (a + b * pt.constant(x))) / sigma
    loglik = (pt.gammaln((nu + 1) / 2) - pt.gammaln(nu / 2) - 0.5 * pt.log(np.pi * nu)
              - pt.log(sigma) - (nu + 1) / 2 * pt.log1p(z**2 / nu))
    logp = (_normal(a, 0.0, 5.0) + _normal(b, 0.0, 5.0)
            + np.log(2.0) + _normal(sigma, 0.0, 2.0) + s_jac
            + _gamma(nu, 2.0, 0.1) + nu_jac + pt.sum(loglik))
    return _finish([a, b, s_log, nu_log], logp, [0.3, 1.0, -0.1, 1.6])


def gamma_beta_binomial(n: int) -> Built:
    """Gamma waiting times with free shape and rate, and Beta-Binomial counts with free
    concentrations (gammaln and betaln; psi in the gradient)."""
    rng = np.random.default_rng(4)
    t = rng.gamma(2.0, 0.5, size=n)
    trials = 12
    k = rng.binomial(trials, rng.beta(2.0, 5.0, size=n))
    log_choose = (pt.gammaln(trials + 1.0) - pt.gammaln(pt.constant(k + 1.0))
                  - pt.gammaln(pt.constant(trials - k + 1.0)))
    parts = [_log_positive(name) for name in ("shape", "rate", "a", "b")]
    (shape, rate, a, b) = (p[1] for p in parts)
    kc = pt.constant(k.astype("float64"))
    logp = (_gamma(shape, 2.0, 1.0) + _gamma(rate, 2.0, 1.0)
            + _gamma(a, 2.0, 0.5) + _gamma(b, 2.0, 0.5) + sum(p[2] for p in parts)
            + pt.sum(_gamma(pt.constant(t), shape, rate))
            + pt.sum(log_choose + betaln(kc + a, trials - kc + b) - betaln(a, b)))
    return _finish([p[0] for p in parts], logp, [0.6, 0.7, 0.5, 1.4])


def negative_binomial_glm(n: int) -> Built:
    """Counts with a log link and a free dispersion (gammaln; psi in the gradient)."""
    rng = np.random.default_rng(5)
    X = _design(rng, n, 2)
    mu_true = np.exp(X @ np.array([0.4, -0.3]) + 2.0)
    y = rng.negative_binomial(3.0, 3.0 / (3.0 + mu_true)).astype("float64")
    w, b = pt.vector("w", dtype="float64"), pt.scalar("b", dtype="float64")
    alpha_log, alpha, jac = _log_positive("alpha")
    eta = pt.dot(X, w) + b
    mu = pt.exp(eta)
    yc = pt.constant(y)
    loglik = (pt.gammaln(yc + alpha) - pt.gammaln(alpha) - pt.gammaln(yc + 1.0)
              + alpha * (pt.log(alpha) - pt.log(alpha + mu)) + yc * (eta - pt.log(alpha + mu)))
    logp = (pt.sum(_normal(w, 0.0, 1.0)) + _normal(b, 0.0, 2.0)
            - alpha + jac + pt.sum(loglik))  # Exponential(1) prior on alpha: -alpha
    return _finish([w, b, alpha_log], logp, [[0.3, -0.2], 1.8, 0.9])


def exponential_smoothing(n: int) -> Built:
    """Simple exponential smoothing: each observation is normal around the level before it,
    and the level moves toward it by a free fraction alpha, computed by ``pytensor.scan``;
    its gradient is a backward scan. A Loop's steps run one after the other, so this model is
    timed at 10,000 observations rather than 100,000 (the per-step cost shows either way)."""
    rng = np.random.default_rng(6)
    y = np.cumsum(rng.normal(scale=0.3, size=n)) + rng.normal(scale=0.5, size=n)
    a_logit = pt.scalar("alpha_logodds__", dtype="float64")
    alpha = pt.sigmoid(a_logit)
    s_log, sigma, s_jac = _log_positive("sigma")
    level0 = pt.scalar("level0", dtype="float64")
    yc = pt.constant(y)
    levels = pytensor.scan(lambda obs, level: level + alpha * (obs - level),
                           sequences=[yc], outputs_info=[level0], return_updates=False)
    before = pt.concatenate([level0[None], levels[:-1]])
    logp = (_normal(level0, 0.0, 5.0) + pt.log(alpha) + pt.log1p(-alpha)  # Uniform prior
            + np.log(2.0) + _normal(sigma, 0.0, 2.0) + s_jac
            + pt.sum(_normal(yc, before, sigma)))
    return _finish([a_logit, s_log, level0], logp, [0.2, -0.5, 0.1])


MODELS = (
    Model("linear_regression", linear_regression),
    Model("logistic_regression", logistic_regression),
    Model("eight_schools", eight_schools),
    Model("student_t_regression", student_t_regression, special=("gammaln", "psi")),
    Model("gamma_beta_binomial", gamma_beta_binomial, special=("gammaln", "betaln", "psi")),
    Model("negative_binomial_glm", negative_binomial_glm, special=("gammaln", "psi")),
    Model("exponential_smoothing", exponential_smoothing, sizes=(SIZES[0], 10_000)),
)
BY_NAME = {m.name: m for m in MODELS}


@functools.lru_cache(maxsize=4)
def compiled(name: str, n: int):
    """``(built, fn)``: the model and its PyTensor function in the default mode (Numba on
    PyTensor 3, C on 2.38), compiled once per process."""
    built = BY_NAME[name].build(n)
    return built, pytensor.function(built.inputs, built.outputs)


def pytensor_nodes(fn) -> int:
    """Apply nodes of a compiled function's optimized graph (Composites count as one)."""
    return len(fn.maker.fgraph.apply_nodes)
