"""The batched C backend: one module for a row's canonical cases, results equal to one cvm
function per graph, and a fallback where the whole-graph linker cannot be trusted."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode

from conformance.backends import cbatch, cnodes
from conformance.core.harness import Harness, Spec
from conformance.registries import row_named
from conformance.registry import Case
from conformance.strategies.canonical import DRAWS, canonical_cases, draws


def cvm(inputs, outputs, values):
    fn = pytensor.function(inputs, outputs, mode=Mode(linker="cvm", optimizer=None))
    return [np.asarray(o) for o in fn(*values)]


def member(key, build, *values):
    inputs = [pt.tensor(f"x{i}", dtype=v.dtype, shape=(None,) * v.ndim)
              for i, v in enumerate(values)]
    out = build(*inputs)
    outputs = list(out) if isinstance(out, tuple) else [out]
    return cbatch.Member(key, inputs, outputs, values)


def test_members_give_what_their_own_cvm_function_gives():
    a = member("a", lambda x, y: x * y + 1, np.arange(6.0).reshape(2, 3), np.ones(3))
    b = member("b", lambda x: (pt.exp(x), -x), np.array([1, 2], dtype="int16"))
    c = member("c", lambda x: x.sum(axis=0), np.ones((0, 2), dtype="float32"))
    batch = cbatch.Batch([a, b, c])
    assert "b" in batch and "z" not in batch
    for m in (a, b, c):
        got = batch.run(m.key, m.values)
        want = cvm(m.inputs, m.outputs, m.values)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
            assert g.dtype == w.dtype
    # other values than the ones it was built with
    x = np.array([[np.nan, -np.inf, 0.5]])
    np.testing.assert_array_equal(batch.run("a", [x, np.ones(3)])[0], x + 1)


def test_a_member_raising_is_its_own_error_and_falls_back_when_its_own_values_raise():
    ok = member("ok", lambda x: x + 1, np.array([1.0]))
    checked = member("chk", lambda x: pt.specify_shape(x, (2,)), np.ones(2))
    spoiled = member("bad", lambda x: pt.specify_shape(x, (2,)), np.ones(3))
    for batch, key in ((cbatch.Batch([ok, checked]), "chk"), (cbatch.Batch([ok, spoiled]), "bad")):
        with pytest.raises(AssertionError):  # PyTensor's error for a wrong static shape
            batch.run(key, [np.ones(3)])
        np.testing.assert_array_equal(batch.run("ok", [np.array([2.0])])[0], [3.0])
        np.testing.assert_array_equal(batch.run(key, [np.ones(2)])[0], np.ones(2))


def test_a_member_whose_values_raise_leaves_the_batch_and_the_rest_stays_batched():
    members = [member("ok", lambda x: x + 1, np.array([1.0])),
               member("bad", lambda x: pt.specify_shape(x, (2,)), np.ones(3)),
               member("also", lambda x: pt.exp(x), np.zeros(2))]
    batch = cbatch.Batch(members)
    np.testing.assert_array_equal(batch.run("also", [np.zeros(2)])[0], np.ones(2))
    chunk = batch._chunk_of["ok"]
    assert [m.key for m in chunk.together] == ["ok", "also"]
    assert chunk.fn is not False  # still one compiled batch, without "bad"
    with pytest.raises(AssertionError):
        batch.run("bad", [np.ones(3)])
    np.testing.assert_array_equal(batch.run("bad", [np.ones(2)])[0], np.ones(2))


def test_scalar_intermediates_are_not_batched():
    # the whole-graph C linker returns None for tensor_from_scalar; cvm does not
    x, y = pt.tensor("x", dtype="int8", shape=()), pt.tensor("y", dtype="int8", shape=())
    out = pt.tensor_from_scalar(pt.scalar_from_tensor(x) + pt.scalar_from_tensor(y))
    m = cbatch.Member("s", [x, y], [out], [np.int8(1), np.int8(2)])
    got = cbatch.Batch([m]).run("s", [np.array(1, "int8"), np.array(2, "int8")])
    assert got[0].dtype == np.int8 and got[0] == 3


def test_chunks_stay_small():
    members = [member(i, lambda x: pt.exp(pt.sin(x)), np.ones(i % 3 + 1)) for i in range(25)]
    batch = cbatch.Batch(members)
    chunks = {id(batch._chunk_of[i]) for i in range(25)}
    assert len(chunks) == 3  # 50 nodes, at most MAX_NODES each


def test_canonical_cases_are_deterministic_and_cover_several_layouts():
    row = row_named("add")
    first = canonical_cases(row.cases, row.dtypes)
    again = canonical_cases(row.cases, row.dtypes)
    assert set(first) == set(row.dtypes)
    assert {d: c.graph_key() for d, c in first.items()} == \
        {d: c.graph_key() for d, c in again.items()}
    assert len({c.static for c in first.values()}) >= 3
    assert len(draws(row.cases("float64"))) == DRAWS


def test_canonical_cases_of_a_strategy_too_filtered_for_all_dtypes_at_once():
    from hypothesis import strategies as st

    def factory(dtype):  # about one draw in 97 passes: for three dtypes at once, none does
        return st.integers(0, 10**6).filter(lambda x: x % 97 == 3).map(
            lambda x: Case((np.asarray(x % 2, dtype),), ((),)))

    chosen = canonical_cases(factory, ("int8", "int16", "int32"))
    assert set(chosen) == {"int8", "int16", "int32"}
    assert all(c.values[0].dtype == d for d, c in chosen.items())


def test_c_judges_only_the_batched_layouts_and_the_records_examples():
    row = row_named("maximum")
    harness = Harness(lambda *a, **k: None)
    spec = Spec(row, "int64", 21, ("pytensor-py", "pytensor-c"))
    harness.start(spec)
    canonical = harness.canonical(spec)
    example = next(k for k in row.known_for("int64") if "pytensor-c" in k.backends).example
    for case in (canonical, example("int64")):
        outcome = harness.run(spec, case)
        assert [v.backend for v in outcome.verdicts] == ["pytensor-c"]
    other = next(c for c in draws(row.cases("int64"))
                 if c.graph_key() not in (canonical.graph_key(), example("int64").graph_key()))
    assert harness.run(spec, other).verdicts == []
    everything = Harness(lambda *a, **k: None, c_all_layouts=True)
    assert [v.backend for v in everything.run(spec, other).verdicts] == ["pytensor-c"]


def test_a_new_row_releases_the_last_rows_graphs():
    harness = Harness(lambda *a, **k: None)
    add, mul = Spec(row_named("add"), "float32", 21, ()), Spec(row_named("mul"), "float32", 21, ())
    case = canonical_cases(row_named("add").cases, ("float32",))["float32"]
    harness.start(add)
    first = harness.graph(add, case)
    assert harness.graph(add, case) is first
    harness.start(add)  # the same row again: kept
    assert harness.graph(add, case) is first
    harness.start(mul)
    harness.start(add)
    assert harness.graph(add, case) is not first


def test_float16_is_left_to_cvm():
    # the whole-graph linker returns garbage for a float16 sum (3.174e4 for inf); cvm does not
    x = pt.tensor("x", dtype="float16", shape=(None, None))
    m = cbatch.Member("h", [x], [pt.sum(x, dtype="float16")], [np.ones((1, 1), "float16")])
    got = cbatch.Batch([m]).run("h", [np.array([[np.inf]], "float16")])
    assert np.isposinf(got[0])


def repeat_between_c_nodes(x):
    """exp and a sum (C code) around a Repeat (none): cvm runs Repeat in Python."""
    return pt.repeat(pt.exp(x) * 2, 2, axis=0).sum(axis=0) + x[0]


def test_a_graph_with_a_node_without_c_code_is_batched_node_by_node():
    values = np.array([[0.5, -1.0], [2.0, 0.0]])
    m = member("r", repeat_between_c_nodes, values)
    other = member("o", lambda x: -x, np.ones(3))
    batch = cbatch.Batch([m, other])
    nodes = [k for k in batch._chunk_of if isinstance(k, tuple) and k[0] == "r"]
    assert nodes, "no node of the graph went to the batch"
    x = np.array([[np.inf, -0.0], [np.nan, 1e300]])
    for given in (values, x):
        got = batch.run("r", [given])
        np.testing.assert_array_equal(got[0], cvm(m.inputs, m.outputs, [given])[0])
    # the node members share a compiled module with the other graph
    chunk = batch._chunk_of[nodes[0]]
    assert chunk.fn is not False and {"o", nodes[0]} <= {n.key for n in chunk.together}


def test_a_node_that_raises_raises_for_its_graph():
    # a length-3 first axis against the static 2: cvm's SpecifyShape error, from the batch
    def build(x):
        return pt.repeat(pt.specify_shape(x, (2,)), 2) + 1
    m = member("s", build, np.ones(2))
    batch = cbatch.Batch([m])
    assert any(isinstance(k, tuple) for k in batch._chunk_of)
    with pytest.raises(AssertionError):
        batch.run("s", [np.ones(3)])
    np.testing.assert_array_equal(batch.run("s", [np.ones(2)])[0], np.full(4, 2.0))


def test_views_of_a_rewritten_graph_are_left_to_cvm():
    x = pt.tensor("x", dtype="float64", shape=(None, None))
    out = pt.repeat(x.T, 2, axis=0) + 1  # a view (the transpose) before a Repeat
    m = cbatch.Member("v", [x], [out], [np.ones((2, 3))])
    nodes = cbatch._nodes(m)
    plain = cnodes.split(m, lambda *a: None, nodes, rewritten=False)
    rewritten = cnodes.split(m, lambda *a: None, nodes, rewritten=True)
    kinds = [{type(p.outputs[0].owner.op).__name__ for p in parts[1]} for parts in (plain,
                                                                                   rewritten)]
    assert "DimShuffle" in kinds[0] and "DimShuffle" not in kinds[1], kinds
