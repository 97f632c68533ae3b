"""A lean PyTensor -> ONNX converter.

>>> import pytensor.tensor as pt, converter
>>> x = pt.vector("x")
>>> model = converter.to_onnx([x], [pt.exp(x).sum()])

Only pytensor, onnx and numpy are needed to import and use it. Every model it returns has
passed ``onnx.checker.check_model(full_check=True)`` and strict shape inference.
"""

from __future__ import annotations

import os

import onnx

from converter import _args
from converter import ops as _ops  # noqa: F401  (registers every rule)
from converter._core import MIN_OPSET, build_model, check, convert_op
from converter._opset import default_opset
from converter.errors import ConversionError, ModelNotLoaded, NotRunnable, UnsupportedOpError
from converter.link.mode import onnx_mode  # registers the ONNX linker and modes
from converter.ops import registered_modules, supported_ops

__all__ = [
    "MIN_OPSET",
    "ConversionError",
    "ModelNotLoaded",
    "NotRunnable",
    "UnsupportedOpError",
    "check",
    "convert_op",
    "default_opset",
    "function_graph",
    "function_to_onnx",
    "onnx_mode",
    "registered_modules",
    "save",
    "supported_ops",
    "to_onnx",
]


def _resolve_opset(opset) -> int:
    return _args.opset(opset, onnx.defs.onnx_opset_version(), MIN_OPSET, default_opset)


def to_onnx(inputs, outputs, *, opset: int | None = None) -> onnx.ModelProto:
    """Convert the graph from ``inputs`` to ``outputs`` (as for ``pytensor.function``).

    Input and output names are kept verbatim and inputs in order (unnamed ones get
    ``input0``, ``output0``, ...; two different variables with one name are refused);
    shared variables become initializers with their current values; unknown dimensions
    stay symbolic. Raises ``UnsupportedOpError`` for an Op without a rule and
    ``ConversionError`` for bad arguments or any other graph that cannot be exported.
    """
    inputs = _args.variables("inputs", inputs, single_ok=False)
    outputs = _args.variables("outputs", outputs, single_ok=True)
    if not outputs:
        raise ConversionError("outputs is empty; an ONNX model needs at least one output")
    return build_model(inputs, outputs, opset=_resolve_opset(opset))


def function_to_onnx(fn, *, opset: int | None = None) -> onnx.ModelProto:
    """Convert a compiled ``pytensor.function``'s optimized graph.

    Implicit (shared-variable) inputs become initializers holding the function's current
    values. Functions with updates are refused: ONNX models have no state to update.
    """
    opset = _resolve_opset(opset)
    inputs, outputs = function_graph(fn)
    if not outputs:
        raise ConversionError("fn has no outputs; an ONNX model needs at least one output")
    return build_model(inputs, outputs, opset=opset)


def function_graph(fn) -> tuple[list, list]:
    """The explicit inputs and the outputs of a compiled function's optimized graph, with
    implicit (shared-variable) inputs replaced by constants holding their current values."""
    from pytensor.compile import Function

    if not isinstance(fn, Function):
        raise ConversionError(
            f"fn is {_args.given(fn)}; expected a compiled pytensor.function (the result of "
            "pytensor.function(inputs, outputs)); for a symbolic graph use converter.to_onnx")
    maker = fn.maker
    fgraph = maker.fgraph
    if getattr(fgraph, "update_mapping", None):
        raise ConversionError(
            "the function has updates (shared-variable state changes); ONNX models are "
            "stateless, so compile the function without updates to export it"
        )
    from pytensor.graph.basic import Constant

    explicit, replacements = [], {}
    for spec, var, container in zip(maker.inputs, fgraph.inputs, fn.input_storage, strict=True):
        if spec.implicit:
            replacements[var] = Constant(var.type, container.data, name=var.name)
        else:
            explicit.append(var)
    outputs = list(fgraph.outputs)
    if replacements:
        from pytensor.graph.replace import clone_replace

        outputs = clone_replace(outputs, replace=replacements)
    return explicit, _unshared_names(explicit, outputs)


def _unshared_names(inputs: list, outputs: list) -> list:
    """``outputs``, where the copies PyTensor makes of a named output (``fn([x], [y, y])``
    returns two variables named y) are replaced by unnamed clones, which get generated
    names; the compiled function's own graph is left untouched."""
    taken = {v.name for v in inputs if isinstance(v.name, str)}
    fixed = []
    for var in outputs:
        if isinstance(var.name, str) and var.name in taken and var.owner is not None:
            var = var.owner.clone().outputs[var.index]
            var.name = None
        elif isinstance(var.name, str):
            taken.add(var.name)
        fixed.append(var)
    return fixed


def save(model: onnx.ModelProto, path: str | os.PathLike) -> None:
    """Write ``model`` to ``path`` (after checking it again)."""
    model = _args.model(model)
    target = _args.path(path)
    check(model)
    onnx.save_model(model, str(target))
