"""What users export: a function compiled by ``pytensor.function`` with no mode argument (the
NUMBA mode on PyTensor 3, the C mode on 2.38), handed to ``converter.function_to_onnx``, must
give on ONNX Runtime what the function gives.

This process does not go through the conformance plugin, so PyTensor's own default linker is
in force (the conformance run sets ``cvm`` for its inner graphs).
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytensor
import pytest
from packaging.version import Version

import converter
from conformance.backends.onnxruntime import default_linker
from conformance.core.harness import build_graph
from conformance.core.oracle import assert_agree
from conformance.registries import row_named
from conformance.strategies.canonical import canonical_cases
from conformance.versions import installed

#: rows whose canonical graphs the default rewrites change: fusion, reductions, BLAS-free
#: products, indexing, softmax and an OpFromGraph (pad)
ROWS = [("exp", "float64"), ("sum", "float32"), ("softmax", "float64"), ("dot", "float64"),
        ("advanced_subtensor", "float64"), ("pad_constant", "float64"), ("log1p", "float32"),
        ("matmul", "float32")]


def _run_onnx(model, values):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), opts,
                                   providers=["CPUExecutionProvider"])
    names = [i.name for i in model.graph.input]
    return [np.asarray(o) for o in session.run(None, dict(zip(names, values, strict=True)))]


def test_the_default_mode_is_the_one_the_harness_rewrites_for():
    pytensor_version = installed("pytensor")
    expected = "numba" if pytensor_version >= Version("3") else "cvm"
    assert default_linker() == expected
    linker = type(pytensor.compile.mode.get_default_mode().linker).__name__
    assert linker == ("NumbaLinker" if expected == "numba" else "VMLinker"), linker


@pytest.mark.parametrize(("name", "dtype"), ROWS, ids=[f"{n}[{d}]" for n, d in ROWS])
def test_a_default_mode_function_exports_and_matches(name, dtype):
    row = row_named(name)
    case = canonical_cases(row.cases, (dtype,))[dtype]
    inputs, outputs = build_graph(row, case)
    fn = pytensor.function(inputs, outputs, on_unused_input="ignore")
    model = converter.function_to_onnx(fn)
    expected = [np.asarray(o) for o in fn(*[v.copy() for v in case.values])]
    actual = _run_onnx(model, [v.copy() for v in case.values])
    assert_agree(expected, actual, row.tolerance(dtype), backend="onnxruntime",
                 reference="pytensor.function (default mode)",
                 case=case.describe(name))
