"""A converter whose models break a rule of the ONNX spec that ``onnx.checker`` does not check:
every output of rank 2 or more (bool aside: Clip takes no bool) passes through a Clip whose
``min`` is a 1-element tensor of the output's rank, holding the dtype's lowest value. The
values do not change, and the reference evaluator (numpy's clip broadcasts) runs the model;
ONNX Runtime refuses it at run time (FAIL, "min should be a scalar"), as the spec allows it to:
Clip's ``min`` must be a tensor of empty shape. ONNX Runtime takes a shape of [1] as a scalar,
hence rank 2 or more.

Blaming from which backends disagree alone, the harness would blame onnxruntime."""

import numpy as np
import onnx
from onnx import helper

import converter


def to_onnx(inputs, outputs, *, opset=None):
    model = converter.to_onnx(inputs, outputs, opset=opset)
    graph = model.graph
    fed = {i.name for i in graph.input}
    for out in graph.output:
        tensor = out.type.tensor_type
        rank = len(tensor.shape.dim)
        if out.name in fed or rank < 2 or tensor.elem_type == onnx.TensorProto.BOOL:
            continue
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        lowest = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
        inner, bound = f"{out.name}_unclipped", f"{out.name}_min"
        for node in graph.node:
            node.input[:] = [inner if n == out.name else n for n in node.input]
            node.output[:] = [inner if n == out.name else n for n in node.output]
        graph.initializer.append(onnx.numpy_helper.from_array(
            np.full((1,) * rank, lowest, dtype=dtype), bound))
        graph.node.append(helper.make_node("Clip", [inner, bound], [out.name]))
    return model
