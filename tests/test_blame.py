"""Blame is read off which backends agree with the reference."""

from __future__ import annotations

import pytest

from conformance.backends import BACKENDS
from conformance.core.blame import classify
from conformance.registry import Blame

RAN = [b for b in BACKENDS if b != "pytensor-py"]
ONNX_PLAIN = ["onnxruntime", "onnxruntime-noopt", "onnx-reference"]


@pytest.mark.parametrize(("failed", "blame"), [
    ([*ONNX_PLAIN, "onnxruntime-rewritten"], Blame.CONVERTER),
    (["onnxruntime", "onnxruntime-noopt"], Blame.ONNXRUNTIME),
    (["onnxruntime", "onnxruntime-noopt", "onnxruntime-rewritten"], Blame.ONNXRUNTIME),
    (["onnxruntime"], Blame.ONNXRUNTIME_OPTIMIZER),
    (["onnx-reference"], Blame.ONNX_REFERENCE),
    (["pytensor-c"], Blame.PYTENSOR),
    (["pytensor-c-opt", "onnxruntime-rewritten"], Blame.PYTENSOR),
    (["onnxruntime-rewritten"], Blame.CONVERTER),
    (["pytensor-onnx"], Blame.CONVERTER),
    (["onnxruntime-rewritten", "pytensor-onnx"], Blame.CONVERTER),
    (["pytensor-c-opt", "pytensor-onnx"], Blame.PYTENSOR),
    (["onnxruntime", "onnxruntime-noopt", "pytensor-onnx"], Blame.ONNXRUNTIME),
    (RAN, Blame.PYTENSOR),
    (["pytensor-c", "onnx-reference"], Blame.UNKNOWN),
])
def test_blame_follows_which_backends_disagree(failed, blame):
    assert classify(failed, RAN) is blame


def test_a_conversion_failure_is_the_converters():
    assert classify(["onnxruntime"], RAN, conversion_failed=True) is Blame.CONVERTER


def test_blame_needs_a_failure():
    with pytest.raises(ValueError, match="at least one failed backend"):
        classify([], RAN)


def test_without_a_pytensor_backend_beside_it_the_reference_is_not_presumed_wrong():
    onnx = {"onnxruntime", "onnx-reference"}
    assert classify(onnx, onnx) == Blame.CONVERTER
    assert classify(onnx | {"pytensor-c"}, onnx | {"pytensor-c"}) == Blame.PYTENSOR
