"""Source code for standalone reproductions: a PyTensor graph, an ONNX model and numpy values
rendered as Python that imports only numpy and the package at fault (never ``conformance``).

A row's graph becomes readable code when its build function can be printed: a PyTensor or
numpy function (imported by its own name), or a lambda or function whose every global and
closure variable is a PyTensor/numpy module, function or class, or a plain literal. The
code is then run and the graph it builds is checked against the row's own with
``equal_computations``; when anything fails the graph is embedded as PyTensor's own pickle
(only pytensor classes in it), with ``pytensor.dprint`` of it as a comment.
"""

from __future__ import annotations

import ast
import base64
import builtins
import copyreg
import inspect
import io
import pickle
import textwrap
import types
from pathlib import Path

import numpy as np

#: Modules whose objects a standalone script may import.
ALLOWED_ROOTS = ("pytensor", "numpy")
#: Arrays up to this many elements are written as literals; larger ones as base64 .npy.
LITERAL_LIMIT = 2048


class Unprintable(Exception):
    """The build function cannot be written as standalone code (the reason says why)."""


def array_code(value: np.ndarray) -> str:
    """``np.array([...], dtype=...).reshape(...)`` (non-finite floats as nan/inf)."""
    value = np.asarray(value)
    if value.size > LITERAL_LIMIT:
        buf = io.BytesIO()
        np.save(buf, value, allow_pickle=False)
        blob = base64.b64encode(buf.getvalue()).decode()
        return f'np.load(io.BytesIO(base64.b64decode("{blob}")))'
    if value.ndim == 0:
        return f'np.array({_scalar(value.item())}, dtype="{value.dtype}")'
    flat = [_scalar(v) for v in value.reshape(-1).tolist()]
    text = f'np.array([{", ".join(flat)}], dtype="{value.dtype}")'
    return text + (f".reshape({value.shape!r})" if value.ndim != 1 else "")


def _scalar(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
    return repr(v)


def outputs_code(outputs) -> str:
    """A list of output arrays, or the text of what was raised, as a Python expression."""
    if isinstance(outputs, BaseException):
        text = str(outputs).strip().splitlines()
        return repr(f"raises {type(outputs).__name__}: {text[0][:200] if text else ''}")
    return "[" + ", ".join(array_code(o) for o in outputs) + "]"


def differs(expected, actual, rtol, atol, values=True, signed_zeros=False, ulps=None,
            operand_ulps=0.0, inputs=(), terms=None, terms_ulps=0.0):
    """Why actual is not expected (None: it is): dtype, shape, values (nan equals nan,
    an infinity only itself, floats within atol + rtol * |expected|, or with ulps within
    ulps * spacing(|expected|) in its dtype plus operand_ulps * spacing of the largest
    operand magnitude plus terms_ulps * spacing of the sum of the terms' magnitudes (terms,
    one array per output), integers exact, bools the bytes 0 and 1 only; with signed_zeros,
    -0.0 is not 0.0)."""

    def spacing(v, dtype):  # numpy's, in dtype, finite at dtype's largest magnitude
        big = np.finfo(dtype).max
        v = np.minimum(np.abs(v), big).astype(dtype)
        return np.spacing(np.where(v == big, np.nextafter(big, 0), v)).astype(np.float64)

    if isinstance(expected, str) or isinstance(actual, str):
        if isinstance(expected, str) and isinstance(actual, str):
            return None  # both raise
        return "one raises and the other does not"
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
        if a.dtype != e.dtype:
            return f"out{i}.dtype={a.dtype}, expected {e.dtype}"
        if a.shape != e.shape:
            return f"out{i}.shape={a.shape}, expected {e.shape}"
        if not values or a.size == 0:
            continue
        if e.dtype.kind in "fc":
            e64, a64 = e.astype(np.complex128 if e.dtype.kind == "c" else np.float64), \
                a.astype(np.complex128 if e.dtype.kind == "c" else np.float64)
            same = (e64 == a64) | (np.isnan(e64) & np.isnan(a64))
            with np.errstate(all="ignore"):
                if ulps is None:
                    bound = atol + rtol * np.abs(e64)
                else:
                    dtype = np.abs(e).dtype
                    largest = np.zeros(e.shape)
                    for x in inputs if operand_ulps else ():
                        x = np.abs(np.asarray(x, np.float64))
                        x = np.where(np.isfinite(x), x, 0.0)
                        try:
                            x = np.broadcast_to(x, e.shape)
                        except ValueError:
                            x = x.max(initial=0.0)
                        largest = np.maximum(largest, x)
                    bound = ulps * spacing(e, dtype) + operand_ulps * spacing(largest, dtype)
                    if terms_ulps and terms is not None and terms[i].shape == e.shape:
                        t = np.abs(np.asarray(terms[i], np.float64))
                        bound = bound + terms_ulps * spacing(np.where(np.isnan(t), 0.0, t),
                                                             dtype)
                close = np.abs(a64 - e64) <= bound
            odd = np.isinf(e64) | np.isinf(a64) | np.isnan(e64) | np.isnan(a64)
            bad = ~same & (odd | ~close)
            if signed_zeros and e.dtype.kind == "f":
                bad |= (e64 == 0) & (a64 == 0) & (np.signbit(e64) != np.signbit(a64))
        elif e.dtype == bool:  # a byte other than 0 or 1 reads as True but casts to itself
            bad = (a != e) | (a.view(np.uint8) > 1)
        else:
            bad = a != e
        if bad.any():
            at = tuple(int(j) for j in np.argwhere(bad)[0])
            byte = f" (byte {int(a.view(np.uint8)[at])})" if a.dtype == bool else ""
            return f"out{i}[{', '.join(map(str, at))}] = {a[at]!r}{byte}, expected {e[at]!r}"
    return None


# ---- the row's build function as code ---------------------------------------------------

def _import_line(name: str, obj) -> str | None:
    """``import x as name`` / ``from m import q as name`` for a pytensor/numpy object."""
    if isinstance(obj, types.ModuleType):
        if obj.__name__.split(".")[0] in ALLOWED_ROOTS:
            return f"import {obj.__name__} as {name}"
        return None
    module = getattr(obj, "__module__", None) or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(obj, type | types.FunctionType | types.BuiltinFunctionType):
        return _instance_import(name, obj)
    if module.split(".")[0] not in ALLOWED_ROOTS or not qualname or "<" in qualname:
        return None
    try:
        found = __import__(module, fromlist=["_"])
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    if found is not obj:
        return None
    head, _, rest = qualname.partition(".")
    if rest:
        return f"from {module} import {head} as _{head}\n{name} = _{head}.{rest}"
    return f"from {module} import {head}" + (f" as {name}" if name != head else "")


#: Where PyTensor keeps op instances such as ``pt.maximum`` (an Elemwise, not a function).
INSTANCE_MODULES = ("pytensor.tensor", "pytensor.tensor.math", "pytensor.tensor.basic",
                    "pytensor.tensor.special", "pytensor.tensor.extra_ops",
                    "pytensor.tensor.nlinalg", "pytensor.tensor.slinalg", "pytensor.tensor.blas",
                    "pytensor.tensor.subtensor", "pytensor.tensor.sort", "pytensor.scalar",
                    "numpy")


def _instance_import(name: str, obj) -> str | None:
    """``from module import attr as name`` for an object some PyTensor module exports."""
    import importlib

    for module_name in INSTANCE_MODULES:
        module = importlib.import_module(module_name)
        for attr, value in vars(module).items():
            if value is obj and not attr.startswith("_"):
                return f"from {module_name} import {attr}" + (
                    f" as {name}" if name != attr else "")
    return None


def _literal(value) -> bool:
    if isinstance(value, tuple):
        return all(_literal(v) for v in value)
    return value is None or isinstance(value, bool | int | float | str)


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _source(fn) -> str:
    """The source of a lambda (as an expression) or a function definition."""
    code = fn.__code__
    if fn.__name__ != "<lambda>":
        return textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(Path(code.co_filename).read_text(encoding="utf-8"))
    text = Path(code.co_filename).read_text(encoding="utf-8")
    args = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = [node for node in ast.walk(tree) if isinstance(node, ast.Lambda)
             and node.lineno == code.co_firstlineno
             and [a.arg for a in (*node.args.args, *node.args.kwonlyargs)] == args]
    if len(found) != 1:
        raise Unprintable(f"{len(found)} lambdas with these arguments on line "
                          f"{code.co_firstlineno} of {code.co_filename}")
    return ast.get_source_segment(text, found[0])


def build_code(fn, name: str = "build", depth: int = 0) -> str:
    """Standalone code that defines ``name`` as ``fn`` (imports included); helper functions
    of the project it calls are written out too, at most three levels deep."""
    if depth > 3:
        raise Unprintable(f"{name}: helpers nest more than three levels deep")
    line = _import_line(name, fn)
    if line is not None:
        return line
    if not isinstance(fn, types.FunctionType):
        raise Unprintable(f"{fn!r} is neither a function nor a PyTensor/numpy object")
    lines: list[str] = []
    for var in sorted(_names(fn.__code__)):
        if var in fn.__globals__:
            value = fn.__globals__[var]
        elif hasattr(builtins, var) or var == fn.__name__:
            continue
        else:
            continue  # an attribute name (pt.exp's "exp")
        lines.append(_binding(var, value, depth))
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        lines.append(_binding(var, cell.cell_contents, depth))
    source = _source(fn)
    if fn.__name__ == "<lambda>":
        lines.append(f"{name} = {source}")
    else:
        lines += [source.rstrip(), f"{name} = {fn.__name__}"]
    return "\n".join(dict.fromkeys(lines))


def _binding(var: str, value, depth: int) -> str:
    if _literal(value):
        return f"{var} = {value!r}"
    line = _import_line(var, value)
    if line is None:
        if isinstance(value, types.FunctionType) and value.__module__.startswith("conformance"):
            return build_code(value, var, depth + 1)
        raise Unprintable(f"{var} = {value!r} is not a PyTensor/numpy object or a literal")
    return line


def graph_code(row, case, name: str = "graph") -> str:
    """A function ``name()`` returning (inputs, outputs) of the row's graph for ``case``:
    readable code when it rebuilds exactly this graph, else PyTensor's pickle of it."""
    import pytensor

    # no stack traces in the variables' tags: they name the project's files
    with pytensor.config.change_flags(traceback__limit=0):
        inputs, outputs = _graph(row, case)
    try:
        code = _readable_graph(row, case, name)
        if _rebuilds(code, name, inputs, outputs):
            return code
    # anything that stops the readable form leaves the pickle, which always works
    except (Unprintable, OSError, SyntaxError, TypeError, ValueError, NameError,
            RecursionError, AttributeError, ImportError):
        pass
    return _pickled_graph(inputs, outputs, name)


def _graph(row, case):
    """The row's graph on inputs typed after the case (as the harness builds it)."""
    import pytensor.tensor as pt

    inputs = [pt.tensor(name=f"x{i}", dtype=v.dtype, shape=s)
              for i, (v, s) in enumerate(zip(case.values, case.static, strict=True))]
    out = row.build(*inputs, **dict(case.params))
    return inputs, list(out) if isinstance(out, list | tuple) else [out]


def _readable_graph(row, case, name: str) -> str:
    body = build_code(row.build)
    lines = [f"def {name}():", textwrap.indent(body, "    ")]
    names = []
    for i, (value, stat) in enumerate(zip(case.values, case.static, strict=True)):
        names.append(f"x{i}")
        lines.append(f'    x{i} = pt.tensor("x{i}", dtype="{value.dtype}", '
                     f"shape={tuple(stat)!r})")
    args = ", ".join([*names, *(f"{k}={v!r}" for k, v in case.params)])
    lines += [f"    out = build({args})",
              "    return [" + ", ".join(names) + "], "
              "(list(out) if isinstance(out, (list, tuple)) else [out])"]
    return "\n".join(lines)


def _rebuilds(code: str, name: str, inputs, outputs) -> bool:
    from pytensor.graph.basic import equal_computations

    namespace: dict = {}
    exec("import numpy as np\nimport pytensor.tensor as pt\n" + code, namespace)
    new_inputs, new_outputs = namespace[name]()
    return len(new_outputs) == len(outputs) and equal_computations(
        new_outputs, outputs, new_inputs, inputs)


class _WithoutTraces(pickle.Pickler):
    """Pickles a graph without the stack traces PyTensor keeps in variables' tags (they
    name the project's files), wherever the tags are, inner graphs included."""

    def reducer_override(self, obj):
        from pytensor.graph.utils import Scratchpad

        if isinstance(obj, Scratchpad) and "trace" in obj.__dict__:
            state = {k: v for k, v in obj.__dict__.items() if k != "trace"}
            return copyreg.__newobj__, (type(obj),), state
        return NotImplemented


def _pickled_graph(inputs, outputs, name: str) -> str:
    import pytensor

    buffer = io.BytesIO()
    _WithoutTraces(buffer).dump((inputs, outputs))
    blob = buffer.getvalue()
    if b"conformance" in blob:
        raise Unprintable("the graph's pickle refers to the conformance package")
    shown = io.StringIO()
    pytensor.dprint(outputs, file=shown)
    comment = textwrap.indent(shown.getvalue().rstrip(), "    # ")
    text = base64.b64encode(blob).decode()
    return (f"def {name}():\n    # the graph, as pytensor.dprint shows it:\n{comment}\n"
            f'    return pickle.loads(base64.b64decode("{text}"))')


def case_code(row, case) -> str:
    """The case's graph as standalone PyTensor code (for the report's counterexamples)."""
    if row.code is not None:
        text = row.code(case)
        if "conformance" not in text:
            return text
    code = graph_code(row, case)
    head = ["import numpy as np", "import pytensor.tensor as pt"]
    if "pickle.loads" in code:
        head = ["import base64", "import pickle", *head]
    return "\n".join([*head, "", code, "", "inputs, outputs = graph()"])


# ---- ONNX models ---------------------------------------------------------------------

def model_code(model, name: str = "model", *, as_bytes: bool = True) -> str:
    """``name()`` returning the ONNX model's serialized bytes (``as_bytes``: what ONNX
    Runtime takes, so its scripts need no onnx) or the ModelProto, embedded in base64 (exact),
    with the model's text form (onnx.printer) as a comment to read."""
    import onnx

    try:
        text = onnx.printer.to_text(model.graph)
    except Exception:  # noqa: BLE001 - the comment is optional
        text = "(onnx.printer could not print this graph)"
    lines = [line[:160] for line in text.splitlines()[:80]]
    comment = textwrap.indent("\n".join(lines), "    # ")
    blob = base64.b64encode(model.SerializeToString()).decode()
    return (f"def {name}():\n    # the model's graph, as onnx.printer shows it:\n{comment}\n"
            f'    return {"" if as_bytes else "onnx.load_from_string("}'
            f'base64.b64decode("{blob}"){"" if as_bytes else ")"}')


def expected_from(repro) -> str:
    """Where the case's expected values come from: the side that is right, and for the
    Python linker the row's more accurate reference where it refines that dtype."""
    reference = repro.cell.row.reference
    if repro.right == "pytensor-py" and reference and repro.cell.dtype in reference.dtypes:
        return f"pytensor-py refined by {reference.source} ({reference.reason})"
    return repro.right
