"""Repro bundles: a folder per failing case that replays anywhere the project is checked out.

A bundle holds ``inputs.npz`` and ``expected.npz`` (no pickles), ``actual-<backend>.npz``,
``terms.npz`` for a budget on the sum of the terms' magnitudes (``Tol.terms_ulps``),
``model.onnx`` when conversion succeeded, ``meta.json`` (row, dtype, opset, layout, params,
backends, message, blame, versions, the converter that made it as ``module:callable`` and its
version, Hypothesis blob) and ``repro.py``, which needs only numpy and onnxruntime.
``conformance repro <bundle>`` replays the case on every backend with the bundle's converter.
"""

from __future__ import annotations

import json
import platform
import re
import zipfile
import zlib
from importlib import metadata
from pathlib import Path

import numpy as np
import onnx

from conformance.core.converters import PROJECT as PROJECT_CONVERTER
from conformance.core.results import jsonable
from conformance.core.schema import (
    COUNT,
    STRING,
    Invalid,
    Is,
    ListOf,
    Literal,
    Nullable,
    Obj,
    Tuple,
    ints,
    one_line,
    parse,
    validate,
)
from conformance.registry import ALL_DTYPES, Case

_REPRO_PY = '''\
"""Replays one conformance failure on ONNX Runtime: python repro.py (needs numpy, onnxruntime).

Full replay on every backend, PyTensor included: conformance repro <this folder>
"""
import json, pathlib, sys
import numpy as np
import onnxruntime as ort

here = pathlib.Path(__file__).parent
meta = json.loads((here / "meta.json").read_text())
inputs = np.load(here / "inputs.npz")
expected = np.load(here / "expected.npz")
session = ort.InferenceSession(str(here / "model.onnx"), providers=["CPUExecutionProvider"])
feed = {i.name: inputs[f"x{n}"] for n, i in enumerate(session.get_inputs())}
got = session.run(None, feed)
rtol, atol = meta["tolerance"]
ulps, operand_ulps, *rest = meta.get("ulps") or (None, 0.0)
terms_ulps = rest[0] if rest else 0.0  # the sum of the terms' magnitudes, per output
terms = np.load(here / "terms.npz") if (here / "terms.npz").is_file() else None


def spacing(v, dtype):  # numpy's, in the output's dtype, finite at its largest magnitude
    big = np.finfo(dtype).max
    v = np.minimum(np.abs(v), big).astype(dtype)
    return np.spacing(np.where(v == big, np.nextafter(big, 0), v)).astype(np.float64)


def close(out, want, n):
    """Within rtol/atol, or within ulps of want plus operand_ulps of the largest input plus
    terms_ulps of the sum of the terms' magnitudes."""
    if ulps is None or out.dtype.kind != "f":
        return np.allclose(out, want, rtol=rtol, atol=atol, equal_nan=True)
    largest = np.zeros(want.shape)
    for x in (np.abs(inputs[k].astype(np.float64)) for k in inputs.files):
        x = np.where(np.isfinite(x), x, 0.0)
        try:
            largest = np.maximum(largest, np.broadcast_to(x, want.shape))
        except ValueError:
            largest = np.maximum(largest, x.max(initial=0.0))
    o, w = out.astype(np.float64), want.astype(np.float64)
    same = (o == w) | (np.isnan(o) & np.isnan(w))
    bound = ulps * spacing(want, want.dtype) + operand_ulps * spacing(largest, want.dtype)
    if terms_ulps and terms is not None and terms[f"out{n}"].shape == want.shape:
        t = np.abs(terms[f"out{n}"].astype(np.float64))
        bound = bound + terms_ulps * spacing(np.where(np.isnan(t), 0.0, t), want.dtype)
    with np.errstate(invalid="ignore"):
        return bool((same | (np.isfinite(o) & np.isfinite(w) & (np.abs(o - w) <= bound))).all())


bad = False
for n, out in enumerate(got):
    want = expected[f"out{n}"]
    if out.dtype != want.dtype or out.shape != want.shape:
        print(f"out{n}: onnxruntime gives {out.dtype}{list(out.shape)}, "
              f"pytensor-py gave {want.dtype}{list(want.shape)}")
        bad = True
    elif not close(out, want, n):
        print(f"out{n}: onnxruntime gives\\n{out}\\npytensor-py gave\\n{want}")
        bad = True
print("onnxruntime still disagrees" if bad else "onnxruntime agrees with pytensor-py")
sys.exit(1 if bad else 0)
'''


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for pkg in ("pytensor", "onnx", "onnxruntime", "numpy", "hypothesis"):
        try:
            found[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            found[pkg] = "not installed"
    return found


def bundle_name(test_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", test_id).strip("-")


def _from_json(value):
    return tuple(_from_json(v) for v in value) if isinstance(value, list) else value


def write_bundle(folder: Path, outcome, *, notes=(), model=None,
                 converter: dict | None = None) -> Path:
    """Write the bundle for a failing ``CaseOutcome`` into ``folder`` (replacing it);
    ``converter`` is ``{"spec": "module:callable", "version": ...}`` of the converter under
    test (default: the project's own, unversioned)."""
    folder.mkdir(parents=True, exist_ok=True)
    case, spec = outcome.case, outcome.spec
    np.savez(folder / "inputs.npz", **{f"x{i}": v for i, v in enumerate(case.values)})
    if not isinstance(outcome.expected, BaseException):
        np.savez(folder / "expected.npz", **{f"out{i}": v for i, v in enumerate(outcome.expected)})
    for name, actual in outcome.actual.items():
        if not isinstance(actual, BaseException):
            np.savez(folder / f"actual-{name}.npz", **{f"out{i}": v for i, v in enumerate(actual)})
    if outcome.terms is not None:
        np.savez(folder / "terms.npz", **{f"out{i}": v for i, v in enumerate(outcome.terms)})
    if model is not None:
        (folder / "model.onnx").write_bytes(model.SerializeToString())
        (folder / "repro.py").write_text(_REPRO_PY, encoding="utf-8")
    from conformance.core.harness import tolerance_for

    tol = tolerance_for(spec, outcome.expected, outcome.graph)
    meta = {
        "test": spec.test_id, "row": spec.row.name, "dtype": spec.dtype, "opset": spec.opset,
        "opset_label": spec.opset_label, "backends": list(spec.backends),
        "static": [list(s) for s in case.static], "params": [[k, v] for k, v in case.params],
        "case": outcome.description, "message": outcome.failure_message(),
        "blame": str(outcome.blame) if outcome.blame else None,
        "tolerance": [tol.rtol, tol.atol],
        "ulps": [tol.ulps, tol.operand_ulps, tol.terms_ulps] if tol.in_ulps else None,
        "versions": versions(), "notes": list(notes),
        "converter": converter or {"spec": PROJECT_CONVERTER, "version": None},
    }
    (folder / "meta.json").write_text(json.dumps(jsonable(meta), indent=1), encoding="utf-8")
    return folder


class BundleError(Invalid):
    """A repro bundle's files are missing or do not describe a case that can be replayed."""


def _json_scalars(value) -> bool:
    """Numbers, strings, booleans, null and lists of them: what Case.params may hold once
    lists become tuples (params must be hashable: they key the graph cache)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            return False
    return True


#: Upper bound only; whether the converter under test supports the opset is part of the replay.
_OPSET = ints(1, onnx.defs.onnx_opset_version())
META = Obj(required={
    "row": STRING, "dtype": Literal(*ALL_DTYPES), "opset": _OPSET,
    "backends": ListOf(STRING, min_items=1),
    "static": ListOf(ListOf(Nullable(COUNT))),
    "params": ListOf(Tuple(STRING, Is(_json_scalars, "a JSON value without objects"))),
}, optional={
    "opset_label": STRING, "test": STRING,
    # absent from bundles written before it was recorded: they replay with the project's
    "converter": Obj(required={"spec": STRING, "version": Nullable(STRING)},
                     expected='an object {"spec": "module:callable", "version": ...}'),
}, expected="an object")


def load_case(folder: Path) -> tuple[dict, Case]:
    """The bundle's metadata and its Case, rebuilt exactly (dtypes, layout, params).

    Raises BundleError naming the file and what is wrong with it.
    """
    folder = Path(folder)
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        raise BundleError(f"{folder} is not a repro bundle: it has no meta.json")
    try:
        meta = parse(meta_path.read_bytes(), str(meta_path))
    except OSError as exc:
        raise BundleError(f"{meta_path} cannot be read ({exc.strerror or exc})") from None
    except Invalid as exc:
        raise BundleError(str(exc)) from None
    try:
        validate(META, meta, "the top level")
    except Invalid as exc:
        raise BundleError(f"{meta_path}: {exc}") from None
    values = _load_inputs(folder / "inputs.npz")
    static = tuple(tuple(s) for s in meta["static"])
    _check_layout(folder, values, static)
    params = tuple((k, _from_json(v)) for k, v in meta["params"])
    return meta, Case(values, static, params)


def _load_inputs(path: Path) -> tuple[np.ndarray, ...]:
    """x0, x1, ... from an .npz file, refusing object arrays: loading one unpickles it, which
    can run arbitrary code."""
    if not path.is_file():
        raise BundleError(f"{path.parent}: the bundle has no {path.name} (the case's inputs)")
    try:
        arrays = _read_npz(path)
    except BundleError:
        raise
    # numpy reports a damaged archive, member or header with any of these
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        raise BundleError(f"{path} is not a readable .npz archive of arrays ({one_line(exc)}); "
                          "the file is damaged or cut short") from None
    expected = [f"x{i}" for i in range(len(arrays))]
    if sorted(arrays) != sorted(expected):
        raise BundleError(f"{path} holds arrays {sorted(arrays)}; expected x0, x1, ... "
                          "(one per input, numbered from 0)")
    for name in expected:
        if arrays[name].dtype.name not in ALL_DTYPES:
            raise BundleError(f"{path}: array {name!r} has dtype {arrays[name].dtype}; "
                              f"expected one of {', '.join(ALL_DTYPES)}")
    return tuple(arrays[name] for name in expected)


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    headers = {(1, 0): np.lib.format.read_array_header_1_0,
               (2, 0): np.lib.format.read_array_header_2_0}
    loaded = np.load(path, allow_pickle=False)
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise BundleError(f"{path} is a single .npy array; expected an .npz archive (np.savez)")
    arrays = {}
    with loaded as data:
        for name in data.files:
            with data.zip.open(f"{name}.npy") as member:
                version = np.lib.format.read_magic(member)
                if version not in headers:
                    raise ValueError(f"member {name!r} has .npy format version {version}")
                _, _, dtype = headers[version](member)
            if dtype.hasobject:
                raise BundleError(
                    f"{path}: array {name!r} holds Python objects, stored as a pickle; "
                    "pickles are refused because loading one can run arbitrary code "
                    "(bundles hold plain numeric arrays)")
            arrays[name] = data[name]
    return arrays


def _check_layout(folder: Path, values, static) -> None:
    if len(static) != len(values):
        raise BundleError(f"{folder}: meta.json static lists {len(static)} input layouts but "
                          f"inputs.npz holds {len(values)} arrays; expected one per input")
    for i, (value, layout) in enumerate(zip(values, static, strict=True)):
        fits = len(layout) == value.ndim and all(
            d is None or d == n for d, n in zip(layout, value.shape, strict=True))
        if not fits:
            raise BundleError(
                f"{folder}: meta.json static[{i}]={list(layout)} does not fit x{i} of shape "
                f"{list(value.shape)}; expected one entry per axis, null or the axis length")
