"""Inputs as ``pytensor.function`` takes them: ``In(x, ...)`` converts as ``x`` where its flags
cannot change the values computed, and is refused, naming the flag, where they can; sparse
inputs and outputs are refused instead of being converted as dense ones."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytensor
import pytensor.sparse as sparse
import pytensor.tensor as pt
import pytest
from pytensor.compile.io import In

import converter


@pytest.mark.parametrize("flags", [dict(mutable=True), dict(borrow=True), dict(name="y"),
                                   dict(strict=True), dict(allow_downcast=True)],
                         ids=lambda f: next(iter(f)))
def test_an_in_whose_flags_change_nothing_computed_converts_as_its_variable(flags):
    x = pt.vector("x")
    model = converter.to_onnx([In(x, **flags)], [pt.exp(x) * 2])
    assert [i.name for i in model.graph.input] == ["x"]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    values = np.array([0.0, 1.5])
    (out,) = session.run(None, {"x": values})
    np.testing.assert_allclose(out, np.exp(values) * 2, rtol=1e-12)


def test_an_in_with_an_update_is_refused_naming_the_flag():
    x = pt.vector("x")
    with pytest.raises(converter.ConversionError, match=r"inputs\[0\] is In\(x, update=\.\.\.\)"
                                                        r".*stateless"):
        converter.to_onnx([In(x, update=x * 2)], [pt.exp(x)])


def test_an_in_with_an_update_is_refused_by_function_to_onnx_too():
    s = pytensor.shared(np.zeros(2), name="s")
    x = pt.vector("x")
    fn = pytensor.function([x], x + s, updates={s: s + x})
    with pytest.raises(converter.ConversionError, match="updates"):
        converter.function_to_onnx(fn)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_a_sparse_input_is_refused_naming_its_type(fmt):
    s = getattr(sparse, f"{fmt}_matrix")("s")
    with pytest.raises(converter.ConversionError,
                       match=rf"inputs\[0\] is SparseTensorType.*format '{fmt}'.*dense"):
        converter.to_onnx([s], [sparse.dense_from_sparse(s)])


def test_a_sparse_output_is_refused():
    x = pt.matrix("x")
    with pytest.raises(converter.ConversionError, match=r"outputs\[0\] is SparseTensorType"):
        converter.to_onnx([x], [sparse.csr_from_dense(x)])
