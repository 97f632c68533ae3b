"""The ONNX reference evaluator on the converted model: the specification's executable reading."""

from __future__ import annotations

import warnings

import numpy as np

from conformance.backends.base import Backend, Graph, Runner


class OnnxReferenceBackend(Backend):
    """``onnx.reference.ReferenceEvaluator``: the ONNX specification's executable reading."""

    name = "onnx-reference"
    uses_onnx = True

    def model(self, graph: Graph, opset: int):
        return graph.onnx_model(opset)

    def prepare(self, graph: Graph, opset: int) -> Runner:
        from onnx.reference import ReferenceEvaluator

        model = self.model(graph, opset)
        evaluator = ReferenceEvaluator(model)
        names = [i.name for i in model.graph.input]

        def run(values):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                outs = evaluator.run(None, dict(zip(names, values, strict=True)))
            # 0-d results may come back as numpy scalars; asarray keeps their dtype.
            return [np.asarray(o) for o in outs]

        return run
