"""Random multi-op graphs built from registry rows.

A graph is plain data kept in ``Case.params``: ``nodes`` is a tuple of
``(row name, operand ids, params)`` (ids below the number of inputs are graph inputs, the
rest earlier nodes) and ``outputs`` a tuple of ids. Hypothesis draws it node by node, so
shrinking drops nodes, rewires operands toward the inputs and simplifies shapes and values.
Operands are kept inside each op's domain by explicit guard ops (clip, switch), and
reductions keep their axes (as keepdims would), so every node's input constraints hold.

Which rows take part is declared by each row (``Row.compose``); a :class:`Composer` is given
the rows, so this layer never imports the registries.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from hypothesis import strategies as st

from conformance.registry import Case, Row
from conformance.strategies.cases import elemwise, reduction
from conformance.strategies.shapes import broadcast_shapes
from conformance.strategies.values import ANY, Domain, arrays


def _validate(min_nodes: int, max_nodes: int, max_inputs: int) -> None:
    if not isinstance(min_nodes, int) or min_nodes < 1:
        raise ValueError(f"min_nodes={min_nodes!r} must be an int >= 1")
    if not isinstance(max_nodes, int) or max_nodes < min_nodes:
        raise ValueError(f"max_nodes={max_nodes!r} must be an int >= min_nodes={min_nodes}")
    if not isinstance(max_inputs, int) or max_inputs < 1:
        raise ValueError(f"max_inputs={max_inputs!r} must be an int >= 1")


def composable(row: Row) -> bool:
    """A row declares ``compose=True``; only elemwise(...) and reduction(...) case
    factories say how to draw its operands and parameters inside a graph."""
    if row.compose and not isinstance(row.cases, elemwise | reduction):
        raise ValueError(f"row {row.name!r} declares compose=True, but only rows whose cases "
                         "are elemwise(...) or reduction(...) can appear in random graphs")
    return row.compose


def _usable(row, dtype: str) -> bool:
    """A row joins a graph only on dtypes it supports without any recorded divergence."""
    return dtype in row.dtypes and not row.known_for(dtype)


def _guard(var, domain: Domain):
    """``var`` pushed inside ``domain`` with ordinary PyTensor ops."""
    import pytensor.tensor as pt

    if domain == ANY:
        return var
    is_float = var.type.dtype.startswith("float")
    if is_float and not (domain.allow_nan and domain.allow_inf):
        var = pt.switch(pt.isnan(var) | pt.isinf(var), 1, var)
    lo, hi = domain.bounds(np.dtype(var.type.dtype))
    if lo is not None or hi is not None:
        var = pt.clip(var, lo if lo is not None else -math.inf, hi if hi is not None else math.inf)
    if domain.integral and is_float:
        var = pt.round(var)
    if domain.nonzero:
        var = pt.switch(pt.eq(var, 0), 1, var)
    return var.astype(var.type.dtype)


def apply_node(row, operands, params: tuple):
    """One node: guard the operands, build the row, keep reduced axes as length-1 axes."""
    import pytensor.tensor as pt

    if isinstance(row.cases, elemwise):
        guarded = [_guard(v, d) for v, d in zip(operands, row.cases.domains, strict=True)]
        return row.build(*guarded, **dict(params))
    (x,) = operands
    out = row.build(_guard(x, row.cases.domain), **dict(params))
    axis = dict(params)["axis"]
    axes = range(x.type.ndim) if axis is None else [axis] if isinstance(axis, int) else axis
    return pt.expand_dims(out, tuple(sorted(a % x.type.ndim for a in axes))) if x.type.ndim else out


def _arity(row) -> int:
    return len(row.cases.domains) if isinstance(row.cases, elemwise) else 1


def _prune(n_inputs: int, nodes: list, outputs: tuple) -> tuple[tuple, tuple]:
    """Drop nodes no output depends on and renumber, so the case is exactly the graph run."""
    live = set(outputs)
    for k in range(len(nodes) - 1, -1, -1):
        if n_inputs + k in live:
            live.update(nodes[k][1])
    renumber = {i: i for i in range(n_inputs)}
    kept = []
    for k, (name, operand_ids, params) in enumerate(nodes):
        if n_inputs + k in live:
            renumber[n_inputs + k] = n_inputs + len(kept)
            kept.append((name, tuple(renumber[i] for i in operand_ids), params))
    return tuple(kept), tuple(renumber[i] for i in outputs)


class Composer:
    """Random graphs over the composable rows of a registry. The registry that holds the
    graph row also holds the rows it composes, so it hands them over with :meth:`bind`
    once it is assembled."""

    def __init__(self):
        self._source: Callable[[], Sequence[Row]] | None = None
        self.only: tuple[str, ...] = ()

    def bind(self, source: Callable[[], Sequence[Row]]) -> None:
        """``source()`` returns every registry row (called lazily, at draw time)."""
        self._source = source

    def _all(self) -> Sequence[Row]:
        if self._source is None:
            raise RuntimeError("Composer.bind(source) was never called: no rows to compose")
        return self._source()

    def rows(self, only: Sequence[str] = ()) -> tuple[Row, ...]:
        """The composable rows, or those named in ``only`` (each must be composable)."""
        rows = tuple(r for r in self._all() if composable(r))
        if not only:
            return rows
        by_name = {r.name: r for r in rows}
        unknown = [n for n in only if n not in by_name]
        if unknown:
            raise ValueError(f"rows {unknown} cannot be composed; composable rows: "
                             f"{', '.join(sorted(by_name))}")
        return tuple(by_name[n] for n in only)

    def restrict(self, names) -> None:
        """Limit random graphs to the named rows (``--graph-ops``); empty means all."""
        names = tuple(names)
        self.rows(names)  # validated now, where the option is read
        self.only = names

    def build(self, *inputs, nodes, outputs):
        """The outputs of the graph described by ``nodes``/``outputs`` on ``inputs``."""
        by_name = {r.name: r for r in self._all()}
        pool = list(inputs)
        for name, operand_ids, params in nodes:
            pool.append(apply_node(by_name[name], [pool[i] for i in operand_ids], params))
        return [pool[i] for i in outputs]

    def code(self, case: Case) -> str:
        """The graph as short, runnable PyTensor code."""
        params = dict(case.params)
        lines = ["import pytensor.tensor as pt",
                 "from conformance.registries import row_named",
                 "from conformance.strategies.graphs import apply_node", ""]
        names = []
        for i, (value, stat) in enumerate(zip(case.values, case.static, strict=True)):
            names.append(f"x{i}")
            lines.append(f'x{i} = pt.tensor("x{i}", dtype="{value.dtype}", '
                         f'shape={tuple(stat)!r})')
        for k, (name, operand_ids, node_params) in enumerate(params["nodes"]):
            args = ", ".join(names[i] for i in operand_ids)
            lines.append(f'v{k} = apply_node(row_named("{name}"), [{args}], {node_params!r})')
            names.append(f"v{k}")
        lines.append(f"outputs = [{', '.join(names[i] for i in params['outputs'])}]")
        return "\n".join(lines)

    def cases(self, dtype: str, *, min_nodes: int = 1, max_nodes: int = 6,
              max_inputs: int = 3, only: Sequence[str] | None = None):
        """A strategy of ``Case`` holding a random graph over ``dtype`` inputs (see the
        module docstring); ``only`` limits the rows used (default: the restricted set)."""
        _validate(min_nodes, max_nodes, max_inputs)
        rows = self.rows(self.only if only is None else tuple(only))
        if not any(_usable(r, dtype) for r in rows):
            raise ValueError(f"no composable row supports {dtype} without a recorded "
                             "divergence")
        return _graph_cases(dtype, rows, min_nodes, max_nodes, max_inputs)


@st.composite
def _graph_cases(draw, dtype: str, rows, min_nodes: int, max_nodes: int, max_inputs: int):
    import pytensor.tensor as pt

    n_inputs = draw(st.integers(1, max_inputs))
    shapes, static = draw(broadcast_shapes(n_inputs, max_rank=2))
    values = tuple(draw(arrays(dtype, shape)) for shape in shapes)
    pool = [pt.tensor(f"x{i}", dtype=dtype, shape=s) for i, s in enumerate(static)]
    nodes = []
    for k in range(max_nodes):
        # A "one more?" flag per node, as Hypothesis' own lists do: deleting one node is then
        # one contiguous deletion, which the shrinker finds, even from the middle of a chain.
        if k >= min_nodes and draw(st.integers(0, 3)) == 0:  # go on 3 times in 4
            break
        fits = [r for r in rows if any(_usable(r, v.type.dtype) for v in pool)]
        row = draw(st.sampled_from(fits))
        eligible = [i for i, v in enumerate(pool) if _usable(row, v.type.dtype)]
        # Half the time take the newest value: chains of ops are where composition bugs live.
        pick = st.one_of(st.just(eligible[-1]), st.sampled_from(eligible))
        operand_ids = tuple(draw(pick) for _ in range(_arity(row)))
        params = ()
        if isinstance(row.cases, reduction):
            ndim = pool[operand_ids[0]].type.ndim
            params = (("axis", draw(st.sampled_from(reduction.axis_choices(ndim)))),)
        try:
            out = apply_node(row, [pool[i] for i in operand_ids], params)
        except (TypeError, ValueError):
            # Mixed operand dtypes some ops refuse (bit ops on bool and int): reuse the first.
            operand_ids = (operand_ids[0],) * len(operand_ids)
            out = apply_node(row, [pool[i] for i in operand_ids], params)
        pool.append(out)
        nodes.append((row.name, operand_ids, params))
    computed = list(range(n_inputs, len(pool)))
    extra = draw(st.lists(st.sampled_from(computed), max_size=2, unique=True))
    outputs = tuple(dict.fromkeys([computed[-1], *extra]))
    nodes, outputs = _prune(n_inputs, nodes, outputs)
    return Case(values, static, (("nodes", nodes), ("outputs", outputs)))
