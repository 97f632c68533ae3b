"""One C module for many small graphs: PyTensor's C implementations at a fraction of the
compile cost.

PyTensor's cvm linker compiles one module per node signature (op, dtypes, static layout), about
a second of g++ each, most of it fixed cost; a run that compares every registry cell on the C
backend would compile thousands. :class:`Batch` puts independent graphs (a row's canonical case
at each dtype) side by side in one FunctionGraph and compiles it with the whole-graph ``c``
linker: the same ``c_code`` of every op, one module, about a tenth of a second per node.

Running one member feeds the others the values they were built with (checked once not to
raise), so a member's result and error are its own. Where the whole-graph linker cannot
compile a chunk (an op without C code) or a member's own values raise, those members fall
back to one cvm function each, as the unbatched backend compiles them; graphs the whole-graph
linker cannot take at all (no C code for a node, scalar intermediates) are never batched.

With an optimizer (``fast_run`` for ``pytensor-c-opt``) the batch graph is rewritten as one:
members share no variables, so the rewrites act within each member as they would alone.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from conformance.innergraphs import without_inner_rewrites

#: g++ time grows faster than linearly beyond about 20 nodes in one module.
MAX_NODES = 20


@dataclass
class Member:
    """One graph in a batch and the input values it is run with while others are run."""

    key: Hashable
    inputs: list
    outputs: list
    values: Sequence[np.ndarray]


def _compile(inputs, outputs, linker: str, optimizer: str | None = None):
    import pytensor
    from pytensor.compile.mode import Mode

    if optimizer is None:
        outputs = without_inner_rewrites(outputs, "cvm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BLAS-fallback advice on pip installs
        return pytensor.function(inputs, outputs, mode=Mode(linker=linker, optimizer=optimizer),
                                 on_unused_input="ignore")


def _call(fn, values):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return [np.array(o, copy=True) for o in fn(*[v.copy() for v in values])]


def _nodes(member: Member) -> list:
    try:
        from pytensor.graph.traversal import io_toposort
    except ImportError:  # PyTensor 2.38
        from pytensor.graph.basic import io_toposort
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


class _Chunk:
    """Members compiled together; ``fn`` is None until the first run."""

    def __init__(self, members: list[Member], batched: bool = True,
                 optimizer: str | None = None):
        self.members, self.optimizer = members, optimizer
        self.fn = None if batched else False
        self.alone: dict[Hashable, object] = {}  # fallback: one cvm function per member

    def compile(self) -> None:
        inputs = [i for m in self.members for i in m.inputs]
        outputs = [o for m in self.members for o in m.outputs]
        try:
            fn = _compile(inputs, outputs, "c", self.optimizer)
            results = _call(fn, [v for m in self.members for v in m.values])
            if not _as_declared(results, outputs):
                fn = None
        # an op without C code, or a member whose own values raise: no batching here
        except Exception:  # noqa: BLE001
            fn = None
        self.fn = fn if fn is not None else False

    def run(self, key: Hashable, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        if self.fn is None:
            self.compile()
        if self.fn is False:
            member = next(m for m in self.members if m.key == key)
            if key not in self.alone:
                self.alone[key] = _compile(member.inputs, member.outputs, "cvm", self.optimizer)
            return _call(self.alone[key], values)
        feed, start, stop = [], 0, 0
        for m in self.members:
            if m.key == key:
                start = sum(len(p.outputs) for p in self.members[:self.members.index(m)])
                stop = start + len(m.outputs)
                feed.extend(values)
            else:
                feed.extend(m.values)
        return _call(self.fn, feed)[start:stop]


class Batch:
    """Members grouped into chunks of at most :data:`MAX_NODES` nodes, in the given order (so
    the same members always make the same modules, which the compile cache then serves)."""

    def __init__(self, members: Sequence[Member], optimizer: str | None = None):
        self.optimizer = optimizer  # a PyTensor rewrite set, as Mode(optimizer=...) takes it
        self._chunk_of: dict[Hashable, _Chunk] = {}
        group: list[Member] = []
        size = 0
        for member in members:
            if not _batchable(member):
                self._close([member], batched=False)
                continue
            n = max(1, len(_nodes(member)))
            if group and size + n > MAX_NODES:
                self._close(group)
                group, size = [], 0
            group.append(member)
            size += n
        if group:
            self._close(group)

    def _close(self, group: list[Member], batched: bool = True) -> None:
        chunk = _Chunk(group, batched, self.optimizer)
        for m in group:
            self._chunk_of[m.key] = chunk

    def __contains__(self, key: Hashable) -> bool:
        return key in self._chunk_of

    def run(self, key: Hashable, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The outputs of member ``key`` on ``values``; raises what its graph raises."""
        return self._chunk_of[key].run(key, values)
