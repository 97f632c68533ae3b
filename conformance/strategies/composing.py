"""How registry rows declare that they compose into random graphs (``Row.compose``): the
params a node draws for an operand's shape, the shape of its result, and the domains that keep
a steep op's operand where an earlier node's one-ulp difference stays small."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import strategies as st

from conformance.registry import Composes
from conformance.strategies.cases import reduction
from conformance.strategies.values import Domain


def reduced_axes(shape: tuple, axis) -> set[int]:
    """The axes of an operand of ``shape`` that ``axis`` (None, one axis or a pair) reduces."""
    if axis is None:
        return set(range(len(shape)))
    return {a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)}


def axis_params(shape: tuple):
    """An ``axis`` param for an operand of ``shape``: None, one axis (maybe negative) or a
    pair, as reduction(...) draws them."""
    return st.sampled_from(reduction.axis_choices(len(shape))).map(lambda a: (("axis", a),))


def keepdims_shape(shapes: Sequence[tuple], params: dict) -> tuple:
    """The shape of a reduction over ``params["axis"]`` with its axes kept."""
    (shape,) = shapes
    gone = reduced_axes(shape, params.get("axis"))
    return tuple(1 if i in gone else n for i, n in enumerate(shape))


def nonempty_axis_params(shape: tuple):
    """An ``axis`` param (None, one axis or a pair) whose reduced axes all have elements:
    for rows that raise, or differ, on an empty reduction (accepts=has_nonempty_axis)."""
    choices = [a for a in reduction.axis_choices(len(shape))
               if all(shape[i] for i in reduced_axes(shape, a))]
    return st.sampled_from(choices).map(lambda a: (("axis", a),))


def has_nonempty_axis(shape: tuple) -> bool:
    return any(shape)


def single_axis_params(shape: tuple):
    """An ``axis`` param that is None or one axis (sort, softmax, cumsum)."""
    return st.sampled_from([None, *range(-len(shape), len(shape))]).map(
        lambda a: (("axis", a),))


def well_conditioned(lo: float, hi: float) -> Composes:
    """How a steep one-operand row composes: its operand kept in [lo, hi], where the op
    magnifies an error already in its operand by a small factor only. Backends may round an
    earlier node one ulp apart, each within its row's tolerance; tan, exp or gamma of a large
    argument would turn that into a difference far above their own tolerance, which says
    nothing about either backend. The row's own tests cover its whole domain."""
    return Composes(domains=(Domain(lo, hi, allow_nan=False, allow_inf=False),))


def same_or_flat_shape(shapes: Sequence[tuple], params: dict) -> tuple:
    """Same shape as the operand, or flattened for ``axis=None`` (sort, cumsum)."""
    (shape,) = shapes
    return (int(np.prod(shape)),) if params.get("axis") is None else shape


def same_shape(shapes: Sequence[tuple], params: dict) -> tuple:
    return shapes[0]
