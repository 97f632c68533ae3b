"""The converter's public contract: names, order, dtypes, shapes, shared values, errors."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.raise_op import Assert, CheckAndRaise

import converter
from converter import ConversionError, UnsupportedOpError
from converter.errors import RuntimeCheckDropped


def run(model, **feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_input_names_and_order_are_kept():
    b, a = pt.vector("b"), pt.matrix("a")
    model = converter.to_onnx([b, a], [a + b])
    assert [i.name for i in model.graph.input] == ["b", "a"]


def test_unknown_dimensions_stay_symbolic_and_static_ones_are_numbers():
    x = pt.tensor("x", dtype="float32", shape=(None, 3))
    model = converter.to_onnx([x], [pt.exp(x)])
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param and not dims[0].HasField("dim_value")
    assert dims[1].dim_value == 3


def test_implicit_upcast_becomes_an_explicit_cast_and_dtypes_are_exact():
    x = pt.vector("x", dtype="int8")
    y = pt.vector("y", dtype="float32")
    model = converter.to_onnx([x, y], [x + y, x * 2])
    assert "Cast" in [n.op_type for n in model.graph.node]
    out_types = [o.type.tensor_type.elem_type for o in model.graph.output]
    assert out_types == [onnx.TensorProto.FLOAT, onnx.TensorProto.INT8]
    got = run(model, x=np.array([1, -2], np.int8), y=np.array([0.5, 0.25], np.float32))
    assert got[0].dtype == np.float32 and got[1].dtype == np.int8
    np.testing.assert_array_equal(got[1], [2, -4])


def test_a_join_of_mixed_dtypes_casts_each_piece_to_the_upcast_dtype():
    # found by a random graph: Concat of int8 and float32 pieces is an invalid model
    x = pt.matrix("x", dtype="int8")
    y = pt.matrix("y", dtype="float32")
    joined = pt.join(0, x, y)
    model = converter.to_onnx([x, y], [joined])
    onnx.checker.check_model(model, full_check=True)
    a, b = np.array([[-3, 7]], np.int8), np.array([[0.5, 2.0]], np.float32)
    (got,) = run(model, x=a, y=b)
    expected = pytensor.function([x, y], joined)(a, b)
    assert got.dtype == expected.dtype == np.float32
    np.testing.assert_array_equal(got, expected)


def test_shared_variables_become_initializers_with_current_values():
    w = pytensor.shared(np.arange(3, dtype="float64"), name="w")
    w.set_value(np.array([5.0, 6.0, 7.0]))
    x = pt.vector("x")
    model = converter.to_onnx([x], [x * w])
    assert any(init.name == "w" for init in model.graph.initializer)
    np.testing.assert_allclose(run(model, x=np.ones(3))[0], [5.0, 6.0, 7.0])


def test_an_output_that_is_an_input_or_a_constant_is_still_a_node_output():
    x = pt.vector("x")
    model = converter.to_onnx([x], [x, pt.constant(np.float64(2.0))])
    np.testing.assert_allclose(run(model, x=np.ones(2))[0], [1.0, 1.0])


@pytest.mark.parametrize("opset", [converter.MIN_OPSET, None])
def test_models_pass_the_full_checker_at_min_and_default_opsets(opset):
    x = pt.matrix("x")
    model = converter.to_onnx([x], [pt.switch(x > 0, pt.exp(x), -x).sum(axis=0)], opset=opset)
    onnx.checker.check_model(model, full_check=True)
    want = converter.MIN_OPSET if opset else converter.default_opset()
    assert model.opset_import[0].version == want


def test_default_opset_is_one_both_onnx_runtime_and_the_reference_evaluator_accept():
    assert converter.MIN_OPSET <= converter.default_opset() <= onnx.defs.onnx_opset_version()


@pytest.mark.parametrize("opset", [converter.MIN_OPSET - 1, 10_000, "18"])
def test_out_of_range_opsets_are_refused_with_the_allowed_range(opset):
    x = pt.vector("x")
    with pytest.raises(ValueError, match=f"choose an int from {converter.MIN_OPSET}"):
        converter.to_onnx([x], [x + 1], opset=opset)


def test_unsupported_op_names_the_op_its_input_types_and_the_supported_list():
    x = pt.vector("x")
    out = pytensor.printing.Print("p")(x)
    with pytest.raises(UnsupportedOpError) as info:
        converter.to_onnx([x], [out])
    text = str(info.value)
    assert "Print" in text and "Vector(float64" in text and "supported_ops()" in text


def test_non_root_inputs_are_refused():
    x = pt.vector("x")
    y = x + 1
    with pytest.raises(ConversionError, match="must be root variables"):
        converter.to_onnx([y], [y * 2])


def test_outputs_needing_a_missing_input_are_refused():
    x, y = pt.vector("x"), pt.vector("y")
    with pytest.raises(ConversionError, match="not among the inputs"):
        converter.to_onnx([x], [x + y])


def test_non_tensor_variables_are_refused_by_type():
    rng = pytensor.shared(np.random.default_rng(0))
    draw = pt.random.normal(rng=rng, size=(2,))
    with pytest.raises(ConversionError, match="only dense tensors"):
        converter.to_onnx([], [rng])
    x = pt.vector("x")
    with pytest.raises((ConversionError, UnsupportedOpError)):
        converter.to_onnx([x], [x + draw])


def test_function_to_onnx_converts_the_optimized_graph_with_shared_values():
    w = pytensor.shared(np.array([1.0, 2.0, 3.0]), name="w")
    x = pt.vector("x")
    loss = pt.sum(pt.exp(x * w))
    fn = pytensor.function([x], [loss, pytensor.grad(loss, x)])
    model = converter.function_to_onnx(fn)
    xv = np.array([0.1, -0.2, 0.3])
    for got, want in zip(run(model, x=xv), fn(xv), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_function_to_onnx_refuses_updates():
    w = pytensor.shared(np.float64(0.0), name="w")
    x = pt.scalar("x")
    fn = pytensor.function([x], x, updates=[(w, w + x)])
    with pytest.raises(ConversionError, match="updates"):
        converter.function_to_onnx(fn)


def test_save_writes_a_loadable_model(tmp_path):
    x = pt.vector("x")
    path = tmp_path / "m.onnx"
    converter.save(converter.to_onnx([x], [x * 2]), path)
    onnx.checker.check_model(onnx.load(path), full_check=True)


def test_every_rule_module_is_registered():
    import converter.ops as ops

    on_disk = {m.name for m in pkgutil.iter_modules(ops.__path__)}
    assert on_disk == set(ops.CATEGORY_MODULES), "a converter/ops module is not registered"
    for name in ops.CATEGORY_MODULES:
        importlib.import_module(f"converter.ops.{name}")


def test_importing_the_converter_needs_neither_hypothesis_nor_pytest():
    code = ("import sys, converter; bad = {'hypothesis', 'pytest', 'onnxruntime'} & "
            "set(sys.modules); assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_class_has_two_rules_on_one_dispatcher():
    """singledispatch silently keeps the last registration; two rules for one class is a bug."""
    import re
    from collections import Counter
    from pathlib import Path

    import converter.ops as ops

    found = Counter()
    for path in Path(ops.__path__[0]).glob("*.py"):
        for dispatcher, cls in re.findall(r"(\w+)\.register\(([\w.]+)\)", path.read_text()):
            if not cls.startswith("_"):  # loop variables registering a table's classes
                found[(dispatcher, cls)] += 1
    twice = sorted(k for k, n in found.items() if n > 1)
    assert not twice, f"registered more than once: {twice}"


@pytest.mark.parametrize(("build", "op_name"), [
    (lambda x: Assert("x must be positive")(x, pt.all(x > 0)), "Assert"),
    (lambda x: CheckAndRaise(ValueError, "bad")(x, pt.all(x > 0)), "CheckAndRaise"),
    (lambda x: pt.specify_shape(x, (3,)), "SpecifyShape"),
])
def test_a_dropped_runtime_check_warns_once_per_conversion(build, op_name):
    x = pt.vector("x")
    outputs = [build(x), build(x) * 2]  # two checks of one kind: one warning
    for _ in range(2):  # and again for the next conversion
        with pytest.warns(RuntimeCheckDropped) as caught:
            model = converter.to_onnx([x], outputs)
        [warning] = caught
        assert op_name in str(warning.message) and "drops the check" in str(warning.message)
    # the model runs without the check: PyTensor would raise on this input
    assert run(model, x=np.array([-1.0, 2.0]))[0].tolist() == [-1.0, 2.0]


def test_a_graph_without_runtime_checks_converts_without_warnings():
    x = pt.vector("x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        converter.to_onnx([x], [pt.exp(x)])
