"""Up-front checks of the public functions' arguments.

Each refusal is a :class:`ConversionError` that names the argument, shows what was given
(type and a shortened value) and says what is allowed, before any graph is walked: a wrong
argument must never surface later as an AttributeError from deep inside the converter.
"""

from __future__ import annotations

import os
import reprlib
from collections.abc import Sequence
from pathlib import Path

import onnx

from converter import compat
from converter.errors import ConversionError

_REPR = reprlib.Repr()
_REPR.maxstring = 40
_REPR.maxother = 40
_REPR.maxlist = _REPR.maxtuple = 4


def given(value) -> str:
    """``a float (1.5)``, ``a list ([1, 2, 3, 4, ...])``: what a caller passed, shortened."""
    if value is None:
        return "None"
    kind = type(value)
    name = kind.__qualname__ if kind.__module__ == "builtins" else (
        f"{kind.__module__}.{kind.__qualname__}")
    try:
        text = _REPR.repr(value)
    # a caller's object may have any __repr__, including one that raises
    except Exception:  # noqa: BLE001
        text = f"<{name} object>"
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name} ({text})"


#: ``In`` flags that change what a compiled function computes, and why ONNX cannot follow
_IN_FLAGS_THAT_COMPUTE = {
    "value": "a default value (an ONNX input has none: the model would need it every call)",
    "update": "an update (ONNX models are stateless)",
    "implicit": "an implicit input (a shared variable's storage)",
}


def _unwrapped_in(arg: str, i: int, var):
    """The variable an ``In(x, ...)`` wraps, where its flags (mutable, borrow, name, strict,
    allow_downcast) change how a function takes the value, not what it computes; else a
    ConversionError naming the flag."""
    for flag, why in _IN_FLAGS_THAT_COMPUTE.items():
        if getattr(var, flag, None) not in (None, False):
            raise ConversionError(
                f"{arg}[{i}] is In({var.variable}, {flag}=...): {why}; pass the variable "
                f"itself (In's mutable, borrow, name, strict and allow_downcast are accepted)")
    return var.variable


def _refuse_sparse(arg: str, i: int, var) -> None:
    sparse = compat.lookup("SparseTensorType")
    if sparse is not None and isinstance(var.type, sparse):
        raise ConversionError(
            f"{arg}[{i}] is {var.type} ({type(var.type).__name__}, format "
            f"{var.type.format!r}); ONNX has no sparse tensors that ONNX Runtime computes "
            f"with, and converting it as a dense one would change what it means: make it a "
            f"dense tensor (pytensor.tensor.matrix(...)), or export the graph after "
            f"pytensor.sparse.dense_from_sparse(...)")


def variables(arg: str, value, *, single_ok: bool) -> list:
    """``value`` as a flat list of PyTensor variables, or a ConversionError naming ``arg``.
    ``In(x, ...)`` inputs, as ``pytensor.function`` takes them, become ``x`` where their
    flags cannot change the values computed; sparse variables are refused."""
    from pytensor.compile.io import In
    from pytensor.graph.basic import Variable

    allowed = "a list or tuple of PyTensor variables"
    if single_ok:
        allowed = f"a PyTensor variable or {allowed}"
    if single_ok and isinstance(value, Variable):
        return [value]
    if not isinstance(value, list | tuple):
        hint = ""
        if hasattr(value, "__iter__") and not isinstance(value, str | bytes):
            hint = " (materialize an iterator or set with list(...) so the order is fixed)"
        raise ConversionError(f"{arg} is {given(value)}; expected {allowed}{hint}")
    value = [_unwrapped_in(arg, i, v) if isinstance(v, In) and arg == "inputs" else v
             for i, v in enumerate(value)]
    for i, var in enumerate(value):
        if isinstance(var, Variable):
            _refuse_sparse(arg, i, var)
        if not isinstance(var, Variable):
            hint = ""
            if isinstance(var, str):
                hint = "; pass the variable itself, not its name"
            elif isinstance(var, list | tuple):
                hint = f"; {arg} must be a flat list"
            else:
                hint = ("; wrap values with pytensor.tensor.constant(...) or make them inputs"
                        if arg == "outputs" else "; create inputs with pytensor.tensor.vector(...)"
                        " and friends")
            raise ConversionError(f"{arg}[{i}] is {given(var)}; expected a PyTensor variable{hint}")
    return list(value)


def io_names(inputs: Sequence, outputs: Sequence) -> tuple[list, list]:
    """The ONNX names of the inputs and outputs: each variable's own name verbatim (ONNX
    allows any string), or None where one must be generated (no name, or an empty one).

    Two different variables may not share a name: the model could not keep both. A
    variable listed again (an input also returned as an output, or an output returned
    twice) keeps its name the first time and gets a generated one after.
    """
    owners: dict[str, tuple[str, object]] = {}

    def claim(var, where: str):
        name = var.name
        if name is None or name == "":
            return None
        if not isinstance(name, str):
            raise ConversionError(
                f"{where}.name is {given(name)}; a variable's name must be a string or None")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ConversionError(
                f"{where}.name={name!r} cannot be stored in an ONNX model, which needs UTF-8 "
                f"text ({exc.reason} at position {exc.start}); rename the variable") from None
        if name in owners:
            first, owner = owners[name]
            if owner is var:
                return None
            raise ConversionError(
                f"{first} and {where} are different variables both named {name!r}; ONNX value "
                "names must be unique and the converter keeps names as given, so rename one "
                "(var.name = ...)")
        owners[name] = (where, var)
        return name

    ins = [claim(v, f"inputs[{i}]") for i, v in enumerate(inputs)]
    outs = [claim(v, f"outputs[{i}]") for i, v in enumerate(outputs)]
    return ins, outs


def opset(value, newest: int, minimum: int, default) -> int:
    if value is None:
        return default()
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= newest:
        raise ConversionError(
            f"opset={_short(value)} is not supported; choose an int from {minimum} to {newest} "
            f"(or None for the default, {default()})")
    return value


def model(value) -> onnx.ModelProto:
    if not isinstance(value, onnx.ModelProto):
        raise ConversionError(
            f"model is {given(value)}; expected an onnx.ModelProto such as converter.to_onnx "
            "returns")
    return value


def path(value) -> Path:
    name = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(name, str):
        raise ConversionError(
            f"path is {given(value)}; expected a file name as a str or os.PathLike")
    if "\0" in name:
        raise ConversionError(f"path={_short(name)} holds a NUL character, which no file name may")
    target = Path(name)
    if target.is_dir():
        raise ConversionError(f"path={str(target)!r} is a directory; expected a file name")
    if not target.parent.is_dir():
        raise ConversionError(
            f"path={str(target)!r}: its folder {str(target.parent)!r} does not exist; create "
            "it first")
    return target


def _short(value) -> str:
    try:
        return _REPR.repr(value)
    except Exception:  # noqa: BLE001 - see given()
        return f"<{type(value).__name__} object>"
