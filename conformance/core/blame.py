"""Who is to blame for a disagreement, read off which backends agree with the reference and,
where only ONNX Runtime fails, off what it raised."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from conformance.backends import BACKENDS, REFERENCE
from conformance.backends.ort_status import OrtError, Stage
from conformance.registry import Blame

#: PyTensor's compiled backends (C, Numba, JAX): whatever they get wrong is PyTensor's
PYTENSOR_SIDE = {name for name, b in BACKENDS.items()
                 if not b.uses_onnx and name != REFERENCE.name}
ORT_PLAIN = {"onnxruntime", "onnxruntime-noopt"}
#: the ONNX Runtime backends that convert a graph PyTensor rewrote (function_to_onnx's path,
#: the ONNX mode)
REWRITTEN = {name for name, b in BACKENDS.items() if b.converts_rewritten}


def classify(failed: Collection[str], ran: Collection[str], *,
             conversion_failed: bool = False, actual: Mapping[str, object] | None = None) -> Blame:
    """Blame for one case, given the backends that disagreed with pytensor-py.

    - every backend disagrees, PyTensor's C among them: the reference itself is the odd one
      out (pytensor); without a PyTensor backend beside it (the batched C backend judges
      only canonical layouts) nothing says so, and the rules below apply;
    - only PyTensor's own backends disagree (the C linker, or its rewrites): pytensor;
    - every ONNX backend on the plain conversion disagrees while PyTensor agrees with
      itself: the converter (or a semantic gap it must bridge);
    - only ONNX Runtime: onnxruntime, or its graph optimizer when only the optimized
      session fails -- unless what it raised (``actual``, by backend) says it refused the
      model itself (:func:`ort_refused_model`): then the converter; a missing kernel
      (NOT_IMPLEMENTED, at load or run) stays onnxruntime's gap;
    - only the reference evaluator: onnx-reference;
    - only models converted from PyTensor's rewritten graphs: the converter's rule for an
      op that only rewrites produce (when pytensor-c-opt disagrees too, the rewrite).
    """
    failed, ran = set(failed), set(ran)
    if conversion_failed:
        return Blame.CONVERTER
    if not failed:
        raise ValueError("classify() needs at least one failed backend")
    if len(ran) > 1 and failed >= ran and ran & PYTENSOR_SIDE:
        return Blame.PYTENSOR
    onnx_plain = (ORT_PLAIN | {"onnx-reference"}) & ran
    rewrite_bug = bool(failed & PYTENSOR_SIDE) and failed <= PYTENSOR_SIDE | REWRITTEN
    if failed <= PYTENSOR_SIDE or rewrite_bug:
        return Blame.PYTENSOR
    if onnx_plain and failed >= onnx_plain and not failed & PYTENSOR_SIDE:
        return Blame.CONVERTER
    if failed <= REWRITTEN:
        return Blame.CONVERTER
    if failed <= ORT_PLAIN | REWRITTEN:
        if ort_refused_model(failed, ran, actual or {}):
            return Blame.CONVERTER
        plain = failed & ORT_PLAIN
        if plain == {"onnxruntime"} and "onnxruntime-noopt" in ran:
            return Blame.ONNXRUNTIME_OPTIMIZER
        return Blame.ONNXRUNTIME
    if failed == {"onnx-reference"}:
        return Blame.ONNX_REFERENCE
    return Blame.UNKNOWN


def ort_refused_model(failed: set[str], ran: set[str], actual: Mapping[str, object]) -> bool:
    """Whether ONNX Runtime's failures are its refusal of the model (``ort_status.OrtError``):

    - at run, the model breaks a spec rule on that run's inputs that ONNX Runtime's kernel
      enforces (Clip's scalar ``min`` and ``max``; strict shape inference on the run's
      shapes): the model's fault whichever session ran it;
    - at load, every plain session that ran refused the model with INVALID_ARGUMENT,
      INVALID_GRAPH, FAIL or INVALID_PROTOBUF: a session without graph optimizations that
      loads it shows the model is fine and the optimizer is at fault.

    A run-time failure of a model that breaks no such rule, and a missing kernel
    (NOT_IMPLEMENTED, at load or run), are ONNX Runtime's."""
    refusals = {b: e for b in failed
                if isinstance(e := actual.get(b), OrtError) and e.refuses_model}
    if any(e.stage is Stage.RUN for e in refusals.values()):
        return True
    plain = ORT_PLAIN & ran
    return bool(plain) and all(b in refusals and refusals[b].stage is Stage.LOAD for b in plain)
