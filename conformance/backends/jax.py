"""PyTensor's JAX backend (the ``JAX`` mode and the JAX linker without rewrites), when jax is
installed (``pip install .[jax]``); judged by ``tox -e jax`` and the nightly, never by the quick
start. Declared: float64 is computed only because the harness turns on ``jax_enable_x64``
before the first JAX computation (JAX's default is float32), and XLA's CPU kernels keep no
promise about the sign of zero."""

from __future__ import annotations

import importlib.util

from conformance.backends.base import Declined, Graph, Runner, Semantics
from conformance.backends.cnodes import call
from conformance.backends.python import PyTensorBackend

SEMANTICS = Semantics(signed_zeros=False, declines=frozenset(),
                      source="XLA does not keep the sign of zero; float64 needs jax_enable_x64, "
                             "which the harness sets")


def available() -> bool:
    return importlib.util.find_spec("jax") is not None


class JaxBackend(PyTensorBackend):
    """``pytensor.function`` with the JAX linker: one jitted function per graph."""

    semantics = SEMANTICS

    def __init__(self, name: str, optimizer: str | None):
        super().__init__(name, linker="jax", optimizer=optimizer)

    def prepare(self, graph: Graph, opset: int) -> Runner:
        if not available():
            raise Declined("jax is not installed (pip install .[jax])")
        import jax

        jax.config.update("jax_enable_x64", True)
        fn = graph.function(self.linker, self.optimizer)
        return lambda values: call(fn, values)


BACKENDS = (JaxBackend("pytensor-jax", optimizer=None),
            JaxBackend("pytensor-jax-opt", optimizer="fast_run"))
