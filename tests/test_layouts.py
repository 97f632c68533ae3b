"""Layouts drawn, not listed: slices, indices, axes and permutations are drawn with
every combination of forms; the indexing rows try the plain slices first; a failure keeps its
blame while it shrinks; and a foreign converter that refuses negative bounds and reverses
wrongly is found, shrunk and blamed on the converter."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytensor.tensor as pt
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from conformance.core.harness import CaseOutcome, Spec, Verdict
from conformance.core.oracle import Comparison
from conformance.registries import indexing, shape
from conformance.registry import Case, Row
from conformance.session import runner
from conformance.strategies import layouts, subtensors

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("make", "message"), [
    (lambda: layouts.slices(-1), r"length=-1 must be an int >= 0"),
    (lambda: layouts.slices(3, max_step=0), r"max_step=0 must be an int >= 1 \(a step is never"),
    (lambda: layouts.slices(3, max_overhang=-2), r"max_overhang=-2 must be an int >= 0"),
    (lambda: layouts.indices(0), r"length=0 must be an int >= 1 \(an empty axis has no index"),
    (lambda: layouts.axes(0), r"ndim=0 must be an int >= 1 \(a 0-d array has no axis\)"),
    (lambda: layouts.permutations(2.0), r"ndim=2.0 must be an int >= 0"),
    (lambda: layouts.firsts(lambda d: None, lambda d, size: [], size=0), r"size=0 must be"),
])
def test_layout_strategies_validate_arguments_by_name(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def _sign(part) -> str:
    return "none" if part is None else "negative" if part < 0 else "positive"


@pytest.mark.parametrize("combination", list(itertools.product(
    ("none", "positive", "negative"), repeat=3)), ids="-".join)
def test_slices_draw_every_combination_of_omitted_positive_and_negative_parts(combination):
    found = find(layouts.slices(3), lambda s: tuple(
        _sign(p) for p in (s.start, s.stop, s.step)) == combination,
        settings=settings(max_examples=2000, database=None))
    assert found.step != 0


def test_slices_shrink_to_the_plain_forms():
    quick = settings(database=None, max_examples=500)
    assert find(layouts.slices(4), lambda s: (s.step or 1) < 0, settings=quick) == slice(
        None, None, -1)
    assert find(layouts.slices(4), lambda s: (s.step or 1) > 1, settings=quick) == slice(
        None, None, 2)


@settings(max_examples=100, deadline=None, database=None)
@given(st.integers(1, 5).flatmap(lambda n: st.tuples(st.just(n), layouts.indices(n),
                                                     layouts.axes(n), layouts.permutations(n))))
def test_indices_axes_and_permutations_are_in_range(drawn):
    n, index, axis, order = drawn
    assert -n <= index < n and -n <= axis < n
    assert sorted(order) == list(range(n))


@settings(max_examples=100, deadline=None, database=None)
@given(st.data())
def test_drawn_basic_indices_index_numpy_as_their_structure_says(data):
    shape = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple))
    inputs = data.draw(st.booleans())
    structure, values = data.draw(subtensors.basic_indices(shape, inputs=inputs))
    assert len(structure.split(",")) <= len(shape)
    if not inputs:
        assert values == [] and "s" not in structure and "i" not in structure
    x = np.zeros(shape)
    x[subtensors.index_tuple(structure, values)]  # in bounds: numpy raises otherwise


def test_the_plain_slices_come_first_in_every_basic_row():
    rows = {row.name: row for row in indexing.ROWS}
    for name in ("subtensor", "subtensor_const", "set_subtensor", "inc_subtensor"):
        firsts = layouts.first_cases(rows[name].cases, "int16")
        cases = [dict(c.params)["index"] for c in firsts]
        x = firsts[0].values[0]
        assert len(cases) == 4 and x.shape == (4,) and len(set(x.tolist())) == 4, name
        first_index = 2 if name in ("set_subtensor", "inc_subtensor") else 1  # after x (and y)
        selections = [x[subtensors.index_tuple(index, c.values[first_index:])]
                      for index, c in zip(cases, firsts, strict=True)]
        assert [s.tolist() for s in selections] == [[3, 2, 1, 0], [0, 2], [1, 2, 3], [0, 1, 2]]
    const = [dict(c.params)["index"] for c in layouts.first_cases(rows["subtensor_const"].cases,
                                                                  "float32")]
    assert const == ["::-1", "::2", "1:", ":-1"]


def test_a_first_case_offers_itself_on_fewer_elements():
    row = next(r for r in indexing.ROWS if r.name == "subtensor_const")
    reverse = layouts.first_cases(row.cases, "float64")[0]
    smaller = layouts.smaller_firsts(row.cases, "float64", reverse)
    assert [c.values[0].shape for c in smaller] == [(0,), (1,), (2,), (3,)]
    assert all(c.params == reverse.params for c in smaller)
    drawn = Case((np.zeros(3),), ((None,),), (("index", "1:2"),))
    assert layouts.smaller_firsts(row.cases, "float64", drawn) == []


# -- shrinking keeps the blame ------------------------------------------------------------------
# the simplest case (not reversed) passes: the search finds a reversal of some length first
REVERSE = Row("reverse", lambda x, reverse: x[::-1] if reverse else x, lambda dtype: st.tuples(
    st.booleans(), st.lists(st.integers(-9, 9), min_size=1, max_size=6)).map(lambda drawn: Case(
        (np.array(drawn[1], dtype=dtype),), ((None,),), (("reverse", drawn[0]),))),
    ("float64",))
SPEC = Spec(REVERSE, "float64", 18, ("pytensor-c", "onnxruntime", "onnx-reference"))


class WrongReversal:
    """A reversal is wrong on every ONNX backend wherever it changes the vector (the
    converter's fault); on one element only the reference evaluator disagrees, as if by a bug of its
    own (in a measured trial the wrong slice happened to agree on ONNX Runtime there). As in
    the trial, that one-element case is met while shrinking, never before: whatever order
    Hypothesis generates in, the first failure found is the converter's."""

    claims_every_row = False

    def __init__(self):
        self.found = False

    def start(self, spec):
        pass

    def canonical(self, spec):
        return None

    def run(self, spec, case):
        (x,), n = case.values, case.values[0].shape[0]
        failing = set()
        if dict(case.params)["reverse"] and (x != x[::-1]).any():
            failing, self.found = {"onnxruntime", "onnx-reference"}, True
        elif dict(case.params)["reverse"] and self.found and n == 1:
            failing = {"onnx-reference"}
        verdicts = [Verdict(b, Comparison(b not in failing, f"{b}: wrong at n={n}"))
                    for b in spec.backends]
        return CaseOutcome(spec, case, None, {}, verdicts)


class Session:
    target_error = False
    strict_records = True

    def __init__(self):
        self.records = []

    def record_example(self, spec, outcome):
        pass

    def failure(self, outcome, notes):
        return {"blame": str(outcome.blame), "n": outcome.case.values[0].shape[0],
                "notes": list(notes)}

    def record_test(self, record):
        self.records.append(record)


@pytest.fixture
def derandomized():
    before = settings.get_current_profile_name()
    settings.register_profile("test-layouts", max_examples=40, derandomize=True,
                              database=None, deadline=None, print_blob=False)
    settings.load_profile("test-layouts")
    yield
    settings.load_profile(before)


def _one(n: int) -> Case:
    return Case((np.arange(n, dtype=float),), ((None,),), (("reverse", True),))


def test_a_failure_shrinks_only_to_inputs_with_its_own_blame(derandomized, monkeypatch):
    backends = WrongReversal()
    assert str(backends.run(SPEC, _one(3)).blame) == "converter"
    assert str(backends.run(SPEC, _one(1)).blame) == "onnx-reference"
    # unguarded, Hypothesis shrinks to one element and blames onnx-reference
    with monkeypatch.context() as unguarded:
        unguarded.setattr(runner.Observed, "keeps_blame", lambda self, outcome: True)
        session = Session()
        with pytest.raises(AssertionError, match="blame: onnx-reference"):
            runner.check(SPEC, WrongReversal(), session)
    session = Session()
    with pytest.raises(AssertionError, match="blame: converter"):
        runner.check(SPEC, WrongReversal(), session)
    (record,) = session.records
    assert record["failure"]["blame"] == "converter", record["failure"]
    assert record["failure"]["n"] == 2, record["failure"]  # the smallest with that blame


# -- a foreign converter ------------------------------------------------------------------------
def test_a_wrong_reversal_behind_refused_negative_bounds_is_found_shrunk_and_blamed(tmp_path):
    # tests/reversing_converter.py refuses negative constant bounds and indices, and converts
    # x[::-1] as x[:]: every fixed layout the row once listed had a negative bound
    test = "subtensor_const[float64]"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
           "-n", "0", "--opsets", "default", "--report-dir", str(tmp_path),
           "--converter", "reversing_converter:to_onnx",
           f"conformance/test_conformance.py::test_op[{test}]"]
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'tests'}{os.pathsep}{ROOT}",
               CONFORMANCE_PROFILE="ci")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    record = {t["test"]: t for t in json.loads((tmp_path / "results.json").read_text())[
        "tests"]}[test]
    failure = record["failure"]
    assert record["outcome"] == "failed" and failure["blame"] == "converter", failure
    assert dict(failure["params"])["index"] == "::-1", failure["params"]
    assert failure["input_shapes"] == [[2]], failure  # shrunk: one element cannot show it
    assert "onnxruntime:" in failure["message"] and "onnx-reference:" in failure["message"]
    # the refused layouts are counted, not failed
    assert record["unsupported"]["layouts"], record["unsupported"]
    assert "takes no negative bound" in record["unsupported"]["message"]


def test_the_reversing_converter_refuses_and_reverses_as_described():
    import reversing_converter

    from converter.errors import UnsupportedOpError

    x = pt.vector("x")
    with pytest.raises(UnsupportedOpError, match="no negative bound"):
        reversing_converter.to_onnx([x], [x[:-1]])
    model = reversing_converter.to_onnx([x], [x[::-1]])
    assert "Slice" not in {n.op_type for n in model.graph.node}


@pytest.mark.parametrize(("name", "wanted"), [
    ("join", lambda c: c.values[0].ndim == 3 and dict(c.params)["axis"] == -2),
    ("split", lambda c: c.values[0].ndim == 3 and dict(c.params)["axis"] == -3),
    ("split_constant", lambda c: c.values[0].ndim == 2 and dict(c.params)["axis"] == 1),
    ("shape_i", lambda c: c.values[0].ndim == 3 and dict(c.params)["i"] == 2),
    ("dimshuffle", lambda c: [a for a in dict(c.params)["order"] if a != "x"] == [2, 0, 1]),
    ("specify_shape", lambda c: dict(c.params)["pattern"][1:] == ("n", None)),
])
def test_shape_rows_draw_their_axes_and_permutations(name, wanted):
    rows = {row.name: row for row in shape.ROWS}
    find(rows[name].cases("float32"), wanted, settings=settings(max_examples=3000,
                                                                 database=None))


@pytest.mark.parametrize("wanted", [
    lambda s: s.startswith("s:") and "B2" in s,
    lambda s: s.count("I") == 2 and "s" in s.split(", ")[1],
    lambda s: "I2@uint16" in s,
])
def test_advanced_structures_mix_arrays_masks_and_slices(wanted):
    find(subtensors.advanced_structures((None,) * 3), wanted,
         settings=settings(max_examples=3000, database=None))


@settings(max_examples=100, deadline=None, database=None)
@given(st.data())
def test_advanced_structures_never_point_an_array_at_an_empty_axis(data):
    shape = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3).map(tuple))
    structure = data.draw(subtensors.advanced_structures(shape))
    values = data.draw(subtensors.index_values(structure, shape))
    np.zeros(shape)[subtensors.index_tuple(structure, values)]  # numpy raises otherwise
