"""The converter's arguments: anything a caller may pass gets a named error or a valid model.

Regression tests for each misuse, then Hypothesis feeding arbitrary Python objects to
``to_onnx``, ``function_to_onnx`` and ``save``. A valid model is one the full ONNX checker
accepts and whose input and output names are the variables' own names.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from pytensor.compile.mode import Mode

import converter
from converter import ConversionError, UnsupportedOpError

FUZZ = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def _x(name="x"):
    return pt.vector(name)


# -- one regression test per misuse ---------------------------------------------------------

@pytest.mark.parametrize(("arguments", "says"), [
    (lambda x: ([1.5], [x]), r"inputs\[0\] is a float \(1.5\); expected a PyTensor variable"),
    (lambda x: ([x], [1.5]), r"outputs\[0\] is a float \(1.5\)"),
    (lambda x: ([x], 1.5), r"outputs is a float \(1.5\); expected a PyTensor variable or a list"),
    (lambda x: ([x], [np.ones(3)]), r"outputs\[0\] is a numpy.ndarray \(array\(\[1\., 1"),
    (lambda x: (["x"], [x]), r"inputs\[0\] is a str \('x'\).*not its name"),
    (lambda x: ("x", [x]), r"inputs is a str \('x'\); expected a list or tuple"),
    (lambda x: ((v for v in [x]), [x]), r"inputs is a generator .*list\(\.\.\.\)"),
    (lambda x: ([x], (v for v in [x])), r"outputs is a generator"),
    (lambda x: ([[x]], [x]), r"inputs\[0\] is a list .*flat list"),
    (lambda x: ([x], []), r"outputs is empty"),
    (lambda x: ({x: 1}, [x]), r"inputs is a dict"),
], ids=["float-input", "float-output", "float-outputs", "array-output", "name-input",
        "str-inputs", "generator-inputs", "generator-outputs", "nested-inputs", "no-outputs",
        "dict-inputs"])
def test_wrong_arguments_name_the_argument_what_was_given_and_what_is_allowed(arguments, says):
    inputs, outputs = arguments(_x())
    with pytest.raises(ConversionError, match=says):
        converter.to_onnx(inputs, outputs)


def test_a_non_string_variable_name_is_refused():
    x = _x()
    x.name = 5
    with pytest.raises(ConversionError, match=r"inputs\[0\]\.name is an int \(5\)"):
        converter.to_onnx([x], [x * 2])


def test_a_name_onnx_cannot_store_is_refused():
    with pytest.raises(ConversionError, match="UTF-8"):
        converter.to_onnx([_x("bad\ud800")], [pt.constant(1.0)])


@pytest.mark.parametrize("opset", [True, 18.0, "18", [18]])
def test_an_opset_of_the_wrong_type_is_refused(opset):
    x = _x()
    with pytest.raises(ConversionError, match=r"opset=.* choose an int from"):
        converter.to_onnx([x], [x * 2], opset=opset)


def test_names_are_kept_verbatim_whatever_characters_they_hold():
    a = pt.vector("a b/c:0")
    out = pt.exp(a)
    out.name = "exp(a):0 ü"
    model = converter.to_onnx([a], [out])
    assert [i.name for i in model.graph.input] == ["a b/c:0"]
    assert [o.name for o in model.graph.output] == ["exp(a):0 ü"]
    onnx.checker.check_model(model, full_check=True)


def test_an_output_named_like_an_inner_node_keeps_its_name():
    x = _x()
    out = x * 3
    out.name = "mul"
    model = converter.to_onnx([x], [out, x * 2])
    assert model.graph.output[0].name == "mul"


@pytest.mark.parametrize("clash", ["inputs", "input and output", "outputs"])
def test_two_variables_with_one_name_are_refused(clash):
    a, b = _x("v"), _x("w")
    out, other = a + b, a - b
    if clash == "inputs":
        b.name = "v"
    elif clash == "input and output":
        out.name = "v"
    else:
        out.name = other.name = "o"
    with pytest.raises(ConversionError, match="different variables both named"):
        converter.to_onnx([a, b], [out, other])


def test_a_variable_listed_again_keeps_its_name_once():
    x = _x()
    y = x * 2
    y.name = "y"
    model = converter.to_onnx([x], [y, y, x])
    names = [o.name for o in model.graph.output]
    assert names[0] == "y" and len(set(names)) == 3 and "x" not in names


def test_function_to_onnx_names_the_copies_pytensor_makes_of_a_named_output():
    x = _x()
    y = x * 2
    y.name = "y"
    fn = pytensor.function([x], [y, y], mode=Mode(linker="py", optimizer="fast_run"))
    model = converter.function_to_onnx(fn)
    assert model.graph.output[0].name == "y"
    assert [o.name for o in fn.maker.fgraph.outputs] == ["y", "y"]  # the function is untouched


@pytest.mark.parametrize("fn", [None, "f", _x()])
def test_function_to_onnx_refuses_what_is_not_a_compiled_function(fn):
    with pytest.raises(ConversionError, match=r"fn is .*expected a compiled pytensor\.function"):
        converter.function_to_onnx(fn)


def test_complex_tensors_are_refused_with_the_dtypes_that_are_supported():
    c = pt.vector("c", dtype="complex128")
    with pytest.raises(ConversionError, match=r"complex128.*float16/32/64"):
        converter.to_onnx([c], [c * 2])
    x = _x()
    with pytest.raises(UnsupportedOpError, match="complex64 tensors"):
        converter.to_onnx([x], [pt.real(x.astype("complex64"))])


@pytest.mark.parametrize(("model", "path", "says"), [
    (None, "m.onnx", r"model is None; expected an onnx.ModelProto"),
    ("m.onnx", "m.onnx", r"model is a str"),
    ("valid", None, r"path is None; expected a file name"),
    ("valid", ".", r"is a directory"),
    ("valid", "missing/m.onnx", r"does not exist"),
])
def test_save_checks_its_arguments(tmp_path, monkeypatch, model, path, says):
    monkeypatch.chdir(tmp_path)
    if isinstance(model, str) and model == "valid":  # model may be an array
        x = _x()
        model = converter.to_onnx([x], [x * 2])
    with pytest.raises(ConversionError, match=says):
        converter.save(model, path)


# -- fuzzing ---------------------------------------------------------------------------------

def _pool():
    """Variables of every kind a caller might pass, good and bad."""
    x, m = pt.vector("x"), pt.matrix("m", dtype="float32")
    i8 = pt.vector("i8", dtype="int8")
    shared = pytensor.shared(np.arange(3.0), name="w")
    rng = pytensor.shared(np.random.default_rng(0))
    unnamed = pt.vector()
    return [x, m, i8, unnamed, x + 1, pt.exp(m).sum(), x * shared, shared, rng,
            pt.constant(2.0), pt.vector("c", dtype="complex64"), pt.random.normal(rng=rng),
            pytensor.scalar.float64("s"), pt.cast(i8, "complex128"), x.shape, pt.vector("x"),
            m.T @ m]


POOL = _pool()
leaves = st.one_of(
    st.sampled_from(POOL), st.none(), st.booleans(), st.integers(), st.floats(), st.text(),
    st.binary(max_size=4), hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=3)),
    st.sampled_from([pt.exp, pt.vector, pt.TensorType("float64", shape=(None,)), object()]),
)
objects = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner),
                            st.lists(inner, max_size=3).map(iter),
                            st.dictionaries(st.text(max_size=3), inner, max_size=2)),
    max_leaves=6,
)
variable_lists = st.lists(st.sampled_from(POOL), max_size=4)
opsets = st.one_of(st.none(), st.integers(converter.MIN_OPSET, onnx.defs.onnx_opset_version()),
                   st.integers(), st.text(max_size=3), st.floats(), st.booleans())


def _convert_or_refuse(fn, *args, **kwargs):
    """The model ``fn`` returns (checked), or None when it refused with a named error."""
    try:
        model = fn(*args, **kwargs)
    except ConversionError as exc:  # UnsupportedOpError included
        assert str(exc), "a refusal must say why"
        return None
    onnx.checker.check_model(model, full_check=True)
    return model


@FUZZ
@given(inputs=st.one_of(objects, variable_lists), outputs=st.one_of(objects, variable_lists),
       opset=opsets)
def test_any_arguments_give_a_named_error_or_a_valid_model(inputs, outputs, opset):
    _convert_or_refuse(converter.to_onnx, inputs, outputs, opset=opset)


@FUZZ
@given(names=st.lists(st.one_of(st.none(), st.text(max_size=8)), min_size=1, max_size=3),
       out_name=st.one_of(st.none(), st.text(max_size=8)))
def test_any_names_are_kept_verbatim_or_refused(names, out_name):
    inputs = [pt.vector(dtype="float32") for _ in names]
    for var, name in zip(inputs, names, strict=True):
        var.name = name
    out = inputs[0] * 2
    for var in inputs[1:]:
        out = out + var
    out.name = out_name
    model = _convert_or_refuse(converter.to_onnx, inputs, [out])
    named = [n for n in [*names, out_name] if n]
    storable = all(_utf8(n) for n in named)
    assert (model is None) == (len(set(named)) < len(named) or not storable), named
    if model is not None:
        got = [i.name for i in model.graph.input] + [o.name for o in model.graph.output]
        for name, kept in zip([*names, out_name], got, strict=True):
            assert kept == name if name else kept, (name, kept)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@FUZZ
@given(fn=objects, opset=opsets)
def test_function_to_onnx_gives_a_named_error_for_anything_but_a_function(fn, opset):
    with pytest.raises(ConversionError):
        converter.function_to_onnx(fn, opset=opset)


@FUZZ
@given(model=st.one_of(objects, st.just("valid")),
       path=st.one_of(objects, st.sampled_from(["m.onnx", ".", "no/such/dir/m.onnx"])))
def test_save_gives_a_named_error_or_writes_a_loadable_model(tmp_path_factory, model, path):
    folder = tmp_path_factory.mktemp("save")
    if isinstance(model, str) and model == "valid":  # model may be an array
        x = _x()
        model = converter.to_onnx([x], [x * 2])
    # text stays a file name inside the test's folder, whatever characters it holds
    target = folder / path.replace("/", "_") if isinstance(path, str) and path else path
    try:
        converter.save(model, target)
    except ConversionError:
        return
    onnx.checker.check_model(onnx.load(target), full_check=True)
