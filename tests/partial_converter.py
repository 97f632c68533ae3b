"""A deliberately partial converter, for judging a converter other than the project's.

``to_onnx`` converts graphs made only of Elemwise and DimShuffle nodes (the ``elemwise``
registry category, mostly) with the project's converter and refuses every other graph with
``UnsupportedOpError``, as an adapter for a partial converter should. One of its rules is
silently wrong: ``Maximum`` comes out as ONNX ``Min``.

``refuses_0d`` converts everything except graphs with a 0-d input, which it refuses, and is
silently wrong (Exp comes out as Log) on the layouts it does convert: the simplest layout of
the ``exp`` row is refused, a wrong value hides behind it.

Neither touches the project converter's tables: the wrong rules edit the returned model.
"""

from __future__ import annotations

import onnx
from pytensor.tensor.elemwise import DimShuffle, Elemwise

import converter
from converter.errors import UnsupportedOpError

try:
    from pytensor.graph.traversal import applys_between
except ImportError:  # PyTensor 2.38
    from pytensor.graph.basic import applys_between

SUPPORTED = (Elemwise, DimShuffle)


def _renamed(model: onnx.ModelProto, old: str, new: str) -> onnx.ModelProto:
    for node in model.graph.node:
        if node.op_type == old:
            node.op_type = new
    return model


def to_onnx(inputs, outputs, *, opset=None):
    for node in applys_between(list(inputs), list(outputs)):
        if not isinstance(node.op, SUPPORTED):
            raise UnsupportedOpError(node.op, [i.type for i in node.inputs],
                                     "partial_converter converts Elemwise graphs only")
    return _renamed(converter.to_onnx(inputs, outputs, opset=opset), "Max", "Min")


def refuses_0d(inputs, outputs, *, opset=None):
    zero_d = [i for i in inputs if i.type.ndim == 0]
    if zero_d:
        raise NotImplementedError(f"refuses_0d does not convert 0-d inputs ({zero_d[0].type})")
    return _renamed(converter.to_onnx(inputs, outputs, opset=opset), "Exp", "Log")
