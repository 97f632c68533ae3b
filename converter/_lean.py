"""The last pass over a converted graph: the model computes the same values with fewer nodes.

Rules emit what their own op needs without looking at their neighbours, so the assembled
graph repeats itself. This pass, run once on the main graph before it is checked:

* drops ``Identity`` nodes (a rule's way to return its input) and renames their uses;
* emits a pure node once when another one has the same type, inputs and attributes
  (``Add``/``Mul`` of the same two inputs in either order count as the same: IEEE addition
  and multiplication commute exactly);
* folds a node whose inputs are all initializers into an initializer, for operators that
  only move, select or exactly convert values (``FOLDABLE``), evaluated by
  ``onnx.reference``: there is no arithmetic whose rounding could differ from ONNX
  Runtime's;
* renames the node computing a graph output to the output's name instead of copying it with
  an ``Identity`` (ONNX wants outputs to be node outputs, so an output that is a graph input
  or an initializer keeps its copy);
* drops nodes and initializers nothing reads.

Nodes holding subgraphs (If, Loop, Scan) are kept as they are; the names their bodies read
from the outer scope are renamed with the rest.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import onnx
from onnx import AttributeProto, helper, numpy_helper

#: outputs differ from run to run, so two such nodes are not one
NONDETERMINISTIC = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform",
                              "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"})
COMMUTATIVE = frozenset({"Add", "Mul"})
#: operators folded when every input is an initializer: they move or select elements, or
#: (Cast, restricted in ``_folds``) convert integers and bools, which is exact
FOLDABLE = frozenset({"Shape", "Size", "Reshape", "Unsqueeze", "Squeeze", "Concat",
                      "Transpose", "Gather", "Slice", "Flatten", "Cast"})
#: folding an operator that makes a larger tensor (Expand, Tile) would grow the model file
_MAX_FOLDED_ELEMENTS = 1 << 16


def lean(nodes: list[onnx.NodeProto], initializers: list[onnx.TensorProto],
         inputs: Iterable[str], outputs: Iterable[str], opset: int):
    """``(nodes, initializers)`` computing ``outputs`` from ``inputs`` as the given ones do."""
    inputs, outputs = set(inputs), set(outputs)
    consts = {t.name: t for t in initializers}
    alias: dict[str, str] = {}
    seen: dict[tuple, list[str]] = {}
    kept = []
    for node in nodes:
        node = _renamed(node, alias)
        out = node.output
        if node.op_type == "Identity" and out[0] not in outputs:
            alias[out[0]] = node.input[0]
            continue
        if _folds(node, consts, outputs):
            folded = _evaluate(node, consts, opset)
            if folded is not None:
                for tensor in folded:
                    consts[tensor.name] = tensor
                continue
        key = _key(node)
        if key is not None and node.output[0] not in outputs:
            if key in seen:
                alias.update(zip(out, seen[key], strict=True))
                continue
            seen[key] = list(out)
        kept.append(node)
    kept = _outputs_renamed(kept, set(consts) | inputs, outputs)
    return _live(kept, consts, outputs)


def _renamed(node: onnx.NodeProto, alias: dict[str, str]) -> onnx.NodeProto:
    """``node`` reading ``alias[name]`` for every ``name`` in ``alias`` (inside its
    subgraphs too, where a name the subgraph defines itself is left alone)."""
    if not alias:
        return node
    has_graphs = _has_subgraph(node)
    if not has_graphs and not any(i in alias for i in node.input):
        return node
    node = _copy(node)
    node.input[:] = [alias.get(i, i) for i in node.input]
    for attr in node.attribute if has_graphs else ():
        if attr.type not in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
            continue
        for graph in (attr.g,) if attr.type == AttributeProto.GRAPH else attr.graphs:
            local = _defined(graph)
            inner = {k: v for k, v in alias.items() if k not in local}
            if inner:
                for i, sub in enumerate(graph.node):
                    graph.node[i].CopyFrom(_renamed(sub, inner))
    return node


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    return copy


def _defined(graph: onnx.GraphProto) -> set[str]:
    """Names a subgraph defines (its inputs, initializers and node outputs, nested too)."""
    names = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    for node in graph.node:
        names.update(node.output)
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                names |= _defined(attr.g)
            elif attr.type == AttributeProto.GRAPHS:
                for g in attr.graphs:
                    names |= _defined(g)
    return names


def _read(node: onnx.NodeProto) -> set[str]:
    """Every name ``node`` reads, including what its subgraphs read (a superset: names a
    subgraph defines itself are included too, which only keeps more alive)."""
    names = set(node.input)
    for attr in node.attribute:
        for graph in ((attr.g,) if attr.type == AttributeProto.GRAPH else
                      attr.graphs if attr.type == AttributeProto.GRAPHS else ()):
            for sub in graph.node:
                names |= _read(sub)
            names.update(v.name for v in graph.output)
    return names


def _has_subgraph(node: onnx.NodeProto) -> bool:
    return any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute)


def _key(node: onnx.NodeProto) -> tuple | None:
    """What makes two nodes compute the same values; None for nodes never merged."""
    if node.op_type in NONDETERMINISTIC or _has_subgraph(node):
        return None
    ins = tuple(node.input)
    if node.op_type in COMMUTATIVE and len(ins) == 2:
        ins = tuple(sorted(ins))
    attrs = tuple(sorted((a.name, a.SerializeToString()) for a in node.attribute))
    return node.domain, node.op_type, ins, len(node.output), attrs


def _folds(node: onnx.NodeProto, consts: dict, outputs: set[str]) -> bool:
    if (node.op_type not in FOLDABLE or node.domain not in ("", "ai.onnx")
            or any(o in outputs for o in node.output)
            or not all(i in consts for i in node.input if i)):
        return False
    if node.op_type == "Cast":
        source = helper.tensor_dtype_to_np_dtype(consts[node.input[0]].data_type)
        target = helper.tensor_dtype_to_np_dtype(helper.get_attribute_value(node.attribute[0]))
        return source.kind in "biu" and target.kind in "biu"
    return True


def _evaluate(node: onnx.NodeProto, consts: dict, opset: int) -> list | None:
    """The node's outputs as initializers, computed by the ONNX reference evaluator; None
    when the result would be too large to store."""
    from onnx.reference import ReferenceEvaluator

    names = [i for i in node.input if i]
    graph = helper.make_graph(
        [node], "fold",
        [helper.make_tensor_value_info(n, consts[n].data_type, consts[n].dims) for n in names],
        [helper.make_empty_tensor_value_info(o) for o in node.output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    feeds = {n: numpy_helper.to_array(consts[n]) for n in names}
    values = ReferenceEvaluator(model).run(None, feeds)
    if sum(np.asarray(v).size for v in values) > _MAX_FOLDED_ELEMENTS:
        return None
    return [numpy_helper.from_array(np.asarray(v), name=o)
            for v, o in zip(values, node.output, strict=True)]


def _outputs_renamed(nodes: list, given: set[str], outputs: set[str]) -> list:
    """Drop ``Identity(source) -> output`` where ``source`` is the output of a node of
    this graph: that node writes the output under its own name instead."""
    producer = {o: i for i, n in enumerate(nodes) for o in n.output}
    shadowed = set()
    for n in nodes:
        if _has_subgraph(n):
            for attr in n.attribute:
                for g in (attr.g,) if attr.type == AttributeProto.GRAPH else attr.graphs:
                    shadowed |= _defined(g)
    rename, dropped = {}, set()
    for i, n in enumerate(nodes):
        if n.op_type != "Identity" or n.output[0] not in outputs:
            continue
        source, target = n.input[0], n.output[0]
        if (source in given or source in rename or source in outputs
                or source not in producer or target in shadowed):
            continue
        rename[source] = target
        dropped.add(i)
    if not rename:
        return nodes
    result = []
    for i, n in enumerate(nodes):
        if i in dropped:
            continue
        n = _renamed(n, rename)
        if any(o in rename for o in n.output):
            n = _copy(n)
            n.output[:] = [rename.get(o, o) for o in n.output]
        result.append(n)
    return result


def _live(nodes: list, consts: dict, outputs: set[str]):
    """The nodes and initializers that the outputs depend on, in their order."""
    needed = set(outputs)
    live = []
    for node in reversed(nodes):
        if needed.intersection(node.output):
            live.append(node)
            needed |= _read(node)
    live.reverse()
    return live, [t for name, t in consts.items() if name in needed]
