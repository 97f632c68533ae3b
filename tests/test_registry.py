"""The registry: validated rows, derived ids, required reasons and examples, no lost modules."""

from __future__ import annotations

import pkgutil

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

import conformance.registries as registries
from conformance import versions as releases
from conformance.registry import Blame, Case, Known, Row, Tol
from conformance.strategies import ANY, elemwise, fixed
from converter import compat


def test_every_registry_module_is_listed():
    on_disk = {m.name for m in pkgutil.iter_modules(registries.__path__)}
    assert on_disk == set(registries.CATEGORIES)


def test_rows_have_unique_names_categories_and_ids():
    rows = registries.all_rows()
    assert len({r.name for r in rows}) == len(rows)
    assert all(r.category in registries.CATEGORIES for r in rows)
    assert rows[0].test_ids()[0] == f"{rows[0].name}[{rows[0].dtypes[0]}]"


def test_every_known_divergence_has_a_reason_a_blame_and_an_example_case():
    for row in registries.all_rows():
        for known in row.known:
            assert known.reason and isinstance(known.blame, Blame)
            for dtype in known.dtypes or row.dtypes[:1]:
                assert isinstance(known.example(dtype), Case), (row.name, known.reason)


def test_row_validation_names_what_is_wrong():
    with pytest.raises(ValueError, match=r"dtypes .*'float8'.* invalid"):
        Row("x", pt.exp, elemwise(ANY), ("float8",))
    row = Row("x", pt.exp, elemwise(ANY), ("float32",))
    with pytest.raises(ValueError, match=r"xfail dtypes \['int8'\] are not among"):
        row.xfail(backends=("onnxruntime",), dtypes=("int8",), reason="r",
                  blame=Blame.ONNXRUNTIME, example=fixed(1))
    with pytest.raises(TypeError, match="sequence of names"):
        row.xfail(backends="onnxruntime", reason="r", blame=Blame.ONNXRUNTIME, example=fixed(1))


def test_known_requires_one_line_reason_and_example():
    with pytest.raises(ValueError, match="one non-empty line"):
        Known(("b",), "two\nlines", Blame.PYTENSOR, example=fixed(1))
    with pytest.raises(ValueError, match="needs example="):
        Known(("b",), "reason", Blame.PYTENSOR)


def test_known_match_and_when_narrow_what_is_expected():
    known = Known(("onnxruntime",), "r", Blame.ONNXRUNTIME, example=fixed(1),
                  match="NOT_IMPLEMENTED", when=lambda c: c.values[0].size == 0)
    empty = fixed([])("float32")
    assert known.covers("onnxruntime", "x NOT_IMPLEMENTED y", empty)
    assert not known.covers("onnxruntime", "out[0]=1 but ...", empty)
    assert not known.covers("onnxruntime", "NOT_IMPLEMENTED", fixed([1.0])("float32"))
    assert not known.covers("onnx-reference", "NOT_IMPLEMENTED", empty)


def test_tolerance_defaults_per_dtype_and_exact_for_integers():
    row = Row("x", pt.exp, elemwise(ANY), ("float32", "int8"), tol={"float32": Tol(rtol=1e-4)})
    assert row.tolerance("float32") == Tol(rtol=1e-4)
    assert row.tolerance("int8") == Tol()


def test_case_value_classes():
    case = Case((np.array(0.5, "float32"), np.zeros((0, 2), "float32")), ((), (None, 1)))
    assert case.value_classes() == ["0-d", "0-d (x0)", "broadcast", "empty", "empty (x1)",
                                    "float (x0)", "float (x1)", "ties", "ties (x0)"]
    # one operand: no per-operand names; an integer operand holds no float-only class
    assert Case((np.array([np.nan, -0.0]),), ((None,),)).value_classes() == ["-0.0", "nan/inf"]
    mixed = Case((np.array([np.inf]), np.array([0], "int64")), ((None,), (None,)))
    assert mixed.value_classes() == ["float (x0)", "nan/inf", "nan/inf (x0)"]


def test_supported_ops_document_is_current():
    """docs/supported-ops.md is generated on the newest PyTensor line and must equal what the
    generator writes there. An older line cannot know the newest line's newer rows, and has
    rows the newest lacks (ROWS_NOT_ON_NEWEST, which the document names); there each row of
    this line is in the document's table unless that list names it."""
    from pathlib import Path

    from conformance.core import coverage

    names = {row.name for row in registries.all_rows()}
    misplaced = {name: spec for name, spec in coverage.ROWS_NOT_ON_NEWEST.items()
                 if (name in names) != releases.holds(spec)}
    assert not misplaced, (
        f"on pytensor {pytensor.__version__} these rows of conformance.core.coverage."
        f"ROWS_NOT_ON_NEWEST exist where their requirement does not hold, or the reverse "
        f"(fix the requirement): {misplaced}")
    doc = Path(__file__).resolve().parents[1] / "docs" / "supported-ops.md"
    current = coverage.marked_part(doc.read_text(encoding="utf-8"), doc)
    if releases.holds(coverage.NEWEST_LINE):
        assert not names & set(coverage.ROWS_NOT_ON_NEWEST), (
            "ROWS_NOT_ON_NEWEST names rows the newest line has")
        assert current == coverage.supported_block(), f"run: {coverage.WRITE_COMMAND}"
        return
    lines = set(current.splitlines())
    absent = {line.split("`")[1]: line for line in coverage.supported_table().splitlines()[2:]
              if line not in lines}
    unlisted = [line for name, line in absent.items() if name not in coverage.ROWS_NOT_ON_NEWEST]
    assert not unlisted, (
        f"on pytensor {pytensor.__version__} these rows are not in {doc.name}'s table: "
        f"regenerate it on {coverage.NEWEST_LINE} ({coverage.WRITE_COMMAND}), or, for a row the "
        f"newest line lacks, list it in conformance.core.coverage.ROWS_NOT_ON_NEWEST:\n"
        + "\n".join(unlisted))


def test_divergences_of_backends_not_running_are_not_expected():
    from conformance.core.harness import Spec
    from conformance.registry import ORT_BACKENDS, Blame

    row = Row("x", pt.exp, elemwise(ANY), ("float32",)).xfail(
        backends=ORT_BACKENDS, blame=Blame.ONNXRUNTIME, reason="a pretend divergence",
        example=fixed(1.0))
    assert Spec(row, "float32", 18, ("pytensor-py", "onnxruntime")).known == row.known
    assert Spec(row, "float32", 18, ("pytensor-py", "pytensor-c")).known == ()


@pytest.mark.skipif(not compat.present("ger"), reason="PyTensor 3.3 has no Ger (nor its row)")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ger_leaves_the_zero_sign_of_an_underflowing_term_unjudged(dtype):
    """A + alpha * outer(x, y) whose term rounds to zero: the zero's sign follows the order
    a backend rounds in (OpenBLAS's fused multiply-add gave -0.0 where ONNX gave +0.0, found
    by the random draws); a term that does not underflow keeps the sign judged."""
    ger = registries.row_named("ger")
    tiny = np.finfo(dtype).smallest_subnormal

    def case(alpha, x=1.0, y=0.5):
        values = (np.zeros((1, 1), dtype), np.array(alpha, dtype), np.array([x], dtype),
                  np.array([y], dtype))
        return Case(values, ((None, None), (), (None,), (None,)), ())

    assert not ger.judges_zero_signs(case(-tiny))
    assert not ger.judges_zero_signs(case(-1.0, x=tiny, y=0.5))
    assert ger.judges_zero_signs(case(-1.0))
    assert ger.judges_zero_signs(case(-0.0))  # zero terms round nothing


@pytest.mark.parametrize(("dtype", "least"), [("int32", 46341), ("int64", 3037000500)])
def test_a_random_graph_overflow_is_told_from_wrap_free_values(dtype, least):
    """The fused-C overflow record of random_graph covers a graph only where some int32 or
    int64 node really overflows: x * x from the least x whose square leaves the dtype, or a
    square in range doubled by a later add; never a square or a sum that stays in range."""
    from conformance.registries.graphs import overflows_signed

    def graph(x, *nodes):
        return Case((np.array(x, dtype),), ((),),
                    (("nodes", nodes), ("outputs", (len(nodes),))))

    square = ("mul", (0, 0), ())
    assert overflows_signed(graph(least, square))
    assert overflows_signed(graph(least - 1, square, ("add", (1, 1), ())))
    assert not overflows_signed(graph(least - 1, square))
    assert not overflows_signed(graph(-(least - 1), square, ("add", (1, 0), ())))
    assert not overflows_signed(Case((np.array(100, "int8"),), ((),),
                                     (("nodes", (square,)), ("outputs", (1,)))))
    # an input no node uses (a pruned graph): the nightly draws found the predicate raising
    unused = Case((np.array(0, dtype), np.array(np.iinfo(dtype).min, dtype)), ((), ()),
                  (("nodes", (("neg", (1,), ()),)), ("outputs", (2,))))
    assert overflows_signed(unused)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_graph_cancellation_record_needs_a_shared_value_that_is_not_finite_math(dtype):
    """The record of the rewrites' cancelling (x - x to 0) covers a graph only where one
    value reaches a node through two operands and holds a nan, an infinity or a zero."""
    from conformance.registries.graphs import cancels_unlike_finite_math

    def graph(values, *nodes):
        values = tuple(np.array(v, dtype) for v in values)
        return Case(values, ((),) * len(values),
                    (("nodes", nodes), ("outputs", (len(values) + len(nodes) - 1,))))

    sub_self, twice_minus_once = ("sub", (0, 0), ()), (("add", (0, 0), ()), ("sub", (1, 0), ()))
    assert cancels_unlike_finite_math(graph([np.nan], sub_self))
    assert cancels_unlike_finite_math(graph([-np.inf], sub_self))
    assert cancels_unlike_finite_math(graph([-0.0], *twice_minus_once))
    assert not cancels_unlike_finite_math(graph([1.5], sub_self))
    assert not cancels_unlike_finite_math(graph([2.0], *twice_minus_once))
    # two inputs, nothing shared: x - y on a nan is the sub row's own business
    assert not cancels_unlike_finite_math(graph([np.nan, 1.0], ("sub", (0, 1), ())))


def test_random_graph_cancellation_record_covers_the_mean_of_an_empty_value():
    """mean(zeros_like(x)) of an empty x is nan, which the rewrites make 0 (n / n cancels):
    found by the nightly draws through eq(x, x)."""
    from conformance.registries.graphs import cancels_unlike_finite_math

    nodes = (("eq", (0, 0), ()), ("mean", (1,), (("axis", None),)))

    def graph(x):
        return Case((np.array(x, "int32"),), ((None,),), (("nodes", nodes), ("outputs", (2,))))

    assert cancels_unlike_finite_math(graph([]))
    assert not cancels_unlike_finite_math(graph([3, 4]))
    # var(x) over one element is 0 to the rewrites (x - mean(x)), nan for a nan x
    var = (("var", (0,), (("axis", None),)),)
    nan_var = Case((np.array([np.nan]),), ((None,),), (("nodes", var), ("outputs", (1,))))
    assert cancels_unlike_finite_math(nan_var)
    assert not cancels_unlike_finite_math(Case((np.array([2.0]),), ((None,),),
                                               (("nodes", var), ("outputs", (1,)))))


#: Rows with no special-value grid by design: their operands' values are shapes, sizes or
#: bounds (a grid value there is a different test: an invalid shape), or the values are
#: never read (shape, *_like).
NO_GRID = {"shape", "shape_i", "alloc_empty", "arange", "arange_dtype", "eye", "tri",
           "zeros_like", "ones_like", "empty_like", "index_out_of_bounds",
           # one operand, ill-conditioned by construction (the test): a grid makes it arbitrary
           "det_illcond", "slogdet_illcond", "cholesky_illcond", "inv_illcond"}


def test_every_row_runs_the_special_value_grid_or_says_why_not():
    from conformance.strategies.cases import elemwise, reduction

    rows = {r.name: r for r in registries.all_rows()}
    without = {name for name, r in rows.items()
               if not isinstance(r.cases, elemwise | reduction) and r.grid is None}
    assert without - NO_GRID == set(), "declare the row's grid (Row.grid)"
    assert NO_GRID - without == set(), "a listed row has a grid now: unlist it"


def test_every_row_judges_zero_signs_on_some_cases():
    """No row leaves zero signs unjudged outright: a row whose signs IEEE 754 leaves to the
    order of operations judges them where they are determined (a predicate)."""
    assert [r.name for r in registries.all_rows() if r.signed_zeros is False] == []


def test_xfail_apart_bounds_only_the_backends_and_dtypes_named():
    """A record two backends share, one of which stops showing it from a release on (there
    only on float16): the others keep it everywhere, that one on its other dtypes too."""
    row = Row("neg_apart", pt.neg, elemwise(ANY), ("float16", "float32"))
    record = dict(backends=("onnxruntime", "pytensor-c-opt"), blame=Blame.PYTENSOR,
                  reason="a reason", versions="pytensor>=3", example=fixed(0.0))
    split = row.xfail_apart(record, backends=("pytensor-c-opt",), before="3.3",
                            dtypes=("float16",)).known
    got = {(k.backends, k.dtypes, k.versions) for k in split}
    assert got == {(("onnxruntime",), None, "pytensor>=3"),
                   (("pytensor-c-opt",), ("float32",), "pytensor>=3"),
                   (("pytensor-c-opt",), ("float16",), "pytensor>=3,<3.3")}, got
    whole = row.xfail_apart(record, backends=("pytensor-c-opt",), before="3.3").known
    assert {(k.backends, k.dtypes, k.versions) for k in whole} == {
        (("onnxruntime",), None, "pytensor>=3"), (("pytensor-c-opt",), None, "pytensor>=3,<3.3")}
    never = row.xfail_apart(record, backends=("pytensor-c-opt",), before=None,
                            dtypes=("float16",)).known
    assert {(k.backends, k.dtypes) for k in never} == {
        (("onnxruntime",), None), (("pytensor-c-opt",), ("float32",))}
    shared = row.xfail_apart(record, backends=("pytensor-c-opt",), before=None,
                             dtypes=("float16",), shared=True).known
    assert {(k.backends, k.dtypes, k.shared_by) for k in shared} == {
        (("onnxruntime", "pytensor-c-opt"), ("float32",), ()),
        (("onnxruntime",), ("float16",), ("pytensor-c-opt",))}
    later = row.xfail_apart(record, backends=("pytensor-c-opt",), before=None, since="3.3",
                            dtypes=("float16",)).known
    assert {(k.backends, k.dtypes, k.versions) for k in later} == {
        (("onnxruntime",), None, "pytensor>=3"),
        (("pytensor-c-opt",), ("float32",), "pytensor>=3"),
        (("pytensor-c-opt",), ("float16",), "pytensor>=3,>=3.3")}
    with pytest.raises(ValueError, match="since= goes with before=None"):
        row.xfail_apart(record, backends=("pytensor-c-opt",), before="3.3", since="3.3")
