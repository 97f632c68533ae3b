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

from conformance.registry import Case, Composes, Row
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


def node_spec(row: Row) -> Composes | None:
    """How ``row`` composes: its declared ``Composes``, the one its elemwise(...) or
    reduction(...) cases imply for ``compose=True``, or None."""
    if isinstance(row.compose, Composes):
        return row.compose
    if not row.compose:
        return None
    if isinstance(row.cases, elemwise):
        return Composes(domains=tuple(row.cases.domains))
    if isinstance(row.cases, reduction):
        return Composes(domains=(row.cases.domain,), params=axis_params, shape=keepdims_shape,
                        keep_rank=True)
    raise ValueError(f"row {row.name!r} declares compose=True, but only rows whose cases "
                     "are elemwise(...) or reduction(...) say how to compose; declare "
                     "compose=Composes(...) instead")


def composable(row: Row) -> bool:
    return node_spec(row) is not None


def _reduced(shape: tuple, axis) -> set[int]:
    if axis is None:
        return set(range(len(shape)))
    return {a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)}


def axis_params(shape: tuple):
    """An ``axis`` param for an operand of ``shape``: None, one axis (maybe negative) or a
    pair, as reduction(...) draws them."""
    return st.sampled_from(reduction.axis_choices(len(shape))).map(lambda a: (("axis", a),))


def keepdims_shape(shapes: Sequence[tuple], params: dict) -> tuple:
    """The shape of a reduction over ``params["axis"]`` with its axes kept."""
    (shape,) = shapes
    gone = _reduced(shape, params.get("axis"))
    return tuple(1 if i in gone else n for i, n in enumerate(shape))


def nonempty_axis_params(shape: tuple):
    """An ``axis`` param (None, one axis or a pair) whose reduced axes all have elements:
    for rows that raise, or differ, on an empty reduction (accepts=has_nonempty_axis)."""
    choices = [a for a in reduction.axis_choices(len(shape))
               if all(shape[i] for i in _reduced(shape, a))]
    return st.sampled_from(choices).map(lambda a: (("axis", a),))


def has_nonempty_axis(shape: tuple) -> bool:
    return any(shape)


def single_axis_params(shape: tuple):
    """An ``axis`` param that is None or one axis (sort, softmax, cumsum)."""
    return st.sampled_from([None, *range(-len(shape), len(shape))]).map(
        lambda a: (("axis", a),))


def well_conditioned(lo: float, hi: float) -> Composes:
    """How a steep one-operand row composes: its operand kept in [lo, hi], where the op
    magnifies an error already in its operand by a small factor only. Backends may round an
    earlier node one ulp apart, each within its row's tolerance; tan, exp or gamma of a large
    argument would turn that into a difference far above their own tolerance, which says
    nothing about either backend. The row's own tests cover its whole domain."""
    return Composes(domains=(Domain(lo, hi, allow_nan=False, allow_inf=False),))


def same_or_flat_shape(shapes: Sequence[tuple], params: dict) -> tuple:
    """Same shape as the operand, or flattened for ``axis=None`` (sort, cumsum)."""
    (shape,) = shapes
    return (int(np.prod(shape)),) if params.get("axis") is None else shape


def same_shape(shapes: Sequence[tuple], params: dict) -> tuple:
    return shapes[0]


def _usable(row, spec: Composes, dtype: str, shape: tuple | None) -> bool:
    """A row joins a graph only on dtypes it declares, by default those it supports
    without any recorded divergence, and on operand shapes it accepts (None: any shape)."""
    if shape is not None and spec.accepts is not None and not spec.accepts(shape):
        return False
    if spec.dtypes is not None:
        return dtype in spec.dtypes
    return dtype in row.dtypes and not row.known_for(dtype)


def _guard(var, domain: Domain):
    """``var`` pushed inside ``domain`` with ordinary PyTensor ops."""
    import pytensor.tensor as pt

    if domain == ANY:
        return var
    is_float = var.type.dtype.startswith("float")
    if is_float and not (domain.allow_nan and domain.allow_inf):
        var = pt.switch(pt.isnan(var) | pt.isinf(var), 1, var)
    dtype = np.dtype(var.type.dtype)
    lo, hi = domain.bounds(dtype) if dtype.kind != "b" else (None, None)
    if lo is not None or hi is not None:
        # bounds typed like var: a Python int bound would upcast uint64 (to float64)
        var = pt.clip(var, np.asarray(lo if lo is not None else -math.inf, dtype),
                      np.asarray(hi if hi is not None else math.inf, dtype))
    if domain.integral and is_float:
        var = pt.round(var)
    if domain.nonzero:
        var = pt.switch(pt.eq(var, 0), 1, var)
    return var.astype(var.type.dtype)


def _widens(common: str, out) -> bool:
    """Whether a node on operands whose upcast is the float ``common`` declares a wider
    float output."""
    dtype = getattr(getattr(out, "type", None), "dtype", "")
    return (common.startswith("float") and dtype.startswith("float")
            and np.dtype(dtype).itemsize > np.dtype(common).itemsize)


def apply_node(row, operands, params: tuple):
    """One node: guard the operands, build the row, keep a reduction's axes (keep_rank)."""
    import pytensor.tensor as pt

    spec = node_spec(row)
    guarded = [_guard(v, d) for v, d in zip(operands, spec.domains, strict=True)]
    if spec.operand_dtypes is not None:
        guarded = [v if d is None else v.astype(d)
                   for v, d in zip(guarded, spec.operand_dtypes, strict=True)]
    out = row.build(*guarded, **dict(params))
    if not spec.keep_rank or not operands[0].type.ndim:
        return out
    x = operands[0]
    return pt.expand_dims(out, tuple(sorted(_reduced((0,) * x.type.ndim,
                                                    dict(params).get("axis")))))


def _broadcasts(shapes: Sequence[tuple], statics: Sequence[tuple]) -> bool:
    """Whether operands of these concrete shapes broadcast in PyTensor, which only
    stretches axes that are statically of length 1."""
    rank = max(len(s) for s in shapes)
    for k in range(1, rank + 1):
        sizes = {s[-k] for s, t in zip(shapes, statics, strict=True)
                 if len(s) >= k and t[-k] != 1}
        if len(sizes) > 1:
            return False
    return True


def _fits(spec: Composes, operand_ids: list, i: int, sizes: list, pool: list) -> bool:
    """Whether pool value ``i`` may join ``operand_ids`` as the row's next operand."""
    if spec.pairs is not None:
        return bool(spec.pairs(sizes[operand_ids[0]], sizes[i]))
    return _broadcasts([sizes[j] for j in (*operand_ids, i)],
                       [pool[j].type.shape for j in (*operand_ids, i)])


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

    def __repr__(self) -> str:
        # part of the canonical-case store's key: a restriction changes every draw
        return f"Composer(only={self.only!r})"

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

    def judges_zero_signs(self, case: Case) -> bool:
        """Whether a graph's zero signs are judged: when every node's row judges them, has
        no record on the graph's dtype and takes its operands unguarded. Guards select
        through Where, which returns a selected -0.0 as +0.0 in ONNX Runtime (a record of
        the switch row), and a recorded divergence may show as a zero's sign."""
        by_name = {r.name: r for r in self._all()}
        dtype = case.values[0].dtype.name
        for name, _, _ in dict(case.params)["nodes"]:
            row = by_name[name]
            # a row that judges them on some cases only reads its own cases' parameters
            if (row.signed_zeros is not True or row.known_for(dtype)
                    or any(d != ANY for d in node_spec(row).domains)):
                return False
        return True

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
        if not any(_usable(r, node_spec(r), dtype, None) for r in rows):
            raise ValueError(f"no composable row supports {dtype} without a recorded "
                             "divergence")
        return _graph_cases(dtype, _Rows(rows), min_nodes, max_nodes, max_inputs)


class _Rows(tuple):
    """The rows a graph strategy draws from, shown by name (Hypothesis prints arguments)."""

    def __repr__(self) -> str:
        return f"rows({', '.join(r.name for r in self)})"


@st.composite
def _graph_cases(draw, dtype: str, rows, min_nodes: int, max_nodes: int, max_inputs: int):
    import pytensor.tensor as pt
    from pytensor.scalar import upcast

    specs = {r.name: node_spec(r) for r in rows}
    n_inputs = draw(st.integers(1, max_inputs))
    shapes, static = draw(broadcast_shapes(n_inputs, max_rank=2))
    values = tuple(draw(arrays(dtype, shape)) for shape in shapes)
    pool = [pt.tensor(f"x{i}", dtype=dtype, shape=s) for i, s in enumerate(static)]
    sizes = [tuple(shape) for shape in shapes]  # the concrete shape of each pool value

    def usable(row, i):
        return _usable(row, specs[row.name], pool[i].type.dtype, sizes[i])

    nodes = []
    for k in range(max_nodes):
        # A "one more?" flag per node, as Hypothesis' own lists do: deleting one node is then
        # one contiguous deletion, which the shrinker finds, even from the middle of a chain.
        if k >= min_nodes and draw(st.integers(0, 3)) == 0:  # go on 3 times in 4
            break
        fits = [r for r in rows if any(usable(r, i) for i in range(len(pool)))]
        if not fits:  # only with a few rows (--graph-ops): none takes these operands
            break
        row = draw(st.sampled_from(fits))
        spec = specs[row.name]
        eligible = [i for i in range(len(pool)) if usable(row, i)]
        # Half the time take the newest value: chains of ops are where composition bugs live.
        operand_ids = [draw(st.one_of(st.just(eligible[-1]), st.sampled_from(eligible)))]
        for _ in spec.domains[1:]:
            chosen = [i for i in eligible if _fits(spec, operand_ids, i, sizes, pool)]
            operand_ids.append(draw(st.sampled_from(chosen)) if chosen else operand_ids[0])
        # Mixed operands compute in their upcast dtype, which the row must take as well
        # (int32 & uint64 is a bitwise op on float64).
        common = upcast(*(pool[i].type.dtype for i in operand_ids))
        if not _usable(row, spec, common, None):
            operand_ids = [operand_ids[0]] * len(operand_ids)
        first = sizes[operand_ids[0]]
        params = draw(spec.params(first)) if spec.params else ()
        try:
            out = apply_node(row, [pool[i] for i in operand_ids], params)
        except (TypeError, ValueError):
            # Mixed operand dtypes some ops refuse (bit ops on bool and int): reuse the first.
            operand_ids = [operand_ids[0]] * len(operand_ids)
            out = apply_node(row, [pool[i] for i in operand_ids], params)
        if len({pool[i].type.dtype for i in operand_ids}) > 1 and _widens(common, out):
            # float16 with bool is float32 to PyTensor (upgrade_to_float) but float16 to
            # numpy, so the Python linker rounds to float16 what C and ONNX keep (the
            # softplus row's record): same-dtype operands instead
            operand_ids = [operand_ids[0]] * len(operand_ids)
            out = apply_node(row, [pool[i] for i in operand_ids], params)
        operand_shapes = [sizes[i] for i in operand_ids]
        sizes.append(tuple(spec.shape(operand_shapes, dict(params)) if spec.shape
                           else np.broadcast_shapes(*operand_shapes)))
        pool.append(out)
        nodes.append((row.name, tuple(operand_ids), params))
    computed = list(range(n_inputs, len(pool)))
    if not computed:
        draw(st.nothing())
    extra = draw(st.lists(st.sampled_from(computed), max_size=2, unique=True))
    outputs = tuple(dict.fromkeys([computed[-1], *extra]))
    nodes, outputs = _prune(n_inputs, nodes, outputs)
    return Case(values, static, (("nodes", nodes), ("outputs", outputs)))
