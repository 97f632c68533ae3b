"""The Numba backends: their declared semantics, the batch that compiles a row's layouts
together, and the child process they run in (a crash is the case's result, never agreement)."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from conformance.backends import BACKENDS, Declined, Graph
from conformance.backends.base import Crashed
from conformance.backends.cbatch import Member
from conformance.backends.numba import NumbaBatch, semantics
from conformance.core.harness import Harness, Spec
from conformance.registries import row_named
from conformance.registry import Case
from converter import to_onnx

try:
    from pytensor.graph.traversal import io_toposort
except ImportError:  # PyTensor 2.38
    from pytensor.graph.basic import io_toposort


def _member(key, build, *values, raises=False):
    inputs = [pt.tensor(dtype=v.dtype, shape=(None,) * v.ndim) for v in values]
    return Member(key, inputs, [build(*inputs)], values, raises=raises)


def test_fastmath_withdraws_the_zero_sign_promise_and_float16_is_declined(monkeypatch):
    monkeypatch.setattr(pytensor.config, "numba__fastmath", True)
    assert not semantics().signed_zeros
    assert "float16" in semantics().declines
    monkeypatch.setattr(pytensor.config, "numba__fastmath", False)
    assert semantics().signed_zeros, "without fast-math zero signs are judged as elsewhere"
    assert BACKENDS["pytensor-numba"].semantics.signed_zeros


def test_a_batch_runs_each_member_on_its_own_values_and_declines_float16():
    x8 = np.array([1, 2, 3], dtype=np.int8)
    members = [
        _member("exp", pt.exp, np.array([0.0, 1.0])),
        _member("neg", lambda a: -a, x8),
        _member("half", pt.exp, np.array([1.0], dtype=np.float16)),
        # the reference raises on these values (out of bounds): compiled apart
        _member("take", lambda a, i: a[i], np.array([1.0, 2.0]), np.array([5]), raises=True),
    ]
    batch = NumbaBatch(members)
    np.testing.assert_allclose(batch.run("exp", [np.array([2.0])])[0], [np.exp(2.0)])
    np.testing.assert_array_equal(batch.run("neg", [x8])[0], -x8)
    with pytest.raises(Declined, match="float16"):
        batch.run("half", [np.array([1.0], dtype=np.float16)])
    assert batch.run("take", [np.array([1.0, 2.0]), np.array([1])])[0].tolist() == [2.0]


def test_a_member_whose_compile_fails_keeps_its_error_and_spares_the_others():
    good = _member("good", lambda a: a + 1, np.array([1.0]))
    bad = Member("bad", good.inputs, good.outputs, good.values, error=ValueError("rewrite"))
    batch = NumbaBatch([good, bad])
    assert batch.run("good", [np.array([2.0])])[0].tolist() == [3.0]
    with pytest.raises(ValueError, match="rewrite"):
        batch.run("bad", [np.array([2.0])])


class _CrashingSandbox:
    """Stands in for conformance.session.isolate.Sandbox: the child died on every request."""

    restarted = 0

    def judge(self, backend, spec, case, values):
        raise Crashed(f"{backend} crashed the process (killed by SIGSEGV)")

    def restart(self):
        self.restarted += 1

    def new_row(self):
        pass


def test_a_crash_never_agrees_with_the_reference_raising():
    row = row_named("index_out_of_bounds")
    spec = Spec(row, "float64", 18, ("pytensor-py", "pytensor-numba"))
    harness = Harness(lambda *a, **k: None, sandbox=_CrashingSandbox(), c_all_layouts=True)
    harness.start(spec)
    case = Case((np.zeros((1, 1)), np.array([1]), np.array([0])), ((None, None), (None,),
                                                                 (None,)),
                (("op", "get"), ("index", "I1, I1")))
    outcome = harness.run(spec, case)
    assert isinstance(outcome.expected, IndexError)
    (verdict,) = outcome.verdicts
    assert not verdict.comparison.ok
    assert "crashed the process" in verdict.comparison.message
    assert "but pytensor-py raised IndexError" in verdict.comparison.message


def test_numba_opt_compiles_the_numba_modes_rewrites_not_the_c_ones():
    x = pt.matrix("x")
    y = pt.matrix("y")
    graph = Graph([x, y], [pt.dot(x, y) + 1], convert=lambda *a, **k: None)
    _, c_outputs = graph.rewritten("fast_run")
    _, numba_outputs = graph.rewritten("fast_run", linker="numba")
    ops = {type(n.op).__name__ for n in io_toposort([x, y], c_outputs)}
    numba_ops = {type(n.op).__name__ for n in io_toposort([x, y], numba_outputs)}
    assert ops & {"Gemm", "Dot22", "Dot22Scalar"}, ops  # BLAS in the C mode
    assert not numba_ops & {"Gemm", "Dot22", "Dot22Scalar"}, numba_ops


def test_a_zero_sign_record_is_left_to_the_backends_that_promise_signed_zeros(monkeypatch):
    """A run of Numba alone beside the reference neither shows nor contradicts a record that
    only a zero's sign shows (scalar_add's: the Python linker's -0.0 + -0.0 = +0.0): with
    fast-math, Numba promises no zero sign, so the record is not judged (was a strict XPASS
    naming backends that did not run); without fast-math it is, as on C."""
    row = row_named("scalar_add")
    (record,) = [k for k in row.known_for("float64") if k.about_zero_signs]
    assert "pytensor-numba" in record.backends
    numba_only = Spec(row, "float64", 21, ("pytensor-py", "pytensor-numba"))
    with_c = Spec(row, "float64", 21, ("pytensor-py", "pytensor-numba", "pytensor-c"))
    monkeypatch.setattr(pytensor.config, "numba__fastmath", True)
    assert record not in numba_only.records
    assert with_c.showing(record) == ("pytensor-c",)
    monkeypatch.setattr(pytensor.config, "numba__fastmath", False)
    assert numba_only.showing(record) == ("pytensor-numba",)
    # a record that other values show too stays with every backend it names
    assert not any(k.about_zero_signs for k in row_named("sum_exp_fused").known)


ROUND = row_named("round_half_away_from_zero")
(ROUND_SHARED,) = [k for k in ROUND.known if "pytensor-numba" in k.shared_by]


def test_a_kernel_that_shares_the_references_fault_is_an_expected_failure_not_a_pass():
    """Numba rounds 0.49999999999999994 to 1 as the Python reference does (floor(x + 0.5)):
    agreeing with a reference the record says is wrong is as wrong, so the cell is the
    record's expected failure; where the record does not hold, agreement is a pass."""
    assert ROUND_SHARED.shared_by == ("pytensor-numba", "pytensor-numba-opt")
    spec = Spec(ROUND, "float64", 21, ("pytensor-py", "pytensor-numba"))
    harness = Harness(to_onnx)
    harness.start(spec)
    tie = harness.run(spec, ROUND_SHARED.example("float64"))
    (verdict,) = tie.verdicts
    assert verdict.shared and verdict.known is ROUND_SHARED, verdict.comparison.message
    assert "agrees with pytensor-py where the record says it is wrong" in (
        verdict.comparison.message)
    assert not tie.unexpected
    plain = harness.run(spec, Case((np.array([0.25, 2.5]),), ((None,),)))
    assert plain.verdicts[0].comparison.ok and not plain.verdicts[0].shared


def test_a_record_cannot_both_name_a_backend_and_say_it_shares_the_fault():
    with pytest.raises(ValueError, match="share its fault"):
        ROUND.xfail(backends=("pytensor-numba",), shared_by=("pytensor-numba",),
                    reason="r", blame=ROUND_SHARED.blame, example=ROUND_SHARED.example)
