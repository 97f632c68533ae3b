"""Layout strategies: slices, integer indices, axes and permutations, drawn rather than listed.

A fixed list of layouts leaves whole families untried (a row whose every slice has a negative
bound never tries ``x[::-1]`` on a converter that refuses negative bounds). These draw every
combination instead, and shrink toward the plainest form, so that a failure shrinks to the
layout a person reads at once. :class:`firsts` names the plain cases a row tries before any
drawn one, so that a converter refusing the rarer forms is still judged on the plain ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import strategies as st

from conformance.registry import Case

#: What a converter that converts any slice at all should get right: tried first.
PLAIN_SLICES = (slice(None, None, -1), slice(None, None, 2), slice(1, None), slice(None, -1))

# Reversal first: a step shrinks toward -1, the commonest step a converter gets wrong.
_STEPS = (-1, 2, 1, -2, 3, -3)


def _check_int(name: str, value, floor: int, rule: str = "") -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < floor:
        raise ValueError(f"{name}={value!r} must be an int >= {floor}{rule}")


def slices(length: int, *, max_overhang: int = 2, max_step: int = 3):
    """Slices of an axis of ``length``: start and stop each omitted, positive, zero or
    negative, up to ``max_overhang`` past either end (numpy clips them); a step omitted or
    in ``[-max_step, max_step]``, never 0. Every combination of the three is drawn.

    Shrinks toward an omitted part, then toward bounds of 0 and a step of -1: a failure on
    ``x[-5:3:-1]`` that only needs the reversal shrinks to ``x[::-1]``.
    """
    _check_int("length", length, 0)
    _check_int("max_overhang", max_overhang, 0)
    _check_int("max_step", max_step, 1, " (a step is never 0)")
    reach = length + max_overhang
    bounds = st.none() | st.integers(-reach, reach)
    steps = st.none() | st.sampled_from([s for s in _STEPS if abs(s) <= max_step])
    return st.builds(slice, bounds, bounds, steps)


def indices(length: int):
    """Integer indices of an axis of ``length``: every one in ``[-length, length)``, negative
    ones included; shrinks toward 0."""
    _check_int("length", length, 1, " (an empty axis has no index; draw a slice instead)")
    return st.integers(-length, length - 1)


def axes(ndim: int, *, allow_negative: bool = True):
    """An axis of an array of ``ndim`` axes, in ``[-ndim, ndim)`` (``[0, ndim)`` without
    ``allow_negative``); shrinks toward 0."""
    _check_int("ndim", ndim, 1, " (a 0-d array has no axis)")
    return st.integers(-ndim if allow_negative else 0, ndim - 1)


def permutations(ndim: int):
    """An order of ``ndim`` axes, as a tuple; shrinks toward the identity."""
    _check_int("ndim", ndim, 0)
    return st.permutations(range(ndim)).map(tuple)


@dataclass(frozen=True)
class firsts:  # lower case: called like the factories it wraps
    """A case factory (``dtype -> strategy of Case``) whose first cases every test tries
    before any drawn one (as explicit examples), so that the plainest layouts are judged
    whatever a converter refuses among the drawn ones. ``first(dtype, size=n)`` gives them,
    one per layout in a fixed order, on operands of ``n`` elements; Hypothesis does not
    shrink explicit examples, so :func:`smaller_firsts` offers the same layout on fewer."""

    factory: Callable
    first: Callable[..., list[Case]]
    size: int = 4

    def __post_init__(self):
        _check_int("size", self.size, 1)

    def __call__(self, dtype: str):
        return self.factory(dtype)


def first_cases(factory, dtype: str) -> list[Case]:
    """The cases a row's factory asks to be tried first at ``dtype`` (none for others)."""
    return list(factory.first(dtype, size=factory.size)) if isinstance(factory, firsts) else []


def smaller_firsts(factory, dtype: str, case: Case) -> list[Case]:
    """``case``, one of the factory's first cases, on 0, 1, ... fewer elements than it has,
    smallest first (none for another case or factory)."""
    keys = [c.graph_key() for c in first_cases(factory, dtype)]
    if case.graph_key() not in keys:
        return []
    at = keys.index(case.graph_key())
    return [factory.first(dtype, size=n)[at] for n in range(factory.size)]
