"""Models written in PyMC itself (where PyMC is installed: PyMC 6 on PyTensor 3.3, PyMC 5 on
2.38): the joint log-density and its gradient as a sampler asks for them, compiled by PyMC
in PyTensor's default mode and exported with ``converter.function_to_onnx``.

``benchmarks/models.py`` writes the same kinds of model with PyTensor alone, so that they run
on every release line; these check that what PyMC itself builds exports and runs as fast."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

try:  # an optional dependency of the benchmarks, not a PyTensor release difference
    import pymc as pm
except ImportError:  # PyMC is not installed on this line (Python 3.11 with PyTensor 3.0.7)
    pm = None

SIZES = (40, 100_000)


@dataclass(frozen=True)
class Compiled:
    fn: object  # the pytensor Function PyMC compiled: outputs logp and its gradient
    point: tuple  # the unconstrained values, in the function's input order


def linear_regression(n: int):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = X @ np.array([0.5, -1.0, 2.0]) + rng.normal(scale=0.7, size=n)
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 5.0, shape=3)
        b = pm.Normal("b", 0.0, 5.0)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("y", X @ w + b, sigma, observed=y)
    return model


def logistic_regression(n: int):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 3))
    y = rng.random(n) < 1 / (1 + np.exp(-(X @ np.array([1.0, -0.5, 0.25]))))
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 2.0, shape=3)
        pm.Bernoulli("y", logit_p=X @ w, observed=y.astype("int64"))
    return model


def hierarchical_groups(n: int):
    """Eight schools' structure (non-centred) with ``n`` observations over eight groups."""
    rng = np.random.default_rng(2)
    group = rng.integers(0, 8, size=n)
    y = rng.normal(loc=group * 0.5, scale=2.0)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta_raw = pm.Normal("theta_raw", 0.0, 1.0, shape=8)
        pm.Normal("y", mu + tau * theta_raw[group], 2.0, observed=y)
    return model


MODELS = {m.__name__: m for m in (linear_regression, logistic_regression, hierarchical_groups)}


@functools.lru_cache(maxsize=4)
def compiled(name: str, n: int) -> Compiled:
    """The model's logp and gradient in one function, compiled once per process by PyMC in
    PyTensor's default mode, and the initial point moved off its symmetric start."""
    model = MODELS[name](n)
    fn = model.compile_fn([model.logp(), model.dlogp()], inputs=model.value_vars,
                          point_fn=False)
    start = model.initial_point()
    rng = np.random.default_rng(3)
    point = tuple(np.asarray(start[v.name] + rng.normal(scale=0.3, size=np.shape(start[v.name])),
                             dtype=start[v.name].dtype) for v in model.value_vars)
    return Compiled(fn, point)
