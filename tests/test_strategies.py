"""Strategies: validation messages, layouts, domains and special values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies import (
    Domain,
    array_shapes,
    arrays,
    broadcast_layouts,
    broadcast_shapes,
    elements,
    elemwise,
    fixed,
    reduction,
)
from conformance.strategies.values import small_magnitudes, special_values


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n": 0}, r"n=0 must be an int >= 1"),
    ({"n": 2, "min_rank": -1}, r"min_rank=-1 must be an int >= 0"),
    ({"n": 2, "min_rank": 3, "max_rank": 1}, r"max_rank=1 must be an int >= min_rank=3"),
    ({"n": 2, "max_side": -2}, r"max_side=-2 must be an int >= min_side=0"),
])
def test_broadcast_shapes_validates_arguments_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        broadcast_shapes(**kwargs).example()


def test_domain_and_elemwise_validate_arguments():
    with pytest.raises(ValueError, match=r"min_value=2 must be <= max_value=1"):
        Domain(min_value=2, max_value=1)
    with pytest.raises(ValueError, match="needs one Domain per operand"):
        elemwise()
    with pytest.raises(TypeError, match="operand 1 must be a Domain"):
        elemwise(Domain(), 3)


def test_layouts_are_few_and_start_with_0d():
    layouts = broadcast_layouts(2)
    assert layouts[0] == ((), ()) and len(layouts) <= 6


@settings(max_examples=60, deadline=None)
@given(broadcast_shapes(3))
def test_broadcast_shapes_broadcast_and_match_their_static_layout(drawn):
    shapes, static = drawn
    np.broadcast_shapes(*shapes)
    for shape, stat in zip(shapes, static, strict=True):
        assert len(shape) == len(stat)
        assert all(s == 1 for s, d in zip(shape, stat, strict=True) if d == 1)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["int8", "uint16", "float16", "float64"]).flatmap(
    lambda d: st.tuples(st.just(d), elements(d, Domain(min_value=-3, max_value=5, nonzero=True,
                                                        allow_nan=False)))))
def test_elements_respect_the_domain_and_dtype(pair):
    dtype, value = pair
    assert Domain(min_value=-3, max_value=5, nonzero=True, allow_nan=False).contains(
        value, np.dtype(dtype))
    assert value == np.asarray(value, dtype=dtype)


def test_special_values_include_signed_zero_ties_and_extremes():
    floats = special_values("float32")
    assert any(v == 0 and math.copysign(1, v) < 0 for v in floats)
    assert 2.5 in floats and any(math.isnan(v) for v in floats)
    assert np.iinfo(np.int8).min in special_values("int8")
    assert -1 not in special_values("uint8")


def test_special_values_are_actually_drawn():
    seen = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(arrays("float64", (4,)))
    def collect(a):
        seen.update("nan" if math.isnan(v) else v for v in a.tolist())

    collect()
    assert "nan" in seen and math.inf in seen and 0.5 in seen


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_small_magnitudes_are_drawn_on_purpose_inside_the_domain(dtype):
    """The dtype's ladder of small magnitudes (both signs) is drawn, and only the part of
    it that the domain allows: log1p(x) as log(1 + x) is wrong there by many ulps."""
    ladder = small_magnitudes(dtype)
    assert any(0 < v < 1e-3 for v in ladder) and sorted(ladder) == sorted(-v for v in ladder)
    assert all(v in special_values(dtype) for v in ladder)
    positive, seen = Domain(min_value=0.0, allow_nan=False), set()

    @settings(max_examples=200, deadline=None, database=None)
    @given(arrays(dtype, (4,), positive))
    def collect(a):
        assert (a >= 0).all()
        seen.update(float(v) for v in a.tolist())

    collect()
    assert seen & set(ladder), sorted(seen)[:10]
    assert all(v >= 0 for v in seen & set(ladder))


@settings(max_examples=30, deadline=None)
@given(array_shapes(max_rank=2, max_side=3))
def test_array_shapes_bounds(shape):
    assert len(shape) <= 2 and all(0 <= s <= 3 for s in shape)


def test_case_factories_give_cases_of_the_dtype():
    case = elemwise(Domain(), Domain())("int16").example()
    assert all(v.dtype == np.int16 for v in case.values)
    red = reduction()("float32").example()
    assert dict(red.params).keys() == {"axis"}


def test_fixed_builds_cases_in_the_test_dtype():
    case = fixed([1, 2], 3, params=[("axis", None)])("uint8")
    assert case.values[0].dtype == np.uint8 and case.static == ((None,), ())


def test_rows_that_must_compose_do():
    from conformance.registries import graph_composer

    names = {r.name for r in graph_composer().rows()}
    # reductions (sum, max) and shape ops (dimshuffle) do not compose yet
    assert {"exp", "log", "tanh", "add", "mul", "switch"} <= names
    assert len(names) >= 60, len(names)


def test_graph_ops_names_what_cannot_compose():
    from conformance.registries import graph_composer

    with pytest.raises(ValueError, match=r"rows \['split'\] cannot be composed"):
        graph_composer().rows(("exp", "split"))


# -- the special-value grid ---------------------------------------------------------------
def _bits(values) -> set:
    return {np.asarray(v).tobytes() for v in values}


def test_the_grid_holds_every_special_class_of_a_float_dtype():
    from conformance.strategies.grid import grid_values

    info = np.finfo(np.float32)
    wanted = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, info.max, -info.max,
              info.tiny, -info.tiny, info.smallest_subnormal, -info.smallest_subnormal]
    assert _bits(np.float32(v) for v in wanted) <= _bits(grid_values("float32", Domain()))
    ints = [int(v) for v in grid_values("int8", Domain())]
    assert {-128, 127, 0, 1, -1} <= set(ints)


def test_the_grid_respects_the_domain_and_adds_its_edges():
    from conformance.strategies.grid import grid_values

    domain = Domain(min_value=0.0, max_value=70.0, allow_nan=False)
    values = [float(v) for v in grid_values("float64", domain)]
    assert 70.0 in values and all(0.0 <= v <= 70.0 for v in values)
    assert not any(math.isnan(v) for v in values)


def test_binary_grid_cases_meet_every_pair_of_values():
    from conformance.strategies.grid import grid_cases, grid_values

    (case,) = grid_cases(elemwise(Domain(), Domain(nonzero=True)), "float16")
    x, y = case.values
    assert x.shape == y.shape and x.ndim == 1 and case.static == ((None,), (None,))
    pairs = {(a.tobytes(), b.tobytes()) for a, b in zip(x, y, strict=True)}
    xs, ys = grid_values("float16", Domain()), grid_values("float16", Domain(nonzero=True))
    assert len(pairs) == len(xs) * len(ys)
    assert not (y == 0).any()


def test_three_operands_meet_every_pair_in_every_two_of_them():
    from conformance.strategies.grid import pairwise

    idx = pairwise([19, 10, 2])
    for i, j in ((0, 1), (0, 2), (1, 2)):
        assert len(set(zip(idx[i], idx[j], strict=True))) == [19, 10, 2][i] * [19, 10, 2][j]


def test_factories_without_declared_domains_get_no_grid():
    from conformance.strategies.grid import grid_cases

    assert grid_cases(lambda dtype: st.nothing(), "float32") == []


def test_a_declared_grid_fills_each_operand_of_the_canonical_case_in_turn():
    from conformance.registry import Case
    from conformance.strategies.grid import grid_cases, grid_values

    base = Case((np.zeros((2, 3)), np.array([0, 2], "int64")), ((None, None), (None,)),
                (("axis", 1),))
    cases = grid_cases(lambda dtype: st.nothing(), "float64", base=base,
                       domains=(Domain(), None))
    specials = grid_values("float64", Domain())
    # 6 elements a case, each case again rotated by one element: every special value of x in
    # some case and off the first position in another, the indices never touched
    assert len(cases) == 2 * -(-len(specials) // 6)
    for chunk, rotated in zip(cases[::2], cases[1::2], strict=True):
        assert np.array_equal(np.roll(chunk.values[0].ravel(), 1), rotated.values[0].ravel(),
                              equal_nan=True)
    seen = {v.tobytes() for c in cases for v in c.values[0].ravel()}
    assert seen == {v.tobytes() for v in specials}
    for c in cases:
        assert c.values[0].shape == (2, 3) and c.values[1].tolist() == [0, 2]
        assert c.static == base.static and c.params == base.params
    assert grid_cases(lambda dtype: st.nothing(), "float64", domains=(Domain(), None)) == []
    assert len(grid_cases(lambda dtype: st.nothing(), "float64", base=base,
                          domains=(Domain(),))) == len(cases)  # later operands stay
    with pytest.raises(ValueError, match="2 domains for a case of 1 operands"):
        grid_cases(lambda dtype: st.nothing(), "float64", base=Case((np.zeros(2),), ((None,),)),
                   domains=(Domain(), None))


def test_a_grid_case_cuts_down_to_one_element():
    from conformance.strategies.grid import element, grid_cases

    (case,) = grid_cases(elemwise(Domain(), Domain()), "float32")
    one = element(case, 7)
    assert [v.tolist() for v in one.values] == [v[7:8].tolist() for v in case.values]
    assert element(fixed([1.0, 2.0], 3.0)("float32"), 0) is None


def test_stored_canonical_cases_are_the_ones_drawn_and_are_read_back(tmp_path, monkeypatch):
    from conformance.registries import row_named
    from conformance.strategies import canonical

    row = row_named("pad_reflect")
    drawn = canonical.canonical_cases(row.cases, row.dtypes)
    first = canonical.Store(tmp_path).cases(row)

    def draw_again(*args):
        raise AssertionError("the stored cases were drawn again")

    monkeypatch.setattr(canonical, "canonical_cases", draw_again)
    again = canonical.Store(tmp_path).cases(row)
    assert list(drawn) == list(first) == list(again)
    for dtype, case in drawn.items():
        for other in (first[dtype], again[dtype]):
            assert other.graph_key() == case.graph_key(), dtype
            for a, b in zip(other.values, case.values, strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{row.name}[{dtype}]", strict=True)


def test_random_graphs_drawn_under_graph_ops_are_not_read_back_by_a_run_without(tmp_path):
    """``--graph-ops`` (the project's own tests use it) changes the draws; a later default
    run in the same cache must draw its own canonical graphs, not reuse the restricted ones."""
    from conformance.registries import graph_composer, row_named
    from conformance.strategies import canonical

    row, composer = row_named("random_graph"), graph_composer()
    try:
        composer.restrict(("mul", "exp"))
        restricted = canonical.Store(tmp_path).cases(row)
    finally:
        composer.restrict(())
    assert all({n[0] for n in dict(c.params)["nodes"]} <= {"mul", "exp"}
               for c in restricted.values())
    unrestricted = canonical.Store(tmp_path).cases(row)
    drawn = canonical.canonical_cases(row.cases, row.dtypes)
    assert {d: c.graph_key() for d, c in unrestricted.items()} == \
        {d: c.graph_key() for d, c in drawn.items()}
    assert len(list(tmp_path.iterdir())) == 2
