"""A converter whose models are invalid: they claim an IR version newer than the installed
onnx knows, which ``onnx.checker.check_model`` rejects and ONNX Runtime refuses to load, while
the ONNX reference evaluator runs them. Without validation the harness would blame ONNX
Runtime; the converter is at fault."""

import onnx

import converter


def to_onnx(inputs, outputs, *, opset=None):
    model = converter.to_onnx(inputs, outputs, opset=opset)
    model.ir_version = onnx.IR_VERSION + 1
    return model
