"""Control flow: IfElse -> ONNX If, Scan -> ONNX Loop.

Both need ONNX subgraphs. A subgraph is emitted through ``Context.subgraph()``: PyTensor
values already converted are read from the outer scope by name, and constants stay
initializers of the main graph. Laziness of ``If`` comes from a pass over the finished
node list (``_sink``, registered in ``NODE_PASSES``; Loop bodies and branches get it when
they are built): a node whose outputs only one branch of one ``If`` reads is moved into
that branch, recursively, so the untaken branch computes nothing.
"""

from __future__ import annotations

import numpy as np
from onnx import helper
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.scalar import Add
from pytensor.scan.op import Scan
from pytensor.tensor.basic import AllocEmpty, get_underlying_scalar_constant_value
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.subtensor import IncSubtensor

from converter import compat
from converter._core import (
    NODE_PASSES,
    Context,
    _check_node_types,
    _check_variable_type,
    convert_op,
    onnx_dtype,
)
from converter.errors import ConversionError, UnsupportedOpError

IfElse = compat.lookup("IfElse")

# -- subgraphs -----------------------------------------------------------------------


def emit(ctx: Context, inputs, outputs) -> list[str]:
    """Convert the nodes between ``inputs`` (already bound in ``ctx``) and ``outputs``;
    return the outputs' names."""
    for node in compat.lookup("io_toposort")(list(inputs), list(outputs)):
        _check_node_types(node)
        for var in node.inputs:
            if isinstance(var, SharedVariable) and var not in ctx._names:
                _check_variable_type(var, "shared variable")
                value = np.asarray(var.get_value(borrow=True), dtype=var.type.dtype)
                ctx.bind(var, ctx.constant(value, hint=var.name or "shared"))
        names = list(convert_op(node.op, ctx, node))
        if len(names) != len(node.outputs):
            raise ConversionError(f"rule for {node.op} returned {len(names)} outputs, "
                                  f"expected {len(node.outputs)}")
        for var, name in zip(node.outputs, names, strict=True):
            ctx.bind(var, name)
    return [ctx.name_of(v) for v in outputs]


def value_info(name: str, dtype, ndim: int):
    """A subgraph input or output: its dtype and rank (dimensions left unknown)."""
    return helper.make_tensor_value_info(name, onnx_dtype(dtype), [None] * ndim)


def graph(sub: Context, name: str, inputs, outputs):
    """The GraphProto of ``sub``'s nodes; ``outputs`` are ``(name, dtype, ndim)``. An output
    that no node of ``sub`` computes (an input or an outer value), or that is listed twice,
    goes through an Identity, since a graph's outputs must be distinct values of its own."""
    own = {out for node in sub.nodes for out in node.output}
    infos = []
    for out, dtype, ndim in outputs:
        if out not in own:
            out = sub.add("Identity", [out])
        own.discard(out)
        infos.append(value_info(out, dtype, ndim))
    nodes = _sink(sub.nodes, {i.name for i in infos})
    return helper.make_graph(nodes, sub.fresh(name), inputs, infos)


# -- IfElse ----------------------------------------------------------------------------


@convert_op.register(IfElse)
def _ifelse(op, ctx: Context, node):
    """``ifelse(cond, then..., else...)`` -> ``If`` with one subgraph per branch.

    PyTensor takes a scalar condition of any dtype and tests its truth (``x != 0``, so nan
    is true); ONNX ``If`` needs a bool, so other dtypes are compared with zero first. Both
    are lazy: the nodes that only one branch needs are moved into that branch's subgraph
    (``_sink``), a node that both branches or the rest of the graph need is
    computed before the ``If``, as PyTensor's lazy VM would compute it anyway. The two
    branches of one output may have different shapes (the dtype and rank agree): ONNX
    allows that, and the output's shape is the taken branch's.
    """
    cond = node.inputs[0]
    if cond.type.ndim != 0:
        raise UnsupportedOpError(op, [i.type for i in node.inputs], "condition is not a scalar")
    test = ctx.cast(ctx.name_of(cond), cond.type.dtype, "bool")
    n = op.n_outs
    branches = {}
    sides = (("then_branch", node.inputs[1:1 + n]), ("else_branch", node.inputs[1 + n:]))
    for key, values in sides:
        sub = ctx.subgraph()
        outs = [(ctx.name_of(v), out.type.dtype, out.type.ndim)
                for v, out in zip(values, node.outputs, strict=True)]
        branches[key] = graph(sub, key, [], outs)
    outs = ctx.add("If", [test], n_out=n, hint="if", **branches)
    return [outs] if n == 1 else outs


def _lazy_ifelse(op, ctx: Context, node):
    """PyTensor 3.3's LazyIfElse(cond, *inputs): each branch an OpFromGraph of the same
    inputs, only the taken one computed. -> ``If`` whose subgraphs convert the branches'
    inner graphs, reading the node's inputs from the outer scope (the condition is tested
    for truth as IfElse's)."""
    cond, *inputs = node.inputs
    if cond.type.ndim != 0:
        raise UnsupportedOpError(op, [i.type for i in node.inputs], "condition is not a scalar")
    test = ctx.cast(ctx.name_of(cond), cond.type.dtype, "bool")
    branches = {}
    for key, branch in (("then_branch", op.true_branch), ("else_branch", op.false_branch)):
        sub = ctx.subgraph()
        inner = branch.fgraph
        for var, outer in zip(inner.inputs, inputs, strict=True):
            sub.bind(var, ctx.name_of(outer))
        names = emit(sub, inner.inputs, inner.outputs)
        outs = [(name, out.type.dtype, out.type.ndim)
                for name, out in zip(names, node.outputs, strict=True)]
        branches[key] = graph(sub, key, [], outs)
    n = len(node.outputs)
    outs = ctx.add("If", [test], n_out=n, hint="if", **branches)
    return [outs] if n == 1 else outs


for _cls in compat.present("LazyIfElse"):  # PyTensor 3.3's rewrites build it
    convert_op.register(_cls)(_lazy_ifelse)


# -- moving branch-only nodes into their branch -----------------------------------------


def _refs(g) -> set[str]:
    """Every name read inside GraphProto ``g``, at any depth."""
    names = {o.name for o in g.output}
    for node in g.node:
        names.update(node.input)
        for attr in node.attribute:
            for sub in (attr.g, *attr.graphs) if attr.HasField("g") else attr.graphs:
                names |= _refs(sub)
    return names


def _reads(node) -> set[str]:
    names = set(node.input)
    for attr in node.attribute:
        for sub in (attr.g, *attr.graphs) if attr.HasField("g") else attr.graphs:
            names |= _refs(sub)
    return names


def _sink(nodes, keep: set[str]) -> list:
    """``nodes`` with every node whose outputs only one ``If`` branch reads moved into
    that branch (names are unique across scopes, so a name read anywhere inside a
    branch is that branch's). Runs again inside each branch, for nested ``If``s."""
    readers: dict[str, list[int]] = {}
    for j, node in enumerate(nodes):
        for name in _reads(node):
            readers.setdefault(name, []).append(j)
    branch_refs = {}
    for j, node in enumerate(nodes):
        if node.op_type == "If":
            branch_refs[j] = {a.name: _refs(a.g) for a in node.attribute}
    home: dict[int, tuple[int, str]] = {}  # moved node -> (If node, branch)
    for j in reversed(range(len(nodes))):
        outs = [o for o in nodes[j].output if o]
        if any(o in keep for o in outs):
            continue
        targets = set()
        for out in outs:
            for r in readers.get(out, ()):
                targets.add(_where(nodes, r, out, home, branch_refs))
        if len(targets) == 1 and None not in targets:
            home[j] = targets.pop()
    moved: dict[tuple[int, str], list] = {}
    for j in sorted(home):
        moved.setdefault(home[j], []).append(nodes[j])
    for j, refs in branch_refs.items():
        for attr in nodes[j].attribute:
            if attr.name not in refs:
                continue
            g = attr.g
            body = moved.get((j, attr.name), []) + list(g.node)
            body = _sink(body, {o.name for o in g.output})
            del g.node[:]
            g.node.extend(body)
    return [node for j, node in enumerate(nodes) if j not in home]


def _where(nodes, r: int, name: str, home, branch_refs):
    """The branch ``(If index, attribute)`` that node ``r``'s read of ``name`` belongs to,
    or None when it is read outside every branch."""
    if r in home:
        return home[r]
    if r in branch_refs and name not in nodes[r].input:
        inside = [key for key, refs in branch_refs[r].items() if name in refs]
        if len(inside) == 1:
            return (r, inside[0])
    return None


NODE_PASSES.append(lambda nodes: _sink(nodes, set()))


# -- Scan ------------------------------------------------------------------------------

INT64_MAX = np.iinfo(np.int64).max


def _i64(ctx: Context, value) -> str:
    return ctx.constant(np.asarray(value, dtype=np.int64), hint="i64")


def _vec(ctx: Context, scalar: str) -> str:
    return ctx.add("Unsqueeze", [scalar, _i64(ctx, [0])])


def _length(ctx: Context, name: str) -> str:
    """Length of ``name`` along axis 0, as a 0-d int64."""
    return ctx.add("Squeeze", [ctx.add("Shape", [name], start=0, end=1), _i64(ctx, [0])])


def _static_length(var):
    if var.type.shape[0] is not None:
        return var.type.shape[0]
    return _constant(var.shape[0])


def _holds_every_step(buffer, n_steps, depth: int) -> bool:
    """Whether ``buffer`` is built as ``pytensor.scan`` builds it: ``depth`` initial
    entries set into an empty buffer of ``n_steps + depth``, so that it ends holding the
    whole history (a while loop's shortened by the steps it did not run) in order."""

    node = buffer.owner
    if node is None or not isinstance(node.op, IncSubtensor) or not node.op.set_instead_of_inc:
        return False
    alloc = node.inputs[0].owner
    if alloc is None or not isinstance(alloc.op, AllocEmpty):
        return False
    add = alloc.inputs[0].owner
    if (add is None or not isinstance(add.op, Elemwise) or not isinstance(add.op.scalar_op, Add)
            or len(add.inputs) != 2):
        return False
    for steps, extra in (add.inputs, add.inputs[::-1]):
        if steps is n_steps and _constant(extra) == depth:
            return True
    return False


def _constant(var):
    try:
        return int(get_underlying_scalar_constant_value(var))
    except NotScalarConstantError:
        return None


class _Layout:
    """A Scan node's outer inputs and outputs and its inner inputs and outputs, by kind
    (``pytensor/scan/op.py``: ScanInfo)."""

    def __init__(self, op, node):
        info = op.info
        untraced = getattr(info, "n_untraced_sit_sot", None)
        if untraced is None:  # PyTensor 2.x
            untraced = info.n_shared_outs
        outer, inner = list(node.inputs), list(op.fgraph.inputs)
        outs = list(op.fgraph.outputs)

        def take(items, k):
            taken = items[:k]
            del items[:k]
            return taken

        self.n_steps = outer.pop(0)
        self.seqs = take(outer, info.n_seqs)
        self.mit_mot = take(outer, len(info.mit_mot_in_slices))
        self.taps = take(outer, len(info.mit_sot_in_slices) + len(info.sit_sot_in_slices))
        self.untraced = take(outer, untraced)
        self.nit_sizes = take(outer, info.n_nit_sot)
        self.non_seqs = outer
        self.in_seqs = take(inner, info.n_seqs)
        self.in_mit_mot = [take(inner, len(s)) for s in info.mit_mot_in_slices]
        self.tap_slices = list(info.mit_sot_in_slices) + list(info.sit_sot_in_slices)
        self.in_taps = [take(inner, len(s)) for s in self.tap_slices]
        self.in_untraced = take(inner, untraced)
        self.in_non_seqs = inner
        self.out_mit_mot = [take(outs, len(s)) for s in info.mit_mot_out_slices]
        self.out_taps = take(outs, len(self.tap_slices))
        self.out_nit = take(outs, info.n_nit_sot)
        self.out_untraced = take(outs, untraced)
        self.until = outs[0] if info.as_while else None
        self.info = info
        self.inner_inputs, self.inner_outputs = list(op.fgraph.inputs), list(op.fgraph.outputs)


@convert_op.register(Scan)
def _scan(op, ctx: Context, node):
    """``Scan`` -> ``Loop``, run for ``n_steps`` steps (stopping after the step whose
    ``until`` condition holds, for a while loop: both include that step's outputs).

    The outer buffers hold the initial taps then the outputs; after ``scan_save_mem`` a
    buffer may be shorter than the history (a circular buffer: PyTensor returns its last
    ``len`` entries, oldest first) or longer (the rest zeros, minus the steps a while loop
    did not run). Recurrent values (sit-sot, mit-sot of any tap depth) are loop-carried,
    one per lag; the history a buffer keeps is collected as ONNX scan outputs, flattened
    per step (ONNX's reference evaluator stacks scan outputs with ``np.vstack``, right for
    1-d values only) and reshaped after the loop. Gradient buffers (mit-mot) are carried
    whole and updated with ScatterND at PyTensor's positions. Sequences are read with
    Gather at the iteration number, non-sequences from the outer scope.

    Where the semantics differ: with zero steps PyTensor returns the recurrent buffers as
    given, and a buffer's unused tail is uninitialised memory, zeros here. A per-step
    output of zero steps has shape ``(0,) * ndim`` in PyTensor, whatever its static shape
    says; here its static dimensions are kept (``(0, 2)`` for a ``(None, 2)`` output).
    PyTensor raises on a negative ``n_steps`` or a sequence shorter than ``n_steps``; ONNX
    ``Loop`` runs no step for the first, and ONNX Runtime's Gather raises for the second,
    as for initial values shorter than the deepest tap.
    """
    lay = _Layout(op, node)
    types = [i.type for i in node.inputs]
    for var in (*node.inputs, *node.outputs):
        if not hasattr(var.type, "dtype") or var.type.dtype.startswith("complex"):
            raise UnsupportedOpError(op, types, f"{var} has type {var.type}; only real "
                                     "dense tensors can be loop values in ONNX")
    for taps in lay.tap_slices:
        if max(taps) >= 0:
            raise UnsupportedOpError(op, types, f"recurrent taps {taps} include a "
                                     "non-negative tap")
    body = ctx.subgraph()
    loop = _Loop(ctx, body, lay)
    loop.bind_inputs()
    emit(body, op.fgraph.inputs, op.fgraph.outputs)
    return loop.finish(op.name or "scan")


class _Loop:
    """Builds one Loop: its carried values, its scan outputs and the outer results."""

    def __init__(self, ctx: Context, body: Context, lay: _Layout):
        self.ctx, self.body, self.lay = ctx, body, lay
        self.it, self.cond = body.fresh("iter"), body.fresh("cond")
        self.inputs = [value_info(self.it, "int64", 0), value_info(self.cond, "bool", 0)]
        self.inits: list[str] = []
        self.carried_outs: list = []  # thunks, called once the inner graph is converted
        self.scan_outs: list = []
        self.n = ctx.cast(ctx.name_of(lay.n_steps), lay.n_steps.type.dtype, "int64")
        inner = compat.lookup("io_toposort")(lay.inner_inputs, lay.inner_outputs)
        self.used = {v for n in inner for v in n.inputs} | set(lay.inner_outputs)

    def carry(self, init: str, dtype, ndim: int, out, hint: str) -> str:
        """A loop-carried value starting at ``init``; ``out()`` names its next value."""
        name = self.body.fresh(hint)
        self.inputs.append(value_info(name, dtype, ndim))
        self.inits.append(init)
        self.carried_outs.append(lambda: (out(), dtype, ndim))
        return name

    def collect(self, out, dtype) -> int:
        """A scan output: ``out()``'s value of each step, flattened; returns its index."""
        body = self.body
        self.scan_outs.append(lambda: (body.add("Reshape", [out(), _i64(body, [-1])]), dtype, 1))
        return len(self.scan_outs) - 1

    # -- inputs of a step ----------------------------------------------------------------
    def bind_inputs(self) -> None:
        lay, ctx, body = self.lay, self.ctx, self.body
        for var, seq in zip(lay.in_seqs, lay.seqs, strict=True):
            if var in self.used:
                body.bind(var, body.add("Gather", [ctx.name_of(seq), self.it], axis=0))
        for var, outer in zip(lay.in_non_seqs, lay.non_seqs, strict=True):
            body.bind(var, ctx.name_of(outer))
        self.mit_mot = [self._bind_mit_mot(g) for g in range(len(lay.mit_mot))]
        self.lags = [self._bind_lags(k) for k in range(len(lay.taps))]
        self.first_untraced = len(self.inits)
        for k, (var, outer) in enumerate(zip(lay.in_untraced, lay.untraced, strict=True)):
            out = lay.out_untraced[k]
            name = self.carry(ctx.name_of(outer), outer.type.dtype, outer.type.ndim,
                              lambda out=out: body.name_of(out), "state")
            body.bind(var, name)
        self.nit = []
        for out in lay.out_nit:
            # the shape of zero steps' output: PyTensor's is (0,) * ndim, contradicting
            # its own static shape where that is known; the static one is kept
            dims = [0 if d is None else d for d in out.type.shape]
            self.carry(_i64(ctx, dims), "int64", 1,
                       lambda out=out: body.add("Shape", [body.name_of(out)]), "shape")
            scan = self.collect(lambda out=out: body.name_of(out), out.type.dtype)
            self.nit.append((len(self.inits) - 1, scan))
        self.counter = None
        if lay.until is not None:
            self.counter = len(self.inits)
            self.carry(_i64(ctx, 0), "int64", 0,
                       lambda: body.add("Add", [self.it, _i64(body, 1)]), "steps")

    def _position(self, buf_len: str, shift: int) -> str:
        """``(iteration + shift) mod len``, PyTensor's index into a circular buffer."""
        body = self.body
        return body.add("Mod", [body.add("Add", [self.it, _i64(body, shift)]), buf_len])

    def _bind_mit_mot(self, g: int):
        lay, ctx, body = self.lay, self.ctx, self.body
        outer = lay.mit_mot[g]
        in_taps, out_taps = lay.info.mit_mot_in_slices[g], lay.info.mit_mot_out_slices[g]
        buf_len = _length(ctx, ctx.name_of(outer))
        low = min(in_taps)
        state = {}

        def written():
            # PyTensor writes a tap through its input's view of the buffer, whose index wraps
            # like a read's: only a scan with fewer buffer rows than its taps span (PyTensor
            # 2.38's rewritten gradient of a zero-step scan) ever wraps
            buf = state["buf"]
            for tap, out in zip(out_taps, lay.out_mit_mot[g], strict=True):
                where = self._position(buf_len, tap - low)
                where = body.add("Reshape", [where, _i64(body, [1, 1])])
                value = body.add("Unsqueeze", [body.name_of(out), _i64(body, [0])])
                buf = body.add("ScatterND", [buf, where, value])
            return buf

        state["buf"] = self.carry(ctx.name_of(outer), outer.type.dtype, outer.type.ndim,
                                  written, "grad_buffer")
        for tap, var in zip(in_taps, lay.in_mit_mot[g], strict=True):
            if var in self.used:
                index = self._position(buf_len, tap - low)
                body.bind(var, body.add("Gather", [state["buf"], index], axis=0))
        return len(self.inits) - 1

    def _bind_lags(self, k: int):
        """Carried values for a recurrent output of taps ``-K..-1``: lag j holds the
        output of j steps ago; each step shifts them by one (no node: renaming)."""
        lay, ctx, body = self.lay, self.ctx, self.body
        outer, out = lay.taps[k], lay.out_taps[k]
        taps = lay.tap_slices[k]
        depth = -min(taps)
        buf = ctx.name_of(outer)
        names = []
        for lag in range(1, depth + 1):
            init = ctx.add("Gather", [buf, _i64(ctx, depth - lag)], axis=0)
            nxt = ((lambda: body.name_of(out)) if lag == 1
                   else (lambda lag=lag: names[lag - 2]))
            names.append(self.carry(init, out.type.dtype, out.type.ndim, nxt, "lag"))
        for tap, var in zip(taps, lay.in_taps[k], strict=True):
            body.bind(var, names[-tap - 1])
        first = len(self.inits) - depth
        keeps_history = _static_length(outer) != depth
        scan = self.collect(lambda: body.name_of(out), out.type.dtype) if keeps_history else None
        return first, depth, scan

    # -- the Loop node and the outer results ------------------------------------------
    def finish(self, name: str) -> list[str]:
        ctx, body, lay = self.ctx, self.body, self.lay
        if lay.until is None:
            cond_out = self.cond
        elif lay.until.type.dtype == "bool":
            cond_out = body.add("Not", [body.name_of(lay.until)])
        else:
            zero = body.constant(np.zeros((), dtype=lay.until.type.dtype))
            cond_out = body.add("Equal", [body.name_of(lay.until), zero])
        outs = [(cond_out, "bool", 0)]
        outs += [thunk() for thunk in self.carried_outs]
        outs += [thunk() for thunk in self.scan_outs]
        g = graph(body, f"{name}_body", self.inputs, outs)
        n_carried = len(self.inits)
        true = ctx.constant(np.bool_(True))
        results = ctx.add("Loop", [self.n, true, *self.inits], n_out=len(outs) - 1,
                          hint="loop", body=g)
        results = [results] if len(outs) == 2 else list(results)
        finals, scans = results[:n_carried], results[n_carried:]
        steps = self.n if self.counter is None else finals[self.counter]
        named = [finals[g] for g in self.mit_mot]
        for (first, depth, scan), outer in zip(self.lags, lay.taps, strict=True):
            if scan is None:  # the buffer keeps the last ``depth`` values: the lags
                lags = [ctx.add("Unsqueeze", [finals[first + j], _i64(ctx, [0])])
                        for j in reversed(range(depth))]
                named.append(lags[0] if depth == 1 else ctx.add("Concat", lags, axis=0))
                continue
            buf = ctx.name_of(outer)
            ys = self._stacked(scans[scan], ctx.add("Shape", [buf], start=1), steps)
            start = ctx.add("Slice", [buf, _i64(ctx, [0]), _i64(ctx, [depth]), _i64(ctx, [0])])
            history = ctx.add("Concat", [start, ys], axis=0)
            total = ctx.add("Add", [steps, _i64(ctx, depth)])
            if not _holds_every_step(outer, lay.n_steps, depth):
                history = self._fit(history, total, _length(ctx, buf), steps, outer.ndim)
            named.append(history)
        for (shape, scan), size, out in zip(self.nit, lay.nit_sizes, lay.out_nit, strict=True):
            ys = self._stacked(scans[scan], finals[shape], steps)
            store = ctx.cast(ctx.name_of(size), size.type.dtype, "int64")
            if size is not lay.n_steps:
                ys = self._fit(ys, steps, store, steps, out.type.ndim + 1, per_step=True)
            named.append(ys)
        named += finals[self.first_untraced:self.first_untraced + len(lay.untraced)]
        return named

    def _stacked(self, flat: str, shape: str, steps: str) -> str:
        """The collected ``[steps, size]`` values as ``[steps, *shape]`` (a zero in
        ``shape`` is a length, not a copy of the input's)."""
        ctx = self.ctx
        target = ctx.add("Concat", [_vec(ctx, steps), shape], axis=0)
        return ctx.add("Reshape", [flat, target], allowzero=1)

    def _fit(self, history: str, total: str, store: str, steps: str, ndim: int,
             per_step: bool = False) -> str:
        """What PyTensor leaves in a buffer of ``store`` entries after writing the
        ``total`` entries of ``history`` in a circle: the last ``store`` of them, oldest
        first, then zeros; a while loop's output loses the steps it did not run."""
        ctx = self.ctx
        zero = _i64(ctx, 0)
        start = ctx.add("Max", [ctx.add("Sub", [total, store]), zero])
        kept = ctx.add("Slice", [history, _vec(ctx, start), _i64(ctx, [INT64_MAX]),
                                 _i64(ctx, [0])])
        pad = ctx.add("Max", [ctx.add("Sub", [store, total]), zero])
        if per_step:  # zero steps: PyTensor returns an empty output whatever its size
            pad = ctx.add("Where", [ctx.add("Greater", [self.n, zero]), pad, zero])
        pads = ctx.add("Concat", [_i64(ctx, [0] * ndim), _vec(ctx, pad),
                                  _i64(ctx, [0] * (ndim - 1))], axis=0)
        out = ctx.add("Pad", [kept, pads])
        if self.counter is None:
            return out
        unrun = ctx.add("Sub", [self.n, steps])
        length = ctx.add("Where", [ctx.add("Greater", [store, total]),
                                   ctx.add("Sub", [store, unrun]), store])
        length = ctx.add("Max", [length, zero])
        return ctx.add("Slice", [out, _i64(ctx, [0]), _vec(ctx, length), _i64(ctx, [0])])
