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
    "elemwise", "elemwise_math", "reductions", "nn", "shape", "creation", "indexing", "blas",
    "linalg", "linalg_solve", "misc", "sets", "graphs", "special", "control", "bitwise",
)


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
