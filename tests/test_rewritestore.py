"""The store of rewritten graphs (conformance.compile.rewritestore): read back, not rewritten again,
and the same graph as rewriting gives."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.backends import base as backends
from conformance.compile.rewritestore import RewriteStore
from conformance.core.harness import Harness, Spec
from conformance.registries import row_named
from conformance.strategies.canonical import canonical_cases
from converter import to_onnx


def _graph(store, row_name="softmax", dtype="float64"):
    row = row_named(row_name)
    case = canonical_cases(row.cases, (dtype,))[dtype]
    harness = Harness(to_onnx, rewrite_store=store)
    spec = Spec(row, dtype, 21, ("pytensor-py",))
    harness.start(spec)
    return harness.graph(spec, case), case


def _run(inputs, outputs, values):
    import pytensor
    from pytensor.compile.mode import Mode

    fn = pytensor.function(inputs, outputs, mode=Mode(linker="py", optimizer=None),
                           accept_inplace=True, on_unused_input="ignore")
    return fn(*[v.copy() for v in values])


@pytest.mark.parametrize("what", ["rewritten", "rewritten_inlined"])
def test_a_stored_graph_is_read_back_instead_of_rewritten(tmp_path, monkeypatch, what):
    from pytensor.graph.basic import equal_computations

    first, case = _graph(RewriteStore(tmp_path))
    built = getattr(first, what)("fast_run")
    assert list(tmp_path.rglob("*.pickle.z")), "nothing was stored"

    def rewrite_again(*args, **kwargs):
        raise AssertionError("the stored graph was rewritten again")

    monkeypatch.setattr(backends.Graph, "function", rewrite_again)
    monkeypatch.setattr(backends, "inlined", rewrite_again)
    again, _ = _graph(RewriteStore(tmp_path))
    read = getattr(again, what)("fast_run")
    assert equal_computations(read[1], built[1], in_xs=read[0], in_ys=built[0])
    for a, b in zip(_run(*read, case.values), _run(*built, case.values), strict=True):
        np.testing.assert_array_equal(a, b, strict=True)


def test_a_graph_that_does_not_pickle_is_built_every_time(tmp_path):
    store = RewriteStore(tmp_path)
    calls = []

    def build():
        calls.append(1)
        return [lambda: None], []  # a local function: pickle refuses it

    for _ in range(2):
        inputs, outputs = store.get(("row", "layout", "what"), build)
        assert outputs == [] and callable(inputs[0])
    assert len(calls) == 2
    assert not list(tmp_path.rglob("*.pickle.z")) and not list(tmp_path.rglob("*.tmp"))


def test_a_cut_short_file_is_built_and_written_again(tmp_path):
    store = RewriteStore(tmp_path)
    assert store.get(("row", 1), lambda: ([1], [2])) == ([1], [2])
    (path,) = tmp_path.rglob("*.pickle.z")
    path.write_bytes(path.read_bytes()[:5])
    assert store.get(("row", 1), lambda: ([3], [4])) == ([3], [4])
    assert RewriteStore(tmp_path).get(("row", 1), lambda: ([5], [6])) == ([3], [4])


def test_without_a_folder_nothing_is_kept(tmp_path):
    store = RewriteStore(None)
    values = iter(range(3))
    assert [store.get(("k",), lambda: next(values)) for _ in range(3)] == [0, 1, 2]
