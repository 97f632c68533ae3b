"""A record excuses only what it describes: its ``when`` is judged on each element that
disagreed (for elementwise cases), never on the whole case, so a value the record covers
elsewhere in the same example (a nan next to a tie) hides nothing. Against another converter,
the records blamed on the project's converter neither excuse nor turn into XPASS."""

from __future__ import annotations

import dataclasses

import numpy as np
from onnx import TensorProto, helper

from conformance.core.harness import CellOutcome, Harness, Spec
from conformance.registries import row_named
from conformance.registry import Blame, Case

ROW = row_named("round_half_away_from_zero")
FLOOR_RECORD = next(k for k in ROW.known if "floor(x + 0.5)" in k.reason)


def _case(*values) -> Case:
    return Case((np.array(values, dtype=np.float64),), ((None,),))


def test_the_floor_record_holds_on_the_element_it_describes_only():
    case = _case(0.5, np.nan, 0.49999999999999994)
    assert FLOOR_RECORD.when(case), "the whole case holds a nan: the old, loose reading"
    message = "onnxruntime: out[0]=0.0 but pytensor-py=1.0 (abs err 1 > tol 1e-12)"
    assert not FLOOR_RECORD.covers("onnxruntime", message, case, shape=(3,),
                                   elements=((0,),))
    assert FLOOR_RECORD.covers("onnxruntime", message, case, shape=(3,), elements=((2,),))
    # every disagreeing element must be one the record describes
    assert not FLOOR_RECORD.covers("onnxruntime", message, case, shape=(3,),
                                   elements=((2,), (0,)))


def _ties_to_even(inputs, outputs, *, opset):
    """A foreign converter's wrong rule: round_half_away_from_zero as ONNX Round (ties to
    even), on a graph of that one op."""
    (x,), (_,) = inputs, outputs
    vx = helper.make_tensor_value_info(x.name, TensorProto.DOUBLE, [None])
    vy = helper.make_tensor_value_info("y", TensorProto.DOUBLE, [None])
    graph = helper.make_graph([helper.make_node("Round", [x.name], ["y"])], "g", [vx], [vy])
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(graph, opset_imports=opsets,
                             ir_version=helper.find_min_ir_version_for(opsets))


def test_a_wrong_tie_beside_a_covered_nan_is_reported_against_a_foreign_converter():
    spec = Spec(ROW, "float64", 21, ("pytensor-py", "onnxruntime"), own_converter=False)
    harness = Harness(_ties_to_even)
    harness.start(spec)
    outcome = harness.run(spec, _case(0.5, np.nan, 2.5))
    (verdict,) = outcome.verdicts
    assert verdict.outcome == CellOutcome.FAIL, verdict.comparison.message
    assert outcome.blame == Blame.CONVERTER


def test_records_blamed_on_the_converter_describe_the_projects_converter_only():
    row = row_named("reshape")
    gap = [k for k in row.known if k.blame == Blame.CONVERTER]
    assert gap, "reshape's semantic-gap record (PyTensor raises, ONNX cannot)"
    own = Spec(row, "float32", 21, ("pytensor-py", "onnxruntime"))
    foreign = Spec(row, "float32", 21, ("pytensor-py", "onnxruntime"), own_converter=False)
    assert all(k in own.records for k in gap)
    assert not any(k in foreign.records for k in gap)
    # records blamed on upstream packages still apply to any converter
    upstream = [k for k in own.records if k.blame != Blame.CONVERTER]
    assert [k for k in foreign.records] == upstream


def test_raising_as_the_reference_does_where_a_record_says_it_raises_wrongly_is_shared():
    """AdvancedIncSubtensor1's spurious broadcasting error (PyTensor < 3.3) is raised by both
    C backends too, from the same Python code: agreeing by raising is sharing the fault, as
    agreeing on a wrong value is. Here on a made-up record, so that it runs on every release:
    the reference's IndexError on an out-of-range index, said to be wrong, shared by C."""
    row = row_named("index_out_of_bounds")
    unchecked = next(k for k in row.known if k.cause == "numba-index-unchecked")
    claim = row.xfail(backends=("onnxruntime",), shared_by=("pytensor-c",),
                      blame=Blame.PYTENSOR, reason="made up: this IndexError is wrong",
                      example=unchecked.example).known[-1]
    spec = Spec(dataclasses.replace(row, known=(claim,)), "float64", 21,
                ("pytensor-py", "pytensor-c"))
    harness = Harness(lambda *a, **k: None)
    harness.start(spec)
    outcome = harness.run(spec, claim.example("float64"))
    (verdict,) = outcome.verdicts
    assert verdict.shared and verdict.known is claim, verdict.comparison.message
    assert not outcome.unexpected
