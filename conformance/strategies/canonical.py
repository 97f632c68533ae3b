"""Canonical cases: a few deterministic draws of a case strategy, one layout per dtype.

The C backend compares one static layout per registry cell (its canonical case) so that a
row compiles one small batch of C code instead of a module per layout (see
conformance.cbatch). The draws are derandomized, so every run and every worker picks the same
layouts, and the compile cache serves them on the next run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

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


def richness(case: Case) -> tuple:
    """Sort key, richest first: more axes, more broadcast axes, then a stable tie-break."""
    axes = sum(len(s) for s in case.static)
    broadcast = sum(d == 1 for s in case.static for d in s)
    return (-axes, -broadcast, repr(case.graph_key()))


def canonical_cases(factory, dtypes: Sequence[str]) -> dict[str, Case]:
    """One case per dtype: distinct layouts drawn for that dtype, richest first, rotated by
    the dtype's position so that a row's dtypes between them cover several layouts (the
    last dtype, usually float64, gets the richest). One search draws every dtype at once."""
    drawn = draws(st.tuples(*(factory(dtype) for dtype in dtypes)))
    chosen = {}
    for position, dtype in enumerate(reversed(dtypes)):
        layouts: dict = {}
        for cases in drawn:
            case = cases[dtypes.index(dtype)]
            layouts.setdefault(case.graph_key(), case)
        ordered = sorted(layouts.values(), key=richness)
        if ordered:
            chosen[dtype] = ordered[position % len(ordered)]
    return chosen
