"""Inner graphs (OpFromGraph, Scan) compiled the way their outer graph is.

An inner graph is compiled when its op first runs, in PyTensor's default mode unless the op
names another, and the outer function's mode does not reach it.
"""

from __future__ import annotations

import functools

from converter import compat


def without_inner_rewrites(outputs: list, linker: str) -> list:
    """``outputs`` recomputed with every inner graph (OpFromGraph, Scan) run by ``linker``
    without rewrites, as the outer graph is by the unoptimized backends.

    Left alone, those ops compile their inner graph in PyTensor's default mode (C linker, all
    rewrites) whatever the outer mode: the Python reference and the C backend would share one
    inner function, so they could never disagree there, and each layout of a padded or
    softmaxed input would cost C modules that judge nothing. The outer graph is cloned and
    its inner-graph ops are copies, so the graph other backends compile is untouched."""
    from copy import copy

    from pytensor.compile.builders import OpFromGraph
    from pytensor.compile.mode import Mode
    from pytensor.graph.basic import clone_get_equiv
    from pytensor.scan.op import Scan

    io_toposort = compat.lookup("io_toposort")
    from pytensor.link.vm import VMLinker

    mode = Mode(linker=linker, optimizer=None)
    # Scan runs a gradient's preallocated mit-mot outputs under a VM linker only; a VM of
    # Python thunks calls the same perform() methods as the Python linker
    mit_mot_mode = (Mode(linker=VMLinker(use_cloop=False, c_thunks=False), optimizer=None)
                    if linker == "py" else mode)

    def patch(nodes) -> None:
        for node in nodes:
            if isinstance(node.op, OpFromGraph | Scan):
                op = copy(node.op)
                inner = compat.mutable_fgraph(node.op.fgraph)
                patch(inner.toposort())
                op.fgraph = compat.like_inner(node.op.fgraph, inner)
                op._fn = None
                if isinstance(op, Scan):
                    op.mode = mit_mot_mode if op.info.n_mit_mot else mode
                else:
                    op.kwargs = {**op.kwargs, "mode": mode}
                    compat.link_inner_with(op, linker)
                node.op = op

    if not any(isinstance(n.op, OpFromGraph | Scan) for n in io_toposort([], outputs)):
        return outputs
    equiv = clone_get_equiv([], outputs, copy_inputs=False, copy_orphans=False)
    # an output that is a graph input stays itself (PyTensor clones root outputs)
    cloned = [o if o.owner is None else equiv[o] for o in outputs]
    patch(io_toposort([], cloned))
    return cloned


def _rewritten_inner(op) -> tuple[list, list]:
    """The inner graph of OpFromGraph ``op`` as its own compiled function rewrites it: the
    op's compile path (its mode's rewrites, and whatever the PyTensor release adds to them),
    stopped where the rewritten graph goes to the linker. Linking, even by the Python linker,
    would compile the function of each Scan in the graph with the C linker (a second for a
    reflect pad), for a graph that only gets inlined. From PyTensor 3.3 on, the outer
    rewrites have already baked the inner graph: it is taken as it is."""
    from copy import copy

    from pytensor.compile.mode import Mode, get_mode

    if compat.builds("inner_graph_baked_by_outer"):
        return _as_built(op)

    inner_mode = get_mode(op.kwargs.get("mode"))
    probe = copy(op)
    stop = Mode(linker=_stop_at_linker()(), optimizer=inner_mode.provided_optimizer)
    probe.kwargs = {**op.kwargs, "mode": stop}
    probe._fn = None
    try:
        probe.fn  # noqa: B018 - the property compiles, and the linker stops it
    except _Rewritten as done:
        return list(done.fgraph.inputs), list(done.fgraph.outputs)
    raise RuntimeError("pytensor.function linked the graph without handing it to the linker")


def rewritten_unlinked(inputs: list, outputs: list, optimizer,
                       linker: str) -> tuple[list, list] | None:
    """The graph ``pytensor.function(inputs, outputs, mode=Mode(linker, optimizer))`` would
    hand ``linker`` (a name such as ``"numba"``), without linking it. PyTensor 3.3 links the
    inner function of an op such as ScalarMax with the VM and C thunks even under the Python
    linker, which compiles C (and fails on float16) for a graph that is only read; and its
    rewrites bake inner graphs by the linker's class, which the stand-in linker inherits.
    None where the function has implicit (shared-variable) inputs, which only a linked
    function can say."""
    import pytensor
    from pytensor.compile.mode import Mode, predefined_linkers

    stand_in = _stop_at_linker(type(predefined_linkers[linker]))()
    try:
        pytensor.function(inputs, outputs, on_unused_input="ignore",
                          mode=Mode(linker=stand_in, optimizer=optimizer))
    except _Rewritten as done:
        if len(done.fgraph.inputs) != len(inputs):
            return None
        return list(done.fgraph.inputs), list(done.fgraph.outputs)
    raise RuntimeError("pytensor.function linked the graph without handing it to the linker")


def _as_built(op) -> tuple[list, list]:
    """The inner graph of ``op`` as variables that can be replaced (3.3's are frozen)."""
    inner = compat.mutable_fgraph(op.fgraph)
    return list(inner.inputs), list(inner.outputs)


class _Rewritten(Exception):
    """Carries the rewritten graph out of pytensor.function."""

    def __init__(self, fgraph):
        super().__init__("rewritten")
        self.fgraph = fgraph


@functools.cache
def _stop_at_linker(base: type | None = None) -> type:
    """The linker class, a subclass of ``base`` (by default PyTensor's Linker), for the
    rewrites that ask which linker they rewrite for (built on first use: importing PyTensor
    is slow)."""
    from pytensor.link.basic import Linker

    class StopAtLinker(base or Linker):
        """Hands the graph pytensor.function rewrote back to the caller, unlinked."""

        def accept(self, fgraph, no_recycling=None, profile=None):
            raise _Rewritten(fgraph)

        def make_thunk(self, **kwargs):
            raise NotImplementedError("StopAtLinker never links")

    return StopAtLinker


def inlined(inputs: list, outputs: list, rewritten: bool = False) -> tuple[list, list]:
    """The graph with every OpFromGraph node replaced by its inner graph (nested ones too),
    as a copy; Scan nodes stay. For the C backends' batches (conformance.backends.cbatch): there an
    inner graph runs by cvm node by node, exactly as the same nodes run inlined, and inlined
    they can join a whole-graph C module instead of compiling a module per node and layout.

    Not ``rewritten``, the inner graph is inlined as built (the unoptimized backend runs it
    without rewrites). ``rewritten`` (a graph already rewritten by the optimizing backend),
    each inner graph is first rewritten as the op's own function would be, on its own: the
    outer rewrites never saw inside the op, and must not now. The graph is returned
    unchanged where an inner output's type does not fit the node's output."""
    from pytensor.compile.builders import OpFromGraph
    from pytensor.graph.fg import FunctionGraph
    from pytensor.graph.replace import clone_replace

    try:
        # a shared variable is no graph input: FunctionGraph raises MissingInputError
        fgraph = FunctionGraph(inputs, outputs, clone=True)
        while nodes := [n for n in fgraph.toposort() if isinstance(n.op, OpFromGraph)]:
            node = nodes[0]
            inner_inputs, inner_outputs = (_rewritten_inner(node.op) if rewritten else
                                           _as_built(node.op))
            inner = clone_replace(inner_outputs,
                                  replace=dict(zip(inner_inputs, node.inputs, strict=True)))
            fgraph.replace_all([(old, old.type.filter_variable(new))
                                for old, new in zip(node.outputs, inner, strict=True)],
                               import_missing=True)
    # a type that does not fit, an inner graph PyTensor cannot copy, a shared variable:
    # keep the op
    except Exception:  # noqa: BLE001
        return inputs, outputs
    return list(fgraph.inputs), list(fgraph.outputs)
