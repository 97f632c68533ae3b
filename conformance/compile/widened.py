"""A PyTensor graph rebuilt with narrow float dtypes computed in wider ones: what a backend
that widens (``Semantics.widens``) computes, taken from PyTensor itself, never from the
converted model, so that a converter's mistake is never excused by its own model.

ONNX Runtime's CPU provider has few float16 kernels: it casts a node's float16 operands to
float32 and its results back, then drops the Cast pairs between consecutive such nodes, so a
chain of float16 nodes runs in float32 and is rounded to float16 once, where it ends. The
rebuild does that to the whole graph: its narrow inputs become wide ones holding the same
values, every node is made again on the wide operands (a Composite's scalar graph is rebuilt
the same way, an op that names the narrow dtype is told the wide one), and each narrow output
is cast back at the end. An explicit cast to the narrow dtype still rounds, then widens: ONNX
Runtime keeps such a Cast (measured on 1.32: int16 2049 cast to float16 is 2048, and float32
300 * 300 cast to float16 is inf, before a float16 Mul or Div that runs in float32).

An op that cannot be made again so (it fails to, or still returns the narrow dtype, as an
inner graph does) leaves no rebuilt graph: the backend is then judged as any other.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import numpy as np

from converter import compat

io_toposort = compat.lookup("io_toposort")

#: narrow dtype -> the dtype it is computed in
Widths = Mapping[str, str]


class CannotWiden(Exception):
    """An op of the graph cannot be rebuilt on the wide dtypes."""


def widened(inputs: Sequence, outputs: Sequence, widths: Widths) -> tuple[list, list] | None:
    """``(inputs, outputs)`` of the graph rebuilt with every dtype of ``widths`` computed in
    the one it maps to, its narrow outputs left wide (:func:`rounded` rounds them); None
    where some op cannot be rebuilt."""
    try:
        return _rebuilt(inputs, outputs, widths)
    except CannotWiden:
        return None


def rounded(wide: Sequence[np.ndarray], dtypes: Sequence[str],
            reference: Sequence[np.ndarray] | BaseException) -> list[np.ndarray]:
    """The rebuilt graph's outputs rounded once to the graph's own ``dtypes``. A zero the wide
    graph computes exactly keeps the sign of the ``reference``'s zero there: widening changes
    a zero's sign only by rounding a nonzero value to zero, while which zero an op picks is
    the op's own (numpy's float32 maximum of opposite zeros picks the other one than its
    float16: the reference's quirk, not the width's)."""
    with np.errstate(over="ignore"):  # a result beyond the narrow range rounds to inf
        out = [w.astype(d) for w, d in zip(wide, dtypes, strict=True)]
    if isinstance(reference, BaseException) or len(reference) != len(out):
        return out
    for i, (w, r) in enumerate(zip(wide, reference, strict=True)):
        if out[i].dtype.kind == "f" and r.dtype == out[i].dtype and r.shape == w.shape:
            out[i] = np.where((w == 0) & (r == 0), r, out[i])
    return out


def widened_values(values: Sequence[np.ndarray], widths: Widths) -> list[np.ndarray]:
    """The inputs of the rebuilt graph, fresh arrays (a run may write to its inputs): each
    narrow one cast, exactly, to its wide dtype."""
    return [v.astype(widths.get(v.dtype.name, v.dtype)) for v in values]


def computes_narrow(inputs: Sequence, dtypes: Sequence[np.dtype], widths: Widths) -> bool:
    """Whether a graph with these inputs, computing these dtypes, has a dtype of ``widths``."""
    return any(_dtype(v) in widths for v in inputs) or any(
        np.dtype(d).name in widths for d in dtypes)


def _dtype(var) -> str:
    return getattr(var.type, "dtype", "")


def _rebuilt(inputs: Sequence, outputs: Sequence, widths: Widths) -> tuple[list, list]:
    """The graph made again node by node on wide inputs (tensor or scalar graphs alike)."""
    new = {v: _wide_variable(v, widths) if _dtype(v) in widths else v for v in inputs}
    for node in io_toposort(list(inputs), list(outputs)):
        operands = [new[v] if v in new else _outer(v, widths) for v in node.inputs]
        try:
            if _narrowing_cast(node.op, widths):
                remade = [_widen(node.op.make_node(*operands).outputs[0], widths)]
            elif _must_remake(node, operands, widths):
                remade = _retyped_op(node.op, widths).make_node(*operands).outputs
            else:
                remade = node.outputs
        # an op that checks its operands' types (an inner graph's) refuses the wide ones
        except Exception as exc:
            raise CannotWiden(f"{node.op} cannot take the wide operands: {exc}") from exc
        for old, out in zip(node.outputs, remade, strict=True):
            if _dtype(out) != widths.get(_dtype(old), _dtype(old)):
                raise CannotWiden(f"{node.op} gives {_dtype(out)} for {_dtype(old)}")
            new[old] = out
    return [new[v] for v in inputs], [new[v] if v in new else _outer(v, widths)
                                      for v in outputs]


def _must_remake(node, operands, widths: Widths) -> bool:
    """Whether the node must be made again: an operand was retyped, or the node makes a narrow
    value of wide or integer operands (a cast, a float16 ``zeros``)."""
    return any(a is not b for a, b in zip(node.inputs, operands, strict=True)) or any(
        _dtype(o) in widths for o in node.outputs)


def _narrowing_cast(op, widths: Widths) -> bool:
    import pytensor.scalar as ps

    scalar = getattr(op, "scalar_op", op)
    return isinstance(scalar, ps.Cast) and scalar.o_type.dtype in widths


def _widen(var, widths: Widths):
    import pytensor.scalar as ps
    import pytensor.tensor as pt

    cast = ps.cast if isinstance(var.type, ps.ScalarType) else pt.cast
    return cast(var, widths[_dtype(var)])


def _outer(var, widths: Widths):
    """A variable the graph takes without computing it (not an input): a constant, retyped
    if narrow."""
    from pytensor.graph.basic import Constant

    if not isinstance(var, Constant):
        raise CannotWiden(f"{var} is neither an input nor a constant")
    if _dtype(var) not in widths:
        return var
    return type(var)(_wide_type(var.type, widths), np.asarray(var.data).astype(
        widths[_dtype(var)]))


def _wide_variable(var, widths: Widths):
    return _wide_type(var.type, widths)(name=var.name)


def _wide_type(type_, widths: Widths):
    import pytensor.scalar as ps

    if isinstance(type_, ps.ScalarType):
        return ps.get_scalar_type(widths[type_.dtype])
    return type_.clone(dtype=widths[type_.dtype])


def _retyped_op(op, widths: Widths):
    """``op`` computing the wide dtypes: an Elemwise of its scalar op so retyped, a Composite
    with its scalar graph rebuilt, an op whose properties name a narrow dtype (a Sum's
    ``dtype``) with the wide one instead."""
    import pytensor.scalar as ps
    from pytensor.tensor.elemwise import Elemwise

    if isinstance(op, Elemwise):
        scalar = _retyped_op(op.scalar_op, widths)
        return op if scalar is op.scalar_op else Elemwise(scalar)
    if isinstance(op, ps.Composite):
        inner_inputs, inner_outputs = _rebuilt(op.fgraph.inputs, op.fgraph.outputs, widths)
        return ps.Composite(inner_inputs, inner_outputs)
    narrow = {name for name in getattr(op, "__props__", ())
              if isinstance(getattr(op, name), str) and getattr(op, name) in widths}
    if not narrow:
        return op
    retyped = copy.copy(op)
    for name in narrow:
        setattr(retyped, name, widths[getattr(op, name)])
    return retyped
