"""Graph walking, naming and model assembly shared by every conversion rule.

Rules live in ``converter/ops/*``; each is registered on :func:`convert_op`, the one
``singledispatch`` entry point, and receives a :class:`Context` to emit ONNX nodes into.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from converter import _args
from converter._lean import lean
from converter.errors import ConversionError, UnsupportedOpError

#: Oldest opset the rules are written for (Reduce* take ``axes`` as an input from 18 on).
MIN_OPSET = 18


#: ONNX has complex element types, but ONNX Runtime and the reference evaluator implement
#: almost no operator on them, so a model holding one would not run: refused up front.
NO_COMPLEX = ("the converter handles bool, (u)int8-64 and float16/32/64 tensors; complex "
              "numbers have almost no ONNX Runtime kernels, so split them into real and "
              "imaginary parts before export")


COMPLEX_DTYPES = frozenset({"complex64", "complex128"})


def onnx_dtype(dtype) -> int:
    """The ONNX element type for a numpy/PyTensor dtype name."""
    try:
        np_dtype = np.dtype(dtype)
    except TypeError as exc:
        raise ConversionError(f"dtype {dtype!r} has no ONNX equivalent") from exc
    if np_dtype.kind == "c":
        raise ConversionError(f"dtype {np_dtype.name} is not supported: {NO_COMPLEX}")
    try:
        return helper.np_dtype_to_tensor_dtype(np_dtype)
    except (KeyError, TypeError) as exc:
        raise ConversionError(f"dtype {dtype!r} has no ONNX equivalent") from exc


#: dtypes the ONNX spec allows but ONNX Runtime's CPU provider has no kernel for (checked
#: on onnxruntime 1.31 and 1.32), and the dtype each is computed in instead: every value
#: converts exactly. Operators in ``ORDERED`` compare values, so a same-width unsigned
#: type goes through the order-preserving map ``Cast(x) xor 2**63``; the others select
#: or add, where two's-complement Casts keep every bit of the (wrapping) result (so a
#: uint64 sum or product is as exact as ONNX Runtime's int64 one, which rounds through
#: double: recorded on the reduction rows).
ORT_KERNEL_DTYPE: dict[str, dict[str, str]] = {
    "Max": {"int16": "int32", "uint16": "int32"},
    "Min": {"int16": "int32", "uint16": "int32"},
    "Where": {"bool": "uint8", "int16": "int32", "uint16": "int32", "uint64": "int64"},
    "ArgMax": {"int16": "int32", "uint16": "int32", "uint32": "int64", "uint64": "int64"},
    "TopK": {"uint16": "int32", "uint32": "int64", "uint64": "int64"},
    "Unique": {"bool": "int8", "int16": "int64", "int32": "int64", "uint8": "int64",
               "uint16": "int64", "uint32": "int64", "uint64": "int64"},
    # only the add reduction lacks float16; float32 sums repeated positions before one
    # rounding, where numpy rounds after each add (at most one float16 rounding apart each)
    "ScatterElements": {"float16": "float32"},
    **{op: {"uint32": "int64", "uint64": "int64"}
       for op in ("ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "CumSum")},
}
ORDERED = frozenset({"Max", "Min", "ArgMax", "TopK", "Unique", "ReduceMax", "ReduceMin"})


#: functions ``nodes -> nodes`` applied to the main graph's nodes before it is assembled
#: (``converter/ops/control.py`` moves the nodes that only one If branch needs into it)
NODE_PASSES: list = []


@functools.singledispatch
def convert_op(op, ctx: Context, node) -> Sequence[str]:
    """Emit ONNX nodes computing ``node`` (an Apply of ``op``); return its output names."""
    raise UnsupportedOpError(op, [i.type for i in node.inputs])


class Context:
    """Mutable state of one conversion: emitted nodes, initializers and value names."""

    def __init__(self, opset: int):
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self._initializer_names: set[str] = set()
        self._names: dict[object, str] = {}
        self._used: set[str] = set()
        self._counter = itertools.count()
        self._const_cache: dict[tuple, str] = {}

    # -- naming ---------------------------------------------------------------
    def reserve(self, name: str) -> str:
        """Take ``name`` verbatim (a graph input or output name chosen by the caller)."""
        self._used.add(name)
        return name

    def fresh(self, hint: str = "t") -> str:
        if not isinstance(hint, str):  # a constant or shared variable may carry any name
            hint = "t"
        base = "".join(c if c.isalnum() or c in "_." else "_" for c in hint) or "t"
        name = base
        while name in self._used:
            name = f"{base}_{next(self._counter)}"
        self._used.add(name)
        return name

    def bind(self, var, name: str) -> None:
        self._names[var] = name

    def subgraph(self) -> Context:
        """A context for an ONNX subgraph (an If branch, a Loop body) nested in this one: it
        emits into its own node list and binds its own values, and shares the rest (names,
        which ONNX wants unique across scopes; initializers, which a subgraph reads from the
        outer scope; the bindings made so far, which become outer-scope references)."""
        import collections
        import copy

        child = copy.copy(self)
        child.nodes = []
        child._names = collections.ChainMap({}, self._names)
        return child

    def name_of(self, var) -> str:
        """The ONNX value name holding PyTensor variable ``var`` (constants on demand)."""
        try:
            return self._names[var]
        except KeyError:
            pass
        data = getattr(var, "data", None)
        if data is None:
            raise ConversionError(f"variable {var} is used before it is computed")
        name = self.constant(np.asarray(data, dtype=var.type.dtype), hint=var.name or "const")
        self._names[var] = name
        return name

    # -- emission -------------------------------------------------------------
    def constant(self, value, dtype=None, hint: str = "const") -> str:
        """An initializer holding ``value``; equal constants (same dtype, shape and bytes,
        so 0.0 and -0.0 stay apart) are one initializer, whatever their size."""
        arr = np.asarray(value, dtype=dtype)
        data = arr.tobytes()
        key = (arr.dtype.str, arr.shape, hashlib.blake2b(data, digest_size=16).digest())
        if key in self._const_cache:
            return self._const_cache[key]
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(arr, name=name))
        self._initializer_names.add(name)
        self._const_cache[key] = name
        return name

    def is_initializer(self, name: str) -> bool:
        return name in self._initializer_names

    def add(self, op_type: str, inputs: Sequence[str], n_out: int = 1, *, hint=None, **attrs):
        """Append one ONNX node; return its output name (or names when ``n_out`` > 1)."""
        outs = [self.fresh(hint or op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def cast(self, name: str, from_dtype, to_dtype) -> str:
        """``name`` converted to ``to_dtype``; no node when the dtypes already agree."""
        if np.dtype(from_dtype) == np.dtype(to_dtype):
            return name
        if np.dtype(to_dtype) == np.bool_:
            zero = self.constant(np.zeros((), dtype=from_dtype))
            return self.add("Not", [self.add("Equal", [name, zero])])
        return self.add("Cast", [name], to=onnx_dtype(to_dtype))

    def kernel_dtype(self, op_type: str, dtype) -> str:
        """The dtype ``op_type`` runs in on ONNX Runtime for ``dtype`` values."""
        dtype = np.dtype(dtype).name
        return ORT_KERNEL_DTYPE.get(op_type, {}).get(dtype, dtype)

    def _flips(self, op_type: str, dtype, work) -> bool:
        dtype, work = np.dtype(dtype), np.dtype(work)
        return op_type in ORDERED and dtype.kind == "u" and dtype.itemsize == work.itemsize

    def to_kernel(self, op_type: str, name: str, dtype) -> str:
        """``name`` (of ``dtype``) mapped exactly into ``kernel_dtype(op_type, dtype)``."""
        work = self.kernel_dtype(op_type, dtype)
        name = self.cast(name, dtype, work)
        if self._flips(op_type, dtype, work):
            name = self.add("BitwiseXor", [name, self.constant(np.iinfo(work).min, work)])
        return name

    def from_kernel(self, op_type: str, name: str, dtype) -> str:
        """The inverse of ``to_kernel``."""
        work = self.kernel_dtype(op_type, dtype)
        if self._flips(op_type, dtype, work):
            name = self.add("BitwiseXor", [name, self.constant(np.iinfo(work).min, work)])
        return self.cast(name, work, dtype)

    def add_typed(self, op_type: str, inputs: Sequence[str], dtype, *, data=(0,),
                  results=(0,), n_out: int = 1, hint=None, **attrs):
        """``add`` for an operator whose inputs at positions ``data`` (and outputs at
        ``results``) have ``dtype``: where ONNX Runtime has no kernel for it, they go
        through ``to_kernel`` and ``from_kernel``."""
        ins = list(inputs)
        for i in data:
            ins[i] = self.to_kernel(op_type, ins[i], dtype)
        outs = self.add(op_type, ins, n_out, hint=hint, **attrs)
        outs = [outs] if n_out == 1 else list(outs)
        for i in results:
            outs[i] = self.from_kernel(op_type, outs[i], dtype)
        return outs[0] if n_out == 1 else outs


def _value_info(name: str, var, symbolic: bool) -> onnx.ValueInfoProto:
    """Static dims stay numbers; unknown input dims get a symbol, unknown output dims none."""
    shape = []
    for axis, dim in enumerate(var.type.shape):
        shape.append(dim if dim is not None else (f"{name}_dim{axis}" if symbolic else None))
    return helper.make_tensor_value_info(name, onnx_dtype(var.type.dtype), shape)


def _check_variable_type(var, role: str) -> None:
    from pytensor.tensor.type import TensorType

    if not isinstance(var.type, TensorType):
        raise ConversionError(
            f"{role} {var} has type {var.type} ({type(var.type).__name__}); only dense tensors "
            "(TensorType) can cross the ONNX boundary: sparse, random generator, slice and "
            "typed-list variables are not supported"
        )
    if var.type.dtype in COMPLEX_DTYPES:
        raise ConversionError(f"{role} {var} has dtype {var.type.dtype}: {NO_COMPLEX}")


def _check_node_types(node) -> None:
    """Refuse an Op working on complex tensors before a rule emits nodes ONNX cannot run.
    Only outputs and root inputs (constants) are looked at: any other input is the output
    of a node checked before. (Runs once per node, so it is kept to plain loops.)"""
    for var in node.outputs:
        if getattr(var.type, "dtype", None) in COMPLEX_DTYPES:
            _refuse_complex(node, var)
    for var in node.inputs:
        if var.owner is None and getattr(var.type, "dtype", None) in COMPLEX_DTYPES:
            _refuse_complex(node, var)


def _refuse_complex(node, var):
    raise UnsupportedOpError(node.op, [i.type for i in node.inputs],
                             f"{var.type.dtype} tensors: {NO_COMPLEX}")


def _validate_io(inputs, outputs, live_shared: bool = False) -> None:
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    seen = set()
    for var in inputs:
        _check_variable_type(var, "input")
        if var.owner is not None:
            raise ConversionError(
                f"input {var} is computed by {var.owner.op}; inputs must be root variables "
                "(created with pytensor.tensor.tensor/vector/matrix/...), not expressions"
            )
        if isinstance(var, Constant) or (isinstance(var, SharedVariable) and not live_shared):
            raise ConversionError(f"input {var} is a constant or shared variable, not a free input")
        if var in seen:
            raise ConversionError(f"input {var} is listed twice")
        seen.add(var)
    for var in outputs:
        _check_variable_type(var, "output")


def _toposort(inputs, outputs):
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import ancestors, io_toposort

    given = set(inputs)
    for var in ancestors(outputs, blockers=given):
        free = var.owner is None and not isinstance(var, Constant | SharedVariable)
        if free and var not in given:
            raise ConversionError(
                f"the outputs depend on {var} ({var.type}), which is not among the inputs; "
                "add it to inputs or make it a constant or shared variable"
            )
    return io_toposort(list(inputs), list(outputs))


def build_model(inputs, outputs, *, opset: int, graph_name: str = "pytensor",
                live_shared: bool = False, names: tuple[list, list] | None = None,
                ) -> onnx.ModelProto:
    """Convert the PyTensor graph from ``inputs`` to ``outputs`` into a checked ONNX model.

    ``live_shared``: shared variables among ``inputs`` are model inputs like any other (a
    compiled function's graph, whose state ``Function`` keeps), not refused; any other shared
    variable still becomes an initializer. ``names``: the input and output names to use (None
    where one is generated) instead of the variables' own.
    """
    from pytensor.compile.sharedvalue import SharedVariable

    inputs, outputs = list(inputs), list(outputs)
    _validate_io(inputs, outputs, live_shared)
    input_names, output_names = names if names is not None else _args.io_names(inputs, outputs)
    ctx = Context(opset)
    # the caller's names are taken first so that no generated name can push one aside
    for name in (*input_names, *output_names):
        if name is not None:
            ctx.reserve(name)
    input_infos = []
    for i, (var, name) in enumerate(zip(inputs, input_names, strict=True)):
        name = name or ctx.fresh(f"input{i}")
        ctx.bind(var, name)
        input_infos.append(_value_info(name, var, symbolic=True))

    for node in _toposort(inputs, outputs):
        _check_node_types(node)
        for var in node.inputs:
            if isinstance(var, SharedVariable) and var not in ctx._names:
                _check_variable_type(var, "shared variable")
                value = np.asarray(var.get_value(borrow=True), dtype=var.type.dtype)
                ctx.bind(var, ctx.constant(value, hint=var.name or "shared"))
        out_names = list(convert_op(node.op, ctx, node))
        if len(out_names) != len(node.outputs):
            raise ConversionError(
                f"rule for {node.op} returned {len(out_names)} outputs, "
                f"expected {len(node.outputs)}"
            )
        for var, name in zip(node.outputs, out_names, strict=True):
            ctx.bind(var, name)

    output_infos = []
    for i, (var, name) in enumerate(zip(outputs, output_names, strict=True)):
        if isinstance(var, SharedVariable) and var not in ctx._names:
            ctx.bind(var, ctx.constant(var.get_value(borrow=True), dtype=var.type.dtype))
        source = ctx.name_of(var)
        # ONNX outputs must be distinct node outputs, never graph inputs or initializers.
        name = name or ctx.fresh(var.name or f"output{i}")
        ctx.nodes.append(helper.make_node("Identity", [source], [name]))
        output_infos.append(_value_info(name, var, symbolic=False))

    ctx.nodes, ctx.initializers = lean(
        ctx.nodes, ctx.initializers, [i.name for i in input_infos],
        [o.name for o in output_infos], opset)
    for finish in NODE_PASSES:
        ctx.nodes = finish(ctx.nodes)
    graph = helper.make_graph(
        ctx.nodes, graph_name, input_infos, output_infos, initializer=ctx.initializers
    )
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(
        graph,
        opset_imports=opsets,
        ir_version=helper.find_min_ir_version_for(opsets),
        producer_name="pytensor-onnx-conformance converter",
    )
    check(model)
    return model


def check(model: onnx.ModelProto) -> None:
    """Full ONNX check plus strict, type-checked shape inference; raises ConversionError."""
    try:
        onnx.checker.check_model(model, full_check=True)
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise ConversionError(f"converter produced an invalid ONNX model: {exc}") from exc
