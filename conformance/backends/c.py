"""PyTensor's C implementations (the ``cvm`` linker), without and with the default rewrites.

Each cell's canonical layout is judged through one batch of C code per row (cbatch, cnodes):
a module per op signature would cost thousands of g++ runs. ``--c-layouts all`` compiles every
drawn layout on its own instead (``prepare``)."""

from __future__ import annotations

from conformance.backends.cbatch import Batch
from conformance.backends.python import PyTensorBackend
from conformance.compile.innergraphs import inlined


class CBackend(PyTensorBackend):
    """The C linker; judged on each cell's canonical layout, batched per row."""

    canonical_only = batched = True

    def __init__(self, name: str, optimizer: str | None, unrewritten: str | None = None):
        super().__init__(name, linker="cvm", optimizer=optimizer)
        self.unrewritten = unrewritten

    def same_function(self, graph) -> bool:
        """Also no inner graph: unrewritten, C runs inner graphs without their rewrites."""
        return not graph.has_inner_graphs and super().same_function(graph)

    def batch(self, members: list) -> Batch:
        return Batch(members, rewritten=bool(self.optimizer))

    def compiled_graph(self, graph) -> tuple[list, list]:
        """What the batch compiles: the graph with its OpFromGraphs inlined (their inner
        graphs rewritten as their own functions would be, when the backend rewrites), so
        the whole row fits in few modules."""
        if self.optimizer is None:
            return inlined(graph.inputs, graph.outputs)
        return graph.rewritten_inlined(self.optimizer)
