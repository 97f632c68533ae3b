"""Random graphs compose every row that declares it, and each row's declared node behaviour
(dtypes, accepted shapes, output shape) holds when PyTensor runs the node."""

from __future__ import annotations

import numpy as np
import pytensor
import pytest
from hypothesis import HealthCheck, given, settings
from pytensor.compile.mode import Mode

from conformance.registries import graph_composer
from conformance.strategies.graphs import apply_node, node_spec

#: The graph row's dtypes: where a composable row must find at least one operand dtype.
GRAPH_DTYPES = ("bool", "int8", "int32", "int64", "uint8", "float16", "float32", "float64")
COMPOSABLE = graph_composer().rows()
PY = Mode(linker="py", optimizer=None)


def _graph_dtype(row) -> str | None:
    spec = node_spec(row)
    usable = spec.dtypes if spec.dtypes is not None else [
        d for d in row.dtypes if not any(graph_composer().judged.intersection(k.backends)
                                         for k in row.known_for(d))]
    return next((d for d in GRAPH_DTYPES if d in usable), None)


def test_the_rows_issue_11_names_compose():
    names = {r.name for r in COMPOSABLE if _graph_dtype(r)}
    must = {"exp", "log", "tanh", "sum", "max", "dimshuffle", "softmax", "cumsum", "sort",
            "argmax", "cast_int8", "shape"}
    assert must <= names, f"no longer composable: {sorted(must - names)}"
    assert len(names) >= 150, f"only {len(names)} rows compose on some graph dtype"


@pytest.mark.parametrize("row", COMPOSABLE, ids=lambda r: r.name)
def test_each_composable_row_runs_as_declared(row):
    """Graphs restricted to one row: PyTensor runs them, and every node's output has the
    shape the row's Composes declares (the composer's broadcast checks rely on it)."""
    dtype = _graph_dtype(row)
    if dtype is None:
        pytest.skip(f"records on every graph dtype keep {row.name} out of random graphs")
    composer = graph_composer()
    strategy = composer.cases(dtype, min_nodes=1, max_nodes=2, only=(row.name,))

    @settings(max_examples=5, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def check(case):
        import pytensor.tensor as pt

        inputs = [pt.tensor(f"x{i}", dtype=v.dtype, shape=s)
                  for i, (v, s) in enumerate(zip(case.values, case.static, strict=True))]
        params = dict(case.params)
        pool = list(inputs)
        for name, operand_ids, node_params in params["nodes"]:
            node_row = next(r for r in COMPOSABLE if r.name == name)
            pool.append(apply_node(node_row, [pool[i] for i in operand_ids], node_params))
        fn = pytensor.function(inputs, pool[len(inputs):], mode=PY, on_unused_input="ignore")
        with np.errstate(all="ignore"):
            results = fn(*[v.copy() for v in case.values])
        sizes = [v.shape for v in case.values]
        for (name, operand_ids, node_params), value in zip(params["nodes"], results,
                                                            strict=True):
            spec = node_spec(next(r for r in COMPOSABLE if r.name == name))
            shapes = [sizes[i] for i in operand_ids]
            declared = (spec.shape(shapes, dict(node_params)) if spec.shape
                        else np.broadcast_shapes(*shapes))
            assert tuple(declared) == np.shape(value), (
                f"{name}{tuple(node_params)} on shapes {shapes}: declared output shape "
                f"{tuple(declared)}, PyTensor gives {np.shape(value)}")
            sizes.append(np.shape(value))

    check()
