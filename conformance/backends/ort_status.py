"""What ONNX Runtime's refusals say, typed: the status its exception carries, whether it came
while loading the model (creating the session) or running it, and, for a run, the rule of the
ONNX spec the model breaks on that run's inputs, if any.

ONNX Runtime enforces some of the spec's rules only inside its kernels, at run time: Clip's
``min`` and ``max`` must be scalars (tensors of empty shape), which neither
``onnx.checker.check_model(full_check=True)`` nor ONNX's shape inference checks, and which the
reference evaluator does not enforce (it broadcasts them, as numpy does). A run-time refusal is
the model's fault only where the model breaks such a rule on those inputs; otherwise it is ONNX
Runtime's, as a kernel that fails on a valid model is. :func:`broken_rule` tells them apart by
checking the rule on the shapes the run had, never by reading the kernel's message.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence

import numpy as np
import onnx


class Status(enum.StrEnum):
    """ONNX Runtime's status codes (``onnxruntime/core/common/status.h``), by the names its
    messages print: ``[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : ...``."""

    FAIL = "FAIL"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NO_SUCHFILE = "NO_SUCHFILE"
    NO_MODEL = "NO_MODEL"
    ENGINE_ERROR = "ENGINE_ERROR"
    RUNTIME_EXCEPTION = "RUNTIME_EXCEPTION"
    INVALID_PROTOBUF = "INVALID_PROTOBUF"
    MODEL_LOADED = "MODEL_LOADED"
    NOT_IMPLEMENTED = "NOT_IMPLEMENTED"
    INVALID_GRAPH = "INVALID_GRAPH"
    EP_FAIL = "EP_FAIL"
    MODEL_LOAD_CANCELED = "MODEL_LOAD_CANCELED"
    MODEL_REQUIRES_COMPILATION = "MODEL_REQUIRES_COMPILATION"
    NOT_FOUND = "NOT_FOUND"


class Stage(enum.StrEnum):
    """When ONNX Runtime refused: creating the session, or running it."""

    LOAD = "load"
    RUN = "run"


#: Statuses with which a session's creation refuses the model itself. NOT_IMPLEMENTED (no
#: kernel for an operator or type) is ONNX Runtime's gap; RUNTIME_EXCEPTION, EP_FAIL and the
#: like are its own failures.
REFUSES_AT_LOAD = frozenset({Status.FAIL, Status.INVALID_ARGUMENT, Status.INVALID_GRAPH,
                             Status.INVALID_PROTOBUF})

#: Inputs the spec requires to be scalars (tensors of empty shape), by operator and input
#: index, which ONNX Runtime's kernels enforce at run time: Clip (opset 11 on: "It must be a
#: scalar(tensor of empty shape)"; the kernel: "min should be a scalar") and Range ("start:
#: Scalar", ...; the kernel: "start in Range operator should be scalar like tensor"). ONNX
#: Runtime accepts a shape of [1] too; the spec does not.
SCALAR_INPUTS: dict[str, tuple[int, ...]] = {"Clip": (1, 2), "Range": (0, 1, 2)}

_HEADER = re.compile(r"\[ONNXRuntimeError\] : \d+ : (\w+) :")
#: ONNX Runtime's run-time message names the node: "... while running Clip node. Name:'n1'"
_RUNNING = re.compile(r"while running (\w+) node(\. Name:'[^']*')?")


class OrtError(RuntimeError):
    """ONNX Runtime refused to load or run a model. Raised by the ONNX Runtime backends in
    place of ONNX Runtime's own exception, under the same type name (``Fail``,
    ``NotImplemented``, ...) and with the same text, so that messages and records' ``match``
    read as before; where the model breaks a spec rule, the rule follows the status and the
    node ONNX Runtime names (the oracle shows a message's first 300 characters)."""

    status: Status
    stage: Stage
    #: the spec rule the model breaks on the failed run's inputs (None: none found)
    broken: str | None

    @classmethod
    def named(cls, name: str, status: Status, stage: Stage, text: str,
              broken: str | None = None) -> OrtError:
        """One of type ``name`` (ONNX Runtime's exception's), a subclass of this class."""
        kind = _KINDS.setdefault(name, type(name, (cls,), {"__module__": __name__}))
        if broken is not None:
            text = _with_rule(text, broken)
        error = kind(text)
        error.status, error.stage, error.broken = status, stage, broken
        return error

    @property
    def refuses_model(self) -> bool:
        """Whether ONNX Runtime refused the model itself: at load with a status of
        :data:`REFUSES_AT_LOAD`, at run where the model breaks a rule of :func:`broken_rule`.
        A missing kernel (NOT_IMPLEMENTED, at load or run) never is."""
        if self.status is Status.NOT_IMPLEMENTED:
            return False
        if self.stage is Stage.LOAD:
            return self.status in REFUSES_AT_LOAD
        return self.broken is not None

    def __reduce__(self):  # the subclasses are made at run time: rebuilt by name
        return _rebuild, (type(self).__name__, self.status, self.stage, str(self), self.broken)


_KINDS: dict[str, type] = {}


def _rebuild(name, status, stage, text, broken):
    error = OrtError.named(name, status, stage, text)  # ``text`` holds the rule already
    error.broken = broken
    return error


def _with_rule(text: str, broken: str) -> str:
    clause = f" (the model breaks the ONNX spec on these inputs: {broken})"
    where = _RUNNING.search(text) or _HEADER.search(text)
    end = where.end() if where else 0
    return f"{text[:end]}{clause}{text[end:]}"


def status_of(exc: BaseException) -> Status | None:
    """The status ONNX Runtime's exception carries, None if it carries none."""
    found = _HEADER.search(str(exc))
    return Status.__members__.get(found.group(1)) if found else None


def typed(exc: BaseException, stage: Stage, model: onnx.ModelProto | None = None,
          values: Sequence[np.ndarray] = ()) -> BaseException:
    """``exc`` as an :class:`OrtError` when it carries a status (else ``exc`` itself). At run
    (``model`` and ``values`` given), the rule the model breaks on those inputs, looked for in
    the node ONNX Runtime names, if it names one."""
    status = status_of(exc)
    if status is None:
        return exc
    broken = None
    if stage is Stage.RUN and model is not None:
        running = _RUNNING.search(str(exc))
        broken = broken_rule(model, [np.shape(v) for v in values],
                             running.group(1) if running else None)
    return OrtError.named(type(exc).__name__, status, stage, str(exc), broken)


def broken_rule(model: onnx.ModelProto, shapes: Sequence[tuple[int, ...]],
                op_type: str | None = None) -> str | None:
    """The spec rule ``model`` breaks when its inputs have ``shapes``, or None: ONNX's strict
    shape inference (with type checks and data propagation) on the model with those shapes
    bound, which the checker could only run on the declared (symbolic) ones; then the
    :data:`SCALAR_INPUTS` rule on the inferred shapes. Given ``op_type`` (the node ONNX
    Runtime names), only a rule broken at a node of that type counts. An input whose rank
    stays unknown breaks nothing that can be shown."""
    bound = onnx.ModelProto()
    bound.CopyFrom(model)
    for value_info, shape in zip(bound.graph.input, shapes, strict=False):
        dims = value_info.type.tensor_type.shape
        dims.ClearField("dim")
        for d in shape:
            dims.dim.add().dim_value = int(d)
    try:
        inferred = onnx.shape_inference.infer_shapes(bound, check_type=True, strict_mode=True,
                                                     data_prop=True)
    except onnx.shape_inference.InferenceError as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        # onnx names the failing nodes' types ("(op_type:Add)"): another node than the one
        # ONNX Runtime refused says nothing about that refusal
        if op_type is not None and f"op_type:{op_type}" not in first:
            return None
        return f"strict shape inference on these input shapes fails: {first[:150]}"
    # anything else is the inference's own trouble: nothing shown about the model
    except Exception:  # noqa: BLE001
        return None
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    return _scalar_rule(inferred.graph, {}, opset, op_type)


def _scalar_rule(graph: onnx.GraphProto, outer: dict, opset: int | None,
                 op_type: str | None) -> str | None:
    shapes = {**outer, **_shapes(graph)}
    for node in graph.node:
        if node.domain in ("", "ai.onnx") and op_type in (None, node.op_type):
            for i in SCALAR_INPUTS.get(node.op_type, ()):
                name = node.input[i] if i < len(node.input) else ""
                shape = shapes.get(name)
                if name and shape is not None and len(shape) != 0:
                    schema = onnx.defs.get_schema(node.op_type, opset)
                    param = schema.inputs[i].name if i < len(schema.inputs) else f"#{i}"
                    return (f"{node.op_type}'s input {param!r} must be a scalar (a tensor of "
                            f"empty shape), but {name!r} has shape {list(shape)}")
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                if (found := _scalar_rule(sub, shapes, opset, op_type)) is not None:
                    return found
    return None


def _shapes(graph: onnx.GraphProto) -> dict[str, tuple]:
    """Every value's shape the graph declares or inference found (None for an unknown
    dimension); a value without a known rank is left out."""
    found = {t.name: tuple(t.dims) for t in graph.initializer}
    for info in (*graph.input, *graph.value_info, *graph.output):
        tensor = info.type.tensor_type
        if info.type.HasField("tensor_type") and tensor.HasField("shape"):
            found[info.name] = tuple(d.dim_value if d.HasField("dim_value") else None
                                     for d in tensor.shape.dim)
    return found
