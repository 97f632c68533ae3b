"""Random graphs hold scans and ifelses whose bodies are random graphs
(conformance.strategies.graphs: CONTROL), in a minority of graphs, and only where asked."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import HealthCheck, given, settings
from pytensor.compile.mode import Mode

from conformance.core.coverage import op_kinds
from conformance.registries import graph_composer
from conformance.strategies.graphs import CONTROL, Composer, walk

DRAWS = settings(max_examples=300, deadline=None, database=None, derandomize=True,
                 suppress_health_check=list(HealthCheck))


def draws(composer: Composer, dtype: str) -> list:
    found = []

    @DRAWS
    @given(composer.cases(dtype))
    def collect(case):
        found.append(case)

    collect()
    return found


def inputs_of(case) -> list:
    return [pt.tensor(f"x{i}", dtype=v.dtype, shape=s)
            for i, (v, s) in enumerate(zip(case.values, case.static, strict=True))]


@pytest.fixture(scope="module")
def float64_graphs():
    return draws(graph_composer(), "float64")


def test_control_kinds_are_drawn_in_a_minority_of_graphs(float64_graphs):
    """A fold lowers the rank, so later nodes seldom keep it: it is rare here and drawn on
    purpose in the restricted test below. Each other kind shows in the float64 and float32
    draws together (which kinds a derandomized sample of 300 holds shifts with how many
    choices the value strategies make)."""
    kinds = [{n for n, _, _ in dict(c.params)["nodes"] if n in CONTROL} for c in float64_graphs]
    float32 = [{n for n, _, _ in dict(c.params)["nodes"] if n in CONTROL}
               for c in draws(graph_composer(), "float32")]
    drawn = set().union(*kinds, *float32)
    assert drawn >= {"scan_map", "scan_accumulate", "ifelse"}, drawn
    share = sum(bool(k) for k in kinds) / len(kinds)
    assert 0.02 < share < 0.35, share


def test_control_graphs_build_run_and_count_as_scan_and_ifelse(float64_graphs):
    """Every drawn control node builds; the coverage sees Scan and IfElse op kinds; and the
    graph's printed code builds the same graph (same values on the Python linker)."""
    composer, seen = graph_composer(), set()
    mode = Mode(linker="py", optimizer=None)
    for case in float64_graphs:
        names = {n for n, _, _ in dict(case.params)["nodes"]}
        if not names & set(CONTROL):
            continue
        inputs = inputs_of(case)
        outputs = composer.build(*inputs, **dict(case.params))
        seen |= op_kinds(outputs)
        scope = {}
        exec(composer.code(case), scope)  # the repro code the report prints
        for code_out, out in zip(scope["outputs"], outputs, strict=True):
            assert code_out.type == out.type, (composer.code(case), code_out.type, out.type)
        with np.errstate(all="ignore"):
            got = pytensor.function(inputs, outputs, mode=mode,
                                    on_unused_input="ignore")(*case.values)
        for value, out in zip(got, outputs, strict=True):
            assert value.ndim == out.type.ndim
    assert {"Scan", "IfElse"} <= seen, seen


def test_bodies_are_graphs_of_rows_only(float64_graphs):
    """Bodies hold rows (no control node inside a body: one level keeps the cost down)."""
    for case in float64_graphs:
        for _, _, params in dict(case.params)["nodes"]:
            for key, body in params:
                if key in ("body", "then", "else"):
                    assert not {n for n, _, _ in walk(body)} & set(CONTROL), params


def test_a_restriction_names_the_control_kinds_it_keeps():
    composer = Composer()
    composer.bind(graph_composer()._all)
    composer.restrict(["neg", "abs"])
    assert composer.control == ()
    composer.restrict(["neg", "abs", "scan_fold"])
    assert composer.control == ("scan_fold",)
    cases = draws(composer, "float64")
    names = {n for c in cases for n, _, _ in walk(dict(c.params)["nodes"])}
    assert names <= {"neg", "abs", "scan_fold"} and "scan_fold" in names, names


def test_graphs_of_other_dtypes_hold_no_control_nodes():
    cases = draws(graph_composer(), "float16")
    assert not any(n in CONTROL for c in cases for n, _, _ in dict(c.params)["nodes"])


def test_only_the_judged_backends_records_keep_a_row_out_of_graphs():
    """shape has a record on every dtype, naming the JAX backends only: the default run's
    graphs take it; a run judging pytensor-jax leaves it out."""
    from conformance.backends import DEFAULT_BACKENDS
    from conformance.registries import row_named

    assert all(set(k.backends) <= {"pytensor-jax", "pytensor-jax-opt"}
               for k in row_named("shape").known_for("float64")), "the premise changed"
    composer = Composer()
    composer.bind(graph_composer()._all)
    composer.restrict(["shape", "neg"])
    found = {}
    for judged in (DEFAULT_BACKENDS, (*DEFAULT_BACKENDS, "pytensor-jax")):
        composer.judged = frozenset(judged)
        found[judged] = {n for c in draws(composer, "float64")
                         for n, _, _ in walk(dict(c.params)["nodes"])}
    assert "shape" in found[DEFAULT_BACKENDS]
    assert "shape" not in found[(*DEFAULT_BACKENDS, "pytensor-jax")]
