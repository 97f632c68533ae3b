"""PyTensor's Numba backend, PyTensor 3's default: ``pytensor-numba`` (the Numba linker, no
rewrites: Numba's kernels against the Python reference, as ``pytensor-c`` checks C's) and
``pytensor-numba-opt`` (the ``NUMBA`` mode, what ``pytensor.function`` compiles by default on
3.x: the default rewrites plus Numba's own, without the C-only BLAS and fusion ones).

Numba compiles one LLVM function per ``pytensor.function`` (about half a second to seconds
each) and caches it on disk under PyTensor's compile directory, so a row's canonical layouts
are compiled as one function (:class:`NumbaBatch`), as the C backends batch theirs.

What Numba does by design is declared (:data:`Semantics`), not recorded on every row: it has no
float16 (PyTensor's dispatch raises NotImplementedError), and with ``numba__fastmath`` (on by
default) LLVM's ``nsz`` flag gives no promise about the sign of a zero.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Hashable, Sequence

import numpy as np

from conformance.backends.base import Backend, Declined, Graph, Runner, Semantics
from conformance.backends.cbatch import Member, _nodes, chunks
from conformance.backends.cnodes import call

#: nodes in one function: LLVM's time grows with the function, a compile's fixed cost does not
MAX_NODES = 40
#: the dtypes Numba has no type for
NO_NUMBA_TYPE = frozenset({"float16"})


def semantics() -> Semantics:
    """Numba's promises under the installed PyTensor's settings (read when first judged)."""
    import pytensor

    fastmath = bool(pytensor.config.numba__fastmath)
    return Semantics(
        signed_zeros=not fastmath, declines=NO_NUMBA_TYPE,
        source="numba has no float16; numba__fastmath=True (PyTensor's default) compiles with "
               "LLVM's nsz flag, which does not keep the sign of zero" if fastmath else
               "numba has no float16")


def _compile(inputs, outputs, rewritten: bool):
    import pytensor
    from pytensor.compile.mode import Mode

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # object-mode fallback and cache notices
        return pytensor.function(inputs, outputs, mode=Mode(linker="numba", optimizer=None),
                                 on_unused_input="ignore", accept_inplace=rewritten)


def _declined(member: Member) -> str | None:
    dtypes = {getattr(v.type, "dtype", "") for node in _nodes(member)
              for v in (*node.inputs, *node.outputs)}
    dtypes.update(getattr(v.type, "dtype", "") for v in member.inputs)
    found = sorted(NO_NUMBA_TYPE & dtypes)
    return found[0] if found else None


class NumbaBatch:
    """A row's members compiled as few Numba functions as their own values allow.

    Members go into chunks of at most :data:`MAX_NODES` nodes, in the given order (so the
    same members make the same functions, which the disk cache then serves); a member whose
    values the reference raises on is compiled alone. A chunk is compiled and run once on
    its members' own values; if that fails, it is split in halves, down to single members,
    whose compile error or run error is then their own result. Running one member feeds the
    others the values that were checked not to raise."""

    def __init__(self, members: Sequence[Member], rewritten: bool = False):
        self.rewritten = rewritten
        #: key -> member, and its (function, members together) once settled, or an error
        self._members: dict[Hashable, Member] = {}
        self._settled: dict[Hashable, object] = {}
        self._pending: dict[Hashable, list[Member]] = {}
        together: list[Member] = []
        for member in members:
            self._members[member.key] = member
            if member.error is not None:
                self._settled[member.key] = member.error
                continue
            if (dtype := _declined(member)) is not None:
                self._settled[member.key] = Declined(f"Numba has no {dtype} type")
                continue
            if member.raises:  # the chunk's first run would raise and be split
                self._queue([member])
                continue
            together.append(member)
        for group in chunks(together, MAX_NODES):
            self._queue(group)

    def _queue(self, group: list[Member]) -> None:
        for m in group:
            self._pending[m.key] = group

    def __contains__(self, key: Hashable) -> bool:
        return key in self._members

    def _settle(self, group: list[Member]) -> None:
        for m in group:
            self._pending.pop(m.key, None)
        inputs = [i for m in group for i in m.inputs]
        outputs = [o for m in group for o in m.outputs]
        try:
            fn = _compile(inputs, outputs, self.rewritten)
        # what compiling raises is a single member's result on any input
        except Exception as exc:  # noqa: BLE001
            if len(group) == 1:
                self._settled[group[0].key] = _declined_or(exc)
                return
            fn = None
        if fn is not None and len(group) > 1:
            try:
                call(fn, [v for m in group for v in m.values])
            # some member's own values raise: the halves are tried apart
            except Exception:  # noqa: BLE001
                fn = None
        if fn is None:
            half = len(group) // 2
            self._settle(group[:half])
            self._settle(group[half:])
            return
        for m in group:
            self._settled[m.key] = (fn, group)

    def run(self, key: Hashable, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The outputs of member ``key`` on ``values``; raises what its graph raises."""
        with _compiled_on_call():
            return self._run(key, values)

    def _run(self, key: Hashable, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        if key in self._pending:
            self._settle(self._pending[key])
        settled = self._settled[key]
        if isinstance(settled, BaseException):
            raise settled.with_traceback(None)
        fn, group = settled
        feed, start = [], 0
        for m in group:
            if m.key == key:
                first = start
                feed.extend(values)
            else:
                feed.extend(m.values)
            start += len(m.outputs)
        return call(fn, feed)[first:first + len(self._members[key].outputs)]


@contextlib.contextmanager
def _compiled_on_call():
    """Numba compiles a function on its first call: a NotImplementedError from there is
    Numba saying it has no implementation (a float16 inside a Composite's scalar graph)."""
    try:
        yield
    except NotImplementedError as exc:
        raise _declined_or(exc) from None


def _declined_or(exc: BaseException) -> BaseException:
    """A NotImplementedError from compiling is Numba saying it has no implementation: the
    backend's "unsupported" cell, as a converter's refusal is; anything else is a result."""
    if isinstance(exc, NotImplementedError):
        return Declined(f"Numba cannot compile the graph: {exc}")
    return exc


class NumbaBackend(Backend):
    """The Numba linker, without rewrites or with the NUMBA mode's; canonical layouts of a row
    batched as few functions (``--c-layouts all``: one function per drawn layout)."""

    canonical_only = batched = runs_apart = judges_grid = True
    rewrites_for = "numba"

    def __init__(self, name: str, optimizer: str | None, unrewritten: str | None = None):
        self.name, self.optimizer, self.unrewritten = name, optimizer, unrewritten

    @property
    def semantics(self) -> Semantics:
        return semantics()

    def compiled_graph(self, graph: Graph) -> tuple[list, list]:
        """What the batch compiles: the graph itself, or as the NUMBA mode rewrites it."""
        if self.optimizer is None:
            return graph.inputs, graph.outputs
        return graph.rewritten(self.optimizer, linker="numba")

    def batch(self, members: list) -> NumbaBatch:
        return NumbaBatch(members, rewritten=self.optimizer is not None)

    def prepare(self, graph: Graph, opset: int) -> Runner:
        if (dtype := self.semantics.declines_graph(graph)) is not None:
            raise Declined(f"Numba has no {dtype} type")
        with _compiled_on_call():
            fn = _compile(*self.compiled_graph(graph), self.optimizer is not None)

        def run(values):
            with _compiled_on_call():
                return call(fn, values)

        return run
