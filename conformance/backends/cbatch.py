"""One C module for many small graphs: PyTensor's C implementations at a fraction of the
compile cost.

PyTensor's cvm linker compiles one module per node signature (op, dtypes, static layout), about
a second of g++ each, most of it fixed cost; a run that compares every registry cell on the C
backend would compile thousands. :class:`Batch` puts independent graphs (a row's canonical case
at each dtype) side by side in one FunctionGraph and compiles it with the whole-graph ``c``
linker: the same ``c_code`` of every op, one module, about a tenth of a second per node.

Running one member feeds the others the values they were built with (checked once not to
raise), so a member's result and error are its own. A member whose own values raise leaves
its chunk, which is compiled again without it; it, and every member of a chunk the
whole-graph linker cannot compile, falls back to one cvm function of its own, as the
unbatched backend compiles it. Graphs the whole-graph linker cannot take at all (no C code
for a node, scalar intermediates) are batched node by node (conformance.backends.cnodes).

For ``pytensor-c-opt`` the members are graphs already rewritten with ``fast_run`` (each on its
own, once for that backend and ``onnxruntime-rewritten``), compiled without further rewrites.
Batchability is judged on the rewritten graph, the one compiled.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from conformance.backends.cnodes import call as _call
from conformance.backends.cnodes import split
from conformance.compile.innergraphs import without_inner_rewrites
from converter import compat

#: g++ time grows faster than linearly beyond about 20 nodes in one module.
MAX_NODES = 20


@dataclass
class Member:
    """One graph in a batch and the input values it is run with while others are run."""

    key: Hashable
    inputs: list
    outputs: list
    values: Sequence[np.ndarray]
    #: what building the graph raised (its rewrites, say): the member's result on any input
    error: BaseException | None = None
    #: the reference raises on ``values``, or they are a record's example (which may crash
    #: the process): a backend that cannot tell which member of a batch raised, or whose
    #: other members' values run with every member's, compiles it apart (backends.numba)
    raises: bool = False


def _compile(inputs, outputs, linker: str, rewritten: bool = False):
    """Compiled without rewrites. A graph that is not ``rewritten`` runs its inner graphs
    without rewrites too; a rewritten one keeps its inner graphs' default mode and may hold
    the inplace ops the rewrites put in."""
    import pytensor
    from pytensor.compile.mode import Mode

    if not rewritten:
        outputs = without_inner_rewrites(outputs, "cvm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BLAS-fallback advice on pip installs
        return pytensor.function(inputs, outputs, mode=Mode(linker=linker, optimizer=None),
                                 on_unused_input="ignore", accept_inplace=rewritten)


def _nodes(member: Member) -> list:
    io_toposort = compat.lookup("io_toposort")
    return io_toposort(member.inputs, member.outputs)


def _batchable(member: Member) -> bool:
    """Whether the whole-graph linker computes what cvm does for the member. Not for float16
    (cvm runs most float16 nodes in Python; the whole-graph linker compiles a float16 sum that
    returns garbage), nor for graphs with scalars (it returns None for a tensor made from a
    scalar, and aborts on a Subtensor with constant scalar indices), nor where a node has no C
    code at all."""
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.c.basic import CLinker
    from pytensor.tensor.type import TensorType

    variables = [v for node in _nodes(member) for v in (*node.inputs, *node.outputs)]
    if not all(isinstance(v.type, TensorType) and v.type.dtype != "float16" for v in variables):
        return False
    try:  # generating the source is cheap; compiling is what costs
        CLinker().accept(FunctionGraph(member.inputs, member.outputs, clone=True)).code_gen()
    # an op without C code says so with one of several exception types
    except Exception:  # noqa: BLE001
        return False
    return True


def _as_declared(outputs, variables) -> bool:
    """Whether each result has its variable's dtype and rank (a check on the linker's glue)."""
    return all(np.asarray(o).dtype == v.type.dtype and np.ndim(o) == v.type.ndim
               for o, v in zip(outputs, variables, strict=True))


def _culprit(fn, members: list[Member]) -> Member | None:
    """The member whose node raised in ``fn``'s first run, or None when it cannot tell."""
    ancestors = compat.lookup("ancestors")

    fgraph = fn.maker.fgraph
    # the whole-graph linker's thunk keeps the failed node's position in its node list
    position, nodes = getattr(fn.vm, "position_of_error", None), getattr(fn.vm, "nodes", None)
    if position is None or nodes is None or nodes[position] not in fgraph.apply_nodes:
        return None
    node = nodes[position]
    start = 0
    for m in members:
        outputs = fgraph.outputs[start:start + len(m.outputs)]
        start += len(m.outputs)
        if any(v.owner is node for v in ancestors(outputs)):
            return m
    return None


class _Chunk:
    """Members compiled together; ``fn`` is None until the first run. A member whose own
    values raise in the first run leaves the batch (the rest is compiled again) and runs
    alone, as does every member when the batch cannot be compiled at all."""

    def __init__(self, members: list[Member], batched: bool = True, rewritten: bool = False):
        self.members, self.rewritten = members, rewritten
        self.together: list[Member] = members if batched else []
        self.fn = None if batched else False
        #: fallback: one cvm function per member, or what compiling it raised
        self.alone: dict[Hashable, object] = {}

    def compile(self) -> None:
        together = list(self.members)
        while together:
            inputs = [i for m in together for i in m.inputs]
            outputs = [o for m in together for o in m.outputs]
            try:
                fn = _compile(inputs, outputs, "c", self.rewritten)
            # an op without C code after all: no batching here
            except Exception:  # noqa: BLE001
                break
            try:
                results = _call(fn, [v for m in together for v in m.values])
            # a member's own values raise: that member runs alone
            except Exception:  # noqa: BLE001
                culprit = _culprit(fn, together)
                if culprit is None:
                    break
                together.remove(culprit)
                continue
            if _as_declared(results, outputs):
                self.fn, self.together = fn, together
                return
            break
        self.fn, self.together = False, []

    def run(self, key: Hashable, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        if self.fn is None:
            self.compile()
        if all(m.key != key for m in self.together):
            member = next(m for m in self.members if m.key == key)
            if member.error is not None:
                raise member.error
            if key not in self.alone:
                try:
                    self.alone[key] = _compile(member.inputs, member.outputs, "cvm",
                                               self.rewritten)
                # what compiling raises is the member's result on any input: compiled
                # once, raised for each example
                except Exception as exc:  # noqa: BLE001
                    self.alone[key] = exc
            if isinstance(self.alone[key], BaseException):
                raise self.alone[key].with_traceback(None)
            return _call(self.alone[key], values)
        feed, start, stop = [], 0, 0
        for m in self.together:
            if m.key == key:
                start = sum(len(p.outputs) for p in self.together[:self.together.index(m)])
                stop = start + len(m.outputs)
                feed.extend(values)
            else:
                feed.extend(m.values)
        return _call(self.fn, feed)[start:stop]


def chunks(members: Sequence[Member], limit: int):
    """``members`` in order, in groups of at most ``limit`` nodes (a member larger than that
    alone): the same members always make the same groups, which the compile caches serve."""
    group: list[Member] = []
    size = 0
    for m in members:
        n = max(1, len(_nodes(m)))
        if group and size + n > limit:
            yield group
            group, size = [], 0
        group.append(m)
        size += n
    if group:
        yield group


class Batch:
    """Members grouped into chunks of at most :data:`MAX_NODES` nodes, in the given order (so
    the same members always make the same modules, which the compile cache then serves)."""

    def __init__(self, members: Sequence[Member], rewritten: bool = False):
        self.rewritten = rewritten  # the members were rewritten with fast_run
        self._chunk_of: dict[Hashable, _Chunk] = {}
        together: list[Member] = []
        for member in members:
            queue = [member]
            if member.error is None and not _batchable(member):
                parts = split(member, self.run, _nodes(member), rewritten)
                if parts is None:
                    self._close([member], batched=False)
                    continue
                self._close([parts[0]], batched=False)  # cvm, its nodes run by the batch
                queue = parts[1]
            elif member.error is not None:
                self._close([member], batched=False)
                continue
            together.extend(queue)
        for group in chunks(together, MAX_NODES):
            self._close(group)

    def _close(self, group: list[Member], batched: bool = True) -> None:
        chunk = _Chunk(group, batched, self.rewritten)
        for m in group:
            self._chunk_of[m.key] = chunk

    def __contains__(self, key: Hashable) -> bool:
        return key in self._chunk_of

    def run(self, key: Hashable, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The outputs of member ``key`` on ``values``; raises what its graph raises."""
        return self._chunk_of[key].run(key, values)
