"""All registry rows, gathered from one module per op category.

Each category module defines ``ROWS``; a row's ``category`` is its module's name. The
project's tests check that every ``registries/*.py`` file is listed in ``CATEGORIES``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib

from conformance.registries import graphs
from conformance.registry import Row
from conformance.strategies.graphs import Composer

CATEGORIES = (
    "elemwise", "elemwise_math", "reductions", "nn", "shape", "creation", "indexing", "linalg",
    "misc", "graphs", "special", "control",
)

#: Rows whose zero signs are not judged yet: judged, they show a backend's zero with the
#: other sign, and whose fault each is has not been worked out (issue 11). A row leaves this
#: set with a fix or a record. The dot family: BLAS and ONNX sum products in other orders.
SIGNED_ZEROS_PENDING = frozenset({
    "batched_dot", "cholesky_illcond", "dot", "dot22", "dot22scalar", "dot_0d", "dot_nonfinite",
    "dot_op", "matmul", "solve_illcond",
    "cho_solve", "cho_solve_illcond", "cholesky", "det", "det_matrices", "dot_mixed", "einsum",
    "gemm", "gemv", "inv", "inv_illcond", "op_from_graph", "slogdet", "solve",
    "solve_pos", "solve_sym", "solve_triangular", "solve_triangular_illcond",
})


@functools.cache
def all_rows() -> tuple[Row, ...]:
    rows: list[Row] = []
    seen: dict[str, str] = {}
    for category in CATEGORIES:
        module = importlib.import_module(f"{__name__}.{category}")
        for row in module.ROWS:
            if row.name in seen:
                raise ValueError(
                    f"registry row {row.name!r} is defined in both {seen[row.name]!r} and "
                    f"{category!r}; row names must be unique"
                )
            seen[row.name] = category
            if row.name in SIGNED_ZEROS_PENDING:
                row = dataclasses.replace(row, signed_zeros=False)
            rows.append(dataclasses.replace(row, category=category))
    return tuple(rows)


def row_named(name: str) -> Row:
    for row in all_rows():
        if row.name == name:
            return row
    names = ", ".join(sorted(r.name for r in all_rows()))
    raise KeyError(f"no registry row named {name!r}; available rows: {names}")


def graph_composer() -> Composer:
    """What random graphs are composed from (``--graph-ops`` restricts it)."""
    return graphs.COMPOSER


graphs.COMPOSER.bind(all_rows)
