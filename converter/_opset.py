"""The default opset: the newest that onnx and, if installed, ONNX Runtime both run."""

from __future__ import annotations

import functools

import onnx

from converter._core import MIN_OPSET


@functools.cache
def default_opset() -> int:
    """The newest opset that onnx (and so ``onnx.reference``) and, if installed, ONNX Runtime run.

    ONNX Runtime publishes no API for its newest opset, so it is asked with a one-node model,
    from onnx's newest opset downwards; without ONNX Runtime, onnx's newest opset is used.
    """
    newest = onnx.defs.onnx_opset_version()
    try:
        import onnxruntime
    except ImportError:
        return newest
    from onnx import TensorProto, helper

    vi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    vo = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe", [vi], [vo])
    for opset in range(newest, MIN_OPSET - 1, -1):
        opsets = [helper.make_opsetid("", opset)]
        model = helper.make_model(
            graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets)
        )
        try:
            onnxruntime.InferenceSession(
                model.SerializeToString(), providers=["CPUExecutionProvider"]
            )
        # any refusal means this opset is too new for the runtime
        except Exception:  # noqa: BLE001
            continue
        return opset
    return MIN_OPSET
