"""Canonical cases: a few deterministic draws of a case strategy, one layout per dtype.

The C backend compares one static layout per registry cell (its canonical case) so that a
row compiles one small batch of C code instead of a module per layout (see
conformance.backends.cbatch). The draws are derandomized, so every run and every worker picks
the same layouts, and the compile cache serves them on the next run. Drawing them costs about a
tenth of a second per row, so :class:`Store` keeps them on disk between runs.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample, Unsatisfiable

from conformance.registry import Case

DRAWS = 6
_SETTINGS = settings(max_examples=DRAWS, derandomize=True, database=None,
                     phases=[Phase.generate], suppress_health_check=list(HealthCheck),
                     deadline=None)


def draws(strategy) -> list[Case]:
    """The cases a derandomized run of ``strategy`` generates first (the same every time)."""
    seen: list[Case] = []
    with contextlib.suppress(NoSuchExample):  # the predicate never holds: it only collects
        find(strategy, lambda case: seen.append(case) and False, settings=_SETTINGS)
    return seen


def _draws_or_none(strategy) -> list[Case]:
    """``draws``, or none where the strategy's filters reject every draw (the cell then has
    no canonical case: its records' examples and the random draws still run)."""
    try:
        return draws(strategy)
    except Unsatisfiable:
        return []


def _filled(case: Case) -> bool:
    return all(np.size(v) for v in case.values)


def richness(case: Case) -> tuple:
    """Sort key, richest first: more axes, more broadcast axes, then a stable tie-break."""
    axes = sum(len(s) for s in case.static)
    broadcast = sum(d == 1 for s in case.static for d in s)
    return (-axes, -broadcast, repr(case.graph_key()))


def canonical_cases(factory, dtypes: Sequence[str]) -> dict[str, Case]:
    """One case per dtype: distinct layouts drawn for that dtype, richest first, rotated by
    the dtype's position so that a row's dtypes between them cover several layouts (the
    last dtype, usually float64, gets the richest). One search draws every dtype at once."""
    try:
        drawn = draws(st.tuples(*(factory(dtype) for dtype in dtypes)))
        drawn_for = {dtype: [cases[i] for cases in drawn] for i, dtype in enumerate(dtypes)}
    except Unsatisfiable:
        # a filtered strategy can fail for all dtypes at once where it holds for each alone
        drawn_for = {dtype: _draws_or_none(factory(dtype)) for dtype in dtypes}
    chosen = {}
    for position, dtype in enumerate(reversed(dtypes)):
        layouts: dict = {}
        for case in drawn_for[dtype]:
            # of the draws of one layout, the first whose operands all hold values: an
            # empty one leaves the special-value grid, which fills the case, nothing to fill
            old = layouts.setdefault(case.graph_key(), case)
            if not _filled(old) and _filled(case):
                layouts[case.graph_key()] = case
        ordered = sorted(layouts.values(), key=richness)
        if not ordered:
            continue
        chosen[dtype] = ordered[position % len(ordered)]
        if not _filled(chosen[dtype]) and (filled := [c for c in ordered if _filled(c)]):
            # a layout drawn only empty has nothing for the grid to fill: another one is
            # taken (the random draws still bring empty values to every layout)
            chosen[dtype] = filled[position % len(filled)]
    return chosen


@functools.cache
def fingerprint() -> bytes:
    """What the draws depend on: the harness's code (strategies and registry rows) and the
    releases of the libraries that draw and build them."""
    digest = hashlib.sha256(str(DRAWS).encode())
    package = Path(__file__).resolve().parents[1]
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + path.read_bytes())
    for name in ("hypothesis", "numpy", "pytensor"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            digest.update(f"{name}=={importlib.metadata.version(name)}".encode())
    return digest.digest()


def drawn_by(row) -> str:
    """The state of the object whose method draws the row's cases, if any (a Composer and
    its ``--graph-ops`` restriction): draws depend on it as much as on the code."""
    owner = getattr(row.cases, "__self__", None)
    return "" if owner is None else repr(owner)


class Store:
    """Each row's canonical cases, drawn once and kept in ``folder`` (pytest's cache) under a
    name that changes with any change to the code, the releases or the drawing object's
    state (see :func:`drawn_by`) they depend on; without a folder, drawn every time."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder

    def cases(self, row) -> dict[str, Case]:
        if self.folder is None:
            return canonical_cases(row.cases, row.dtypes)
        key = hashlib.sha256(fingerprint()
                             + repr((row.name, row.dtypes, drawn_by(row))).encode())
        path = self.folder / f"{row.name}-{key.hexdigest()[:16]}.pickle"
        # a missing, cut-short or unreadable file is drawn again
        with contextlib.suppress(OSError, EOFError, pickle.UnpicklingError, AttributeError,
                                 ImportError, TypeError, ValueError):
            return pickle.loads(path.read_bytes())
        chosen = canonical_cases(row.cases, row.dtypes)
        with contextlib.suppress(OSError, pickle.PicklingError, TypeError, AttributeError):
            partial = path.with_suffix(f".{os.getpid()}.tmp")  # workers may race to write
            partial.write_bytes(pickle.dumps(chosen))
            partial.replace(path)
        return chosen
