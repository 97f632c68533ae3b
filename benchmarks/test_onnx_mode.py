"""The ONNX mode's call beside (a) the bare ``InferenceSession.run`` of the very model it runs,
(b) PyTensor's C VM mode and (c) the NUMBA mode, on a 10-element elementwise function, a PyMC
logp+dlogp (where PyMC is installed) and a 10^6-element function; and a NUTS draw in the ONNX
mode beside one in the default mode. ONNX Runtime runs on one thread, as BLAS does here
(benchmarks/conftest.py)."""

from __future__ import annotations

import functools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode
from pytensor.graph.rewriting.db import RewriteDatabaseQuery

import converter
from benchmarks import pymc_models

MODE = converter.onnx_mode(threads=1)
#: the mode's call; the bare public session call of its model; the call the mode makes of
#: that session (what is left is PyTensor's Function); the NUMBA and C VM modes
HOWS = ("mode", "bare", "session", "numba", "cvm")
MODES = {"mode": MODE, "numba": "NUMBA", "cvm": Mode(linker="cvm", optimizer="fast_run")}


def elementwise(size: int):
    x = pt.vector("x")
    return [x], [pt.exp(x) * 2.0 + pt.sin(x)], (np.linspace(-1.0, 1.0, size),)


def pymc_logp_dlogp(size: int):
    model = pymc_models.MODELS["linear_regression"](size)
    built = pymc_models.compiled("linear_regression", size)
    return model, built.point


@functools.lru_cache(maxsize=8)
def compiled(case: str, how: str):
    """The case's function in mode ``how`` (the mode's own for ``bare``) and its inputs."""
    mode = MODES["mode" if how in ("bare", "session") else how]
    if case == "pymc":
        model, point = pymc_logp_dlogp(40)
        fn = model.compile_fn([model.logp(), model.dlogp()], inputs=model.value_vars,
                              point_fn=False, mode=mode)
        return fn, point
    inputs, outputs, values = elementwise(10 if case == "tiny" else 1_000_000)
    return pytensor.function(inputs, outputs, mode=mode), values


CASES = ["tiny", "large", *(["pymc"] if pymc_models.pm is not None else [])]


@pytest.mark.benchmark(max_time=0.5)
@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("case", CASES)
def test_mode_call(benchmark, case, how):
    fn, values = compiled(case, how)
    if how == "bare":
        session = fn.vm.jit_fn.session  # the session the mode built for this function
        feeds = dict(zip([i.name for i in session.get_inputs()], values, strict=True))
        run = functools.partial(session.run, None, feeds)
    elif how == "session":
        run = functools.partial(fn.vm.jit_fn, *values)
    else:
        run = functools.partial(fn, *values)
    want = compiled(case, "cvm")[0](*values)
    for i, (got, expected) in enumerate(zip(run(), want, strict=True)):
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12,
                                   err_msg=f"{how} output {i} of the {case} function")
    benchmark.group = f"onnx mode, {case}"
    benchmark.extra_info.update(kind="onnx-mode", case=case, how=how)
    benchmark(run)


@pytest.mark.skipif(pymc_models.pm is None, reason="PyMC is not installed")
@pytest.mark.parametrize("mode", ["ONNX", "default"])
def test_nuts_draw(benchmark, mode):
    """A NUTS run of 400 draws (200 tuning) of PyMC's linear regression, its logp+dlogp in
    ``mode``; each round compiles again as ``pm.sample`` does (Numba from its disk cache,
    filled by a first run)."""
    pm = pymc_models.pm
    model, _ = pymc_logp_dlogp(40)
    kwargs = {"compile_kwargs": {"mode": MODE}} if mode == "ONNX" else {}

    def sample():
        with model:
            pm.sample(draws=200, tune=200, chains=1, cores=1, random_seed=1,
                      progressbar=False, compute_convergence_checks=False, **kwargs)

    sample()  # fills Numba's disk cache
    benchmark.group = "NUTS draws, linear regression n=40"
    benchmark.extra_info.update(kind="nuts", how=mode)
    benchmark.pedantic(sample, rounds=3, iterations=1)


class _LinkerWithBlas(converter.link.linker.ONNXLinker):
    """The ONNX linker with PyTensor's BLAS rewrites allowed, to measure leaving them out."""

    incompatible_rewrites = tuple(r for r in converter.link.linker.ONNXLinker.incompatible_rewrites
                                  if r != "BlasOpt")


#: the contested rewrite choices: the mode's own (fusion kept), without PyTensor's fusion,
#: with its BLAS forms
REWRITE_CHOICES = {
    "chosen": lambda: MODE,
    "no-fusion": lambda: Mode(linker=converter.link.linker.ONNXLinker(MODE.linker.options),
                              optimizer=RewriteDatabaseQuery(include=["fast_run"],
                                                             exclude=["fusion"])),
    "blas": lambda: Mode(linker=_LinkerWithBlas(MODE.linker.options), optimizer=mode_query()),
}


def mode_query():
    return converter.link.mode.QUERY


def chain(size: int):
    """Elementwise chains and a matrix product, where fusion and BLAS forms differ most."""
    x, w = pt.matrix("x"), pt.matrix("w")
    hidden = pt.tanh(pt.dot(x, w) * 0.5 + 1.0)
    out = (pt.log1p(pt.exp(hidden)) - hidden ** 2 / 2.0).sum(axis=1)
    rng = np.random.default_rng(0)
    return [x, w], [out], (rng.normal(size=(size, 8)), rng.normal(size=(8, 8)))


@pytest.mark.benchmark(max_time=0.5)
@pytest.mark.parametrize("rewrites", list(REWRITE_CHOICES))
@pytest.mark.parametrize("case", ["chain", *(["pymc"] if pymc_models.pm is not None else [])])
def test_rewrite_choice(benchmark, case, rewrites):
    mode = REWRITE_CHOICES[rewrites]()
    if case == "pymc":
        model, values = pymc_logp_dlogp(40)
        fn = model.compile_fn([model.logp(), model.dlogp()], inputs=model.value_vars,
                              point_fn=False, mode=mode)
    else:
        inputs, outputs, values = chain(40)
        fn = pytensor.function(inputs, outputs, mode=mode)
    nodes = len(fn.vm.jit_fn.model.graph.node)
    benchmark.group = f"onnx mode rewrites, {case}"
    benchmark.extra_info.update(kind="onnx-rewrites", case=case, rewrites=rewrites, nodes=nodes)
    benchmark(functools.partial(fn, *values))
