"""Random multi-op graphs built from registry rows.

A graph is plain data kept in ``Case.params``: ``nodes`` is a tuple of
``(row name, operand ids, params)`` (ids below the number of inputs are graph inputs, the
rest earlier nodes) and ``outputs`` a tuple of ids. Hypothesis draws it node by node, so
shrinking drops nodes, rewires operands toward the inputs and simplifies shapes and values.
Operands are kept inside each op's domain by explicit guard ops (clip, switch), and
reductions keep their axes (as keepdims would), so every node's input constraints hold.

Which rows take part is declared by each row (``Row.compose``); a :class:`Composer` is given
the rows, so this layer never imports the registries.

A node may also be a control-flow node (``CONTROL``, in a minority of graphs): a scan whose
step is itself a small random graph (its ``body``: map over a sequence, accumulate a value
for a few steps, fold a sequence into a value) or an ifelse whose two branches are. A body
is drawn like a graph, so shrinking drops and rewires its nodes and lowers the step count.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from hypothesis import strategies as st

from conformance.registry import Case, Composes, Row
from conformance.strategies.cases import elemwise, reduction
from conformance.strategies.composing import axis_params, keepdims_shape, reduced_axes
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


def _usable(row, spec: Composes, dtype: str, shape: tuple | None,
            judged: frozenset[str] | None = None) -> bool:
    """A row joins a graph only on dtypes it declares, by default those it supports
    without any recorded divergence on the backends ``judged`` (None: any backend), and on
    operand shapes it accepts (None: any shape). A record of a backend the run leaves out
    (JAX's, in the default run) does not keep the row out of the run's graphs."""
    if shape is not None and spec.accepts is not None and not spec.accepts(shape):
        return False
    if spec.dtypes is not None:
        return dtype in spec.dtypes
    records = row.known_for(dtype)
    if judged is not None:
        records = [k for k in records if judged.intersection(k.backends)]
    return dtype in row.dtypes and not records


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
    return pt.expand_dims(out, tuple(sorted(reduced_axes((0,) * x.type.ndim,
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


#: Control-flow node kinds: what they take (see ``_control_operands``) and build.
CONTROL = ("scan_map", "scan_accumulate", "scan_fold", "ifelse")
#: Dtypes whose graphs may hold control nodes (float16 and bool stay plain: a float16 Loop
#: has its own record, and bool bodies are mostly comparisons of one value).
CONTROL_DTYPES = ("int32", "int64", "float32", "float64")
CONTROL_ODDS = 10  # one node in CONTROL_ODDS is a control node, where one fits
#: ... and one in ASKED_ODDS where ``--graph-ops`` names control kinds: a run asking for
#: them tests them, where the default run keeps their compile cost in a minority of graphs
ASKED_ODDS = 3
MAX_BODY_NODES = 3
MAX_SCAN_STEPS = 3


def walk(nodes):
    """Every node of a graph, those of control nodes' bodies included (after their node)."""
    for name, operand_ids, params in nodes:
        yield name, operand_ids, params
        for key, value in params:
            if key in ("body", "then", "else"):
                yield from walk(value)


def _control_operands(kind: str, sizes: list) -> list[int]:
    """The pool values a control node of ``kind`` may take as its (first) operand: a
    sequence needs a first axis with elements (zero steps are the scan rows' business),
    an accumulated value a rank of at most 1 (its history adds an axis)."""
    if kind in ("scan_map", "scan_fold"):
        return [i for i, s in enumerate(sizes) if s and s[0] >= 1]
    if kind == "scan_accumulate":
        return [i for i, s in enumerate(sizes) if len(s) <= 1]
    return list(range(len(sizes)))


def _fit(value, like):
    """``value`` (a body's result: ``like``'s dtype, a shape that broadcasts to ``like``'s)
    as ``like``'s type, which a scan's carried value and ifelse's branches must keep."""
    import pytensor.tensor as pt

    if value.type.shape != like.type.shape:
        value = pt.specify_shape(pt.broadcast_to(value, like.shape), like.type.shape)
    return value


def _results(pool: list, sizes: list, like: int) -> list[int]:
    """Body values that can stand for pool value ``like``: its dtype, and a shape that
    broadcasts to its shape (the value itself always can)."""
    target = sizes[like]
    return [i for i, v in enumerate(pool)
            if v.type.dtype == pool[like].type.dtype and len(sizes[i]) == len(target)
            and all(a in (1, b) for a, b in zip(sizes[i], target, strict=True))]


class Composer:
    """Random graphs over the composable rows of a registry. The registry that holds the
    graph row also holds the rows it composes, so it hands them over with :meth:`bind`
    once it is assembled."""

    def __init__(self):
        self._source: Callable[[], Sequence[Row]] | None = None
        self.only: tuple[str, ...] = ()
        self.control: tuple[str, ...] = CONTROL
        #: the backends the run judges (None: all): only their records keep a row out
        self.judged: frozenset[str] | None = None

    def __repr__(self) -> str:
        # part of the canonical-case store's key: a restriction changes every draw
        judged = sorted(self.judged) if self.judged is not None else None
        return f"Composer(only={self.only!r}, control={self.control!r}, judged={judged!r})"

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
        """Limit random graphs to the named rows and control kinds (``--graph-ops``; a
        restriction naming no control kind has none); empty means all."""
        names = tuple(names)
        rows = tuple(n for n in names if n not in CONTROL)
        self.rows(rows)  # validated now, where the option is read
        self.only = rows
        self.control = tuple(n for n in names if n in CONTROL) if names else CONTROL

    def build(self, *inputs, nodes, outputs):
        """The outputs of the graph described by ``nodes``/``outputs`` on ``inputs``."""
        by_name = {r.name: r for r in self._all()}
        pool = list(inputs)
        for name, operand_ids, params in nodes:
            pool.append(self.node(name, [pool[i] for i in operand_ids], params, by_name))
        return [pool[i] for i in outputs]

    def node(self, name: str, operands: list, params: tuple, by_name=None):
        """One node of a graph: a row's (see :func:`apply_node`) or a control node."""
        by_name = by_name or {r.name: r for r in self._all()}
        if name not in CONTROL:
            return apply_node(by_name[name], operands, params)
        import pytensor
        import pytensor.tensor as pt

        from converter.compat import lookup

        ifelse = lookup("ifelse")

        p = dict(params)

        def body(key, inner):
            (out,) = self.build(*inner, nodes=p[key], outputs=(p[f"{key}_result"],))
            return out

        if name == "scan_map":
            return pytensor.scan(lambda xt: body("body", [xt]), sequences=[operands[0]],
                                 return_updates=False)
        if name == "scan_accumulate":
            (h0,) = operands
            return pytensor.scan(lambda h: _fit(body("body", [h]), h), outputs_info=[h0],
                                 n_steps=p["steps"], return_updates=False)
        if name == "scan_fold":
            (x,) = operands
            hs = pytensor.scan(lambda xt, h: _fit(body("body", [h, xt]), h), sequences=[x],
                               outputs_info=[pt.zeros_like(x[0])], return_updates=False)
            return hs[-1]
        c, x = operands
        return ifelse(pt.neq(c, 0).any(), _fit(body("then", [x]), x),
                      _fit(body("else", [x]), x))

    def judges_zero_signs(self, case: Case) -> bool:
        """Whether a graph's zero signs are judged: when every node's row judges them, has
        no record on the graph's dtype and takes its operands unguarded. Guards select
        through Where, which returns a selected -0.0 as +0.0 in ONNX Runtime (a record of
        the switch row), and a recorded divergence may show as a zero's sign."""
        by_name = {r.name: r for r in self._all()}
        dtype = case.values[0].dtype.name
        for name, _, _ in walk(dict(case.params)["nodes"]):
            if name in CONTROL:  # not judged through loops and branches, for now
                return False
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
                 "from conformance.registries import graph_composer, row_named",
                 "from conformance.strategies.graphs import apply_node", ""]
        names = []
        for i, (value, stat) in enumerate(zip(case.values, case.static, strict=True)):
            names.append(f"x{i}")
            lines.append(f'x{i} = pt.tensor("x{i}", dtype="{value.dtype}", '
                         f'shape={tuple(stat)!r})')
        for k, (name, operand_ids, node_params) in enumerate(params["nodes"]):
            args = ", ".join(names[i] for i in operand_ids)
            call = (f'graph_composer().node("{name}"' if name in CONTROL
                    else f'apply_node(row_named("{name}")')
            lines.append(f'v{k} = {call}, [{args}], {node_params!r})')
            names.append(f"v{k}")
        lines.append(f"outputs = [{', '.join(names[i] for i in params['outputs'])}]")
        return "\n".join(lines)

    def cases(self, dtype: str, *, min_nodes: int = 1, max_nodes: int = 6,
              max_inputs: int = 3, only: Sequence[str] | None = None):
        """A strategy of ``Case`` holding a random graph over ``dtype`` inputs (see the
        module docstring); ``only`` limits the rows used and leaves control nodes out
        (default: the restricted set and control kinds)."""
        _validate(min_nodes, max_nodes, max_inputs)
        rows = self.rows(self.only if only is None else tuple(only))
        if not any(_usable(r, node_spec(r), dtype, None, self.judged) for r in rows):
            raise ValueError(f"no composable row supports {dtype} without a recorded "
                             "divergence")
        # rows named here (not by restrict) are exactly the graph's: no control node
        control = self.control if only is None and dtype in CONTROL_DTYPES else ()
        odds = ASKED_ODDS if control and control != CONTROL else CONTROL_ODDS
        drawn = _Rows(rows)
        drawn.judged = self.judged
        return _graph_cases(dtype, drawn, min_nodes, max_nodes, max_inputs,
                            control, self, odds)


class _Rows(tuple):
    """The rows a graph strategy draws from, shown by name (Hypothesis prints arguments),
    and the backends whose records keep a row out (``Composer.judged``)."""

    judged: frozenset[str] | None = None

    def __repr__(self) -> str:
        return f"rows({', '.join(r.name for r in self)})"


@st.composite
def _graph_cases(draw, dtype: str, rows, min_nodes: int, max_nodes: int, max_inputs: int,
                 control: tuple = (), composer: Composer | None = None,
                 odds: int = CONTROL_ODDS):
    import pytensor.tensor as pt

    specs = {r.name: node_spec(r) for r in rows}
    n_inputs = draw(st.integers(1, max_inputs))
    shapes, static = draw(broadcast_shapes(n_inputs, max_rank=2))
    values = tuple(draw(arrays(dtype, shape)) for shape in shapes)
    pool = [pt.tensor(f"x{i}", dtype=dtype, shape=s) for i, s in enumerate(static)]
    sizes = [tuple(shape) for shape in shapes]  # the concrete shape of each pool value
    nodes = _draw_nodes(draw, rows, specs, pool, sizes, min_nodes, max_nodes, control,
                        composer, odds)
    computed = list(range(n_inputs, len(pool)))
    if not computed:
        draw(st.nothing())
    extra = draw(st.lists(st.sampled_from(computed), max_size=2, unique=True))
    outputs = tuple(dict.fromkeys([computed[-1], *extra]))
    nodes, outputs = _prune(n_inputs, nodes, outputs)
    return Case(values, static, (("nodes", nodes), ("outputs", outputs)))


def _draw_nodes(draw, rows, specs, pool: list, sizes: list, min_nodes: int, max_nodes: int,
                control: tuple = (), composer: Composer | None = None,
                odds: int = CONTROL_ODDS) -> list:
    """Nodes drawn onto ``pool`` (the values so far, ``sizes`` their concrete shapes),
    both extended in place; a node is a control node once in ``odds`` where one fits."""
    nodes = []
    for k in range(max_nodes):
        # A "one more?" flag per node, as Hypothesis' own lists do: deleting one node is then
        # one contiguous deletion, which the shrinker finds, even from the middle of a chain.
        if k >= min_nodes and draw(st.integers(0, 3)) == 0:  # go on 3 times in 4
            break
        # the highest draw picks control, so that shrinking leads toward plain rows
        if control and draw(st.integers(0, odds - 1)) == odds - 1:
            node = _draw_control(draw, rows, specs, pool, sizes, control, composer)
            if node is not None:
                nodes.append(node)
                continue
        node = _draw_row_node(draw, rows, specs, pool, sizes)
        if node is None:  # only with a few rows (--graph-ops): none takes these operands
            break
        nodes.append(node)
    return nodes


def _draw_row_node(draw, rows, specs, pool: list, sizes: list):
    from pytensor.scalar import upcast

    judged = getattr(rows, "judged", None)

    def usable(row, i):
        return _usable(row, specs[row.name], pool[i].type.dtype, sizes[i], judged)

    fits = [r for r in rows if any(usable(r, i) for i in range(len(pool)))]
    if not fits:
        return None
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
    if not _usable(row, spec, common, None, judged):
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
    return row.name, tuple(operand_ids), params


def _draw_body(draw, rows, specs, inner: list, inner_sizes: list, key: str, like: int | None):
    """A body over the placeholder values ``inner``: its params (its nodes, which value is
    its result: the newest that can stand for ``inner[like]``, the newest of all for None)
    and the result's shape."""
    nodes = _draw_nodes(draw, rows, specs, inner, inner_sizes, 0, MAX_BODY_NODES)
    result = (len(inner) - 1 if like is None
              else _results(inner, inner_sizes, like)[-1])
    size = inner_sizes[result]
    nodes, (result,) = _prune(len(inner) - len(nodes), nodes, (result,))
    return ((key, nodes), (f"{key}_result", result)), size


def _draw_control(draw, rows, specs, pool: list, sizes: list, control: tuple, composer):
    """A control node on pool values, or None where its kind takes none of them."""
    import pytensor.tensor as pt

    kind = draw(st.sampled_from(control))
    eligible = _control_operands(kind, sizes)
    if not eligible:
        return None
    x = draw(st.one_of(st.just(eligible[-1]), st.sampled_from(eligible)))
    var, size = pool[x], sizes[x]

    def placeholders(*shapes):
        return ([pt.tensor(dtype=var.type.dtype, shape=s) for s, _ in shapes],
                [z for _, z in shapes])

    item = (var.type.shape[1:], size[1:])
    whole = (var.type.shape, size)
    if kind == "scan_map":
        params, result = _draw_body(draw, rows, specs, *placeholders(item), "body", None)
        operand_ids, out_size = (x,), (size[0], *result)
    elif kind == "scan_accumulate":
        steps = draw(st.integers(1, MAX_SCAN_STEPS))
        params, _ = _draw_body(draw, rows, specs, *placeholders(whole), "body", 0)
        params, operand_ids, out_size = (*params, ("steps", steps)), (x,), (steps, *size)
    elif kind == "scan_fold":
        params, _ = _draw_body(draw, rows, specs, *placeholders(item, item), "body", 0)
        operand_ids, out_size = (x,), size[1:]
    else:
        c = draw(st.sampled_from(range(len(pool))))
        then, _ = _draw_body(draw, rows, specs, *placeholders(whole), "then", 0)
        other, _ = _draw_body(draw, rows, specs, *placeholders(whole), "else", 0)
        params, operand_ids, out_size = (*then, *other), (c, x), size
    pool.append(composer.node(kind, [pool[i] for i in operand_ids], params))
    sizes.append(tuple(out_size))
    return kind, operand_ids, params
