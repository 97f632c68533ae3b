"""Releases differ in one place: converter/compat.py says where each PyTensor release keeps
an op class and which graph forms it builds; nothing else guesses with try/except ImportError,
and a class the release lacks has no rule."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytensor.tensor as pt
import pytest

import converter
from converter import compat

ROOT = Path(__file__).resolve().parents[1]
PYTENSOR_IMPORT_GUARD = re.compile(r"try:\s*\n\s*(?:from|import) pytensor[\w.]*[^\n]*\n"
                                   r"(?:[^\n]*\n){0,8}?\s*except ImportError")


def test_no_module_guards_a_pytensor_import_itself():
    guarded = [str(path.relative_to(ROOT)) for package in ("converter", "conformance")
               for path in (ROOT / package).rglob("*.py")
               if path.name != "compat.py" and PYTENSOR_IMPORT_GUARD.search(path.read_text())]
    assert not guarded, (f"{guarded} guard a PyTensor import with try/except ImportError; say "
                         f"where each release keeps it in converter/compat.py's CLASSES")


@pytest.mark.parametrize("name", sorted(compat.CLASSES))
def test_every_listed_name_resolves_or_is_absent_from_every_listed_module(name):
    found = compat.lookup(name)
    holders = [m for m in compat.CLASSES[name] if hasattr(importlib.import_module(m), name)
               ] if all(_importable(m) for m in compat.CLASSES[name]) else None
    if found is None:
        assert not holders, f"{name} is in {holders} but lookup gave None"
    else:
        assert getattr(found, "__name__", name) == name


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def test_an_unknown_name_says_which_are_known():
    with pytest.raises(KeyError, match=r"known: .*AdvancedSubtensor1"):
        compat.lookup("NoSuchOp")
    with pytest.raises(KeyError, match=r"known: .*join_axis_property"):
        compat.builds("no_such_form")


def test_absent_classes_have_no_rule_and_present_ones_do():
    supported = set(converter.supported_ops()["ops"]) | set(converter.supported_ops()["scalar_ops"])
    for name in ("AdvancedSubtensor1", "AdvancedIncSubtensor1", "Ger", "Deg2Rad", "Rad2Deg",
                 "SoftmaxGrad", "Einsum", "Pad"):
        present = compat.lookup(name) is not None
        assert (name in supported) == present, (
            f"{name}: {'present' if present else 'absent'} in PyTensor {compat.VERSION} but "
            f"{'no' if present else 'a'} rule is registered")


@pytest.mark.parametrize(("form", "build", "prop"), [
    ("join_axis_property", lambda: pt.join(1, pt.matrix(), pt.matrix()), "axis"),
    ("split_axis_property", lambda: pt.split(pt.matrix(), [1, 1], n_splits=2, axis=1)[0], "axis"),
    ("sort_axis_property", lambda: pt.sort(pt.matrix(), axis=1), "axis"),
])
def test_forms_describe_what_the_release_builds(form, build, prop):
    op = build().owner.op
    assert compat.builds(form) == (prop in op.__props__), (
        f"FORMS[{form!r}] says {compat.builds(form)} but {type(op).__name__}'s props are "
        f"{op.__props__}")


def test_join_split_and_sort_convert_whichever_form_the_release_builds():
    import numpy as np
    import onnxruntime as ort

    x = pt.matrix("x", dtype="float64")
    a, b = pt.split(x, [1, 2], n_splits=2, axis=1)
    out = pt.join(1, pt.sort(b, axis=1), a)
    model = converter.to_onnx([x], [out])
    value = np.array([[3.0, 2.0, 1.0], [0.5, -1.0, 4.0]])
    got = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"x": value})[0]
    want = np.concatenate([np.sort(value[:, 1:], axis=1), value[:, :1]], axis=1)
    np.testing.assert_array_equal(got, want)
