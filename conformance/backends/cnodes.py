"""A graph the whole-graph C linker cannot take, batched node by node.

Some graphs have a node without C code (Repeat, ArgSort), or scalar variables (the indices of
a Subtensor, the shape arithmetic around it), and conformance.backends.cbatch cannot put them in a
whole-graph module. cvm runs such a graph node by node anyway: each node with C code is a
module of its own, compiled for its op, dtypes and layout, so a random graph of forty nodes
costs forty modules at each dtype.

:func:`split` lets the batch take those nodes one at a time instead. Every node that the
whole-graph linker can compile on its own becomes a one-node batch member (its inputs are the
member's inputs; in the whole-graph module, as in cvm, they are real inputs), and in the
graph cvm compiles it is replaced by a :class:`FromBatch` node that runs it there: the same C
code on the same inputs. The other nodes stay where they are, run by cvm as before.

Not split: float16 nodes (see ``cbatch._batchable``) and nodes that destroy an input. In a
rewritten graph (``pytensor-c-opt``) views stay too: FromBatch hands out copies, and a copy
where the rewrites made a view could hide an aliasing bug of their inplace ops.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Sequence

import numpy as np


def call(fn, values) -> list[np.ndarray]:
    """``fn`` on copies of ``values``, its results copied (a batch feeds the same fillers
    again and again), floating-point warnings silenced: the results are what is judged."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return [np.array(o, copy=True) for o in fn(*[v.copy() for v in values])]


def _compiles_alone(node) -> bool:
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.c.basic import CLinker
    from pytensor.tensor.type import TensorType

    variables = (*node.inputs, *node.outputs)
    if not all(isinstance(v.type, TensorType) and v.type.dtype != "float16" for v in variables):
        return False
    if getattr(node.op, "destroy_map", None):
        return False
    fresh = [v.type() for v in node.inputs if not _constant(v)]
    inputs = iter(fresh)
    clone = node.clone_with_new_inputs([v if _constant(v) else next(inputs) for v in node.inputs])
    try:  # generating the source is cheap; compiling is what costs
        CLinker().accept(FunctionGraph(fresh, clone.outputs, clone=True)).code_gen()
    # an op without C code says so with one of several exception types
    except Exception:  # noqa: BLE001
        return False
    return True


def _constant(variable) -> bool:
    from pytensor.graph.basic import Constant

    return isinstance(variable, Constant)


def _tracer(inputs: list, variables: list, rewritten: bool):
    """A Python function giving ``variables``' values (inner graphs run by Python too: the
    values only fill the batch, and must cost no C module of their own)."""
    import pytensor
    from pytensor.compile.mode import Mode

    from conformance.compile.innergraphs import without_inner_rewrites

    return pytensor.function(inputs, without_inner_rewrites(variables, "py"),
                             mode=Mode(linker="py", optimizer=None), on_unused_input="ignore",
                             accept_inplace=rewritten)


def _make_op():
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class FromBatch(Op):
        """One node's outputs, computed by its C code in a batch module (``run(key, values)``).
        cvm runs it in Python; equal only to itself, so nothing merges two of them."""

        def __init__(self, run: Callable, key: Hashable, types: Sequence):
            self.run, self.key, self.types = run, key, list(types)

        def make_node(self, *inputs):
            return Apply(self, list(inputs), [t() for t in self.types])

        def perform(self, node, inputs, output_storage):
            results = self.run(self.key, [np.asarray(v) for v in inputs])
            for storage, value in zip(output_storage, results, strict=True):
                storage[0] = value

        def __str__(self):
            return f"FromBatch{{{self.key[-1]}}}"

    return FromBatch


def split(member, run: Callable, nodes: list, rewritten: bool):
    """``member`` as (the graph cvm compiles, one-node batch members), or None when no node
    can be batched or the member's own values cannot be traced through its graph. ``run`` is
    the batch's ``run``; ``nodes`` the member's nodes in topological order."""
    from pytensor.graph.basic import Constant

    chosen = [n for n in nodes if (not rewritten or not getattr(n.op, "view_map", None))
              and _compiles_alone(n)]
    if not chosen:
        return None
    traced = list(dict.fromkeys(v for n in chosen for v in n.inputs
                                if not isinstance(v, Constant)))
    try:  # the values each node sees on the member's own inputs: its filler in the batch
        seen = dict(zip(traced, call(_tracer(member.inputs, traced, rewritten),
                                      member.values), strict=True)) if traced else {}
    # the member raises on its own values: it is run as a whole, as before
    except Exception:  # noqa: BLE001
        return None
    from_batch = _make_op()
    parts, memo = [], {v: v for v in member.inputs}
    picked = set(chosen)
    for position, node in enumerate(nodes):
        inputs = [memo.get(v, v) for v in node.inputs]
        if node not in picked:
            memo.update(zip(node.outputs, node.clone_with_new_inputs(inputs).outputs,
                            strict=True))
            continue
        key = (member.key, "node", position)
        variable = [v for v in node.inputs if not isinstance(v, Constant)]
        fresh = [v.type() for v in variable]
        replace = dict(zip(variable, fresh, strict=True))
        alone = node.clone_with_new_inputs([replace.get(v, v) for v in node.inputs])
        parts.append(type(member)(key, fresh, list(alone.outputs), [seen[v] for v in variable]))
        op = from_batch(run, key, [o.type for o in node.outputs])
        outputs = op(*[memo.get(v, v) for v in variable], return_list=True)
        memo.update(zip(node.outputs, outputs, strict=True))
    outer = type(member)(member.key, list(member.inputs), [memo.get(o, o) for o in member.outputs],
                   member.values)
    return outer, parts
