"""PyTensor's Python linker, without rewrites: the semantic reference every other backend is
judged against (inner graphs of OpFromGraph and Scan included, see
conformance.compile.innergraphs)."""

from __future__ import annotations

import warnings

import numpy as np

from conformance.backends.base import Backend, Graph, Runner


class PyTensorBackend(Backend):
    """``pytensor.function`` with a given linker and rewrite set, one function per graph."""

    def __init__(self, name: str, linker: str, optimizer: str | None):
        self.name, self.linker, self.optimizer = name, linker, optimizer

    def prepare(self, graph: Graph, opset: int) -> Runner:
        fn = graph.function(self.linker, self.optimizer)

        def run(values):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                return [np.array(o, copy=True) for o in fn(*values)]

        return run


REFERENCE = PyTensorBackend("pytensor-py", linker="py", optimizer=None)
