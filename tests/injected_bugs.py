"""Converters with one deliberately wrong rule each (tests/test_injected_bugs.py). Most are
wrong only on one special value, which the special-value grid and the signed-zero oracle must
find; ``add_subtracts`` is wrong on almost every input, so that the random search (not only
the grid, whose cases Hypothesis does not save) is sure to fail on it.

Each callable is a ``--converter`` target; it installs its bug on first use, so that one run
(one process, and its isolated child if any) carries one bug only.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor.scalar.basic as ps

import converter
from converter.ops import subtensor
from converter.ops.elemwise import scalar_rule


def _const(ctx, value, dtype):
    return ctx.constant(np.asarray(value, dtype))


def _add_drops_nan(sop, ctx, ins, in_dtypes, out_dtypes, *, rule):
    """Add that treats a nan first operand as missing: nan + y gives y."""
    (out,) = rule(sop, ctx, ins, in_dtypes, out_dtypes)
    if np.dtype(out_dtypes[0]).kind != "f" or len(ins) != 2:
        return [out]
    x, y = (ctx.cast(n, d, out_dtypes[0]) for n, d in zip(ins, in_dtypes, strict=True))
    return [ctx.add("Where", [ctx.add("IsNaN", [x]), y, out])]


def _add_subtracts(sop, ctx, ins, in_dtypes, out_dtypes, *, rule):
    """Add that subtracts its second operand: wrong unless that operand is zero."""
    if len(ins) != 2:
        return rule(sop, ctx, ins, in_dtypes, out_dtypes)
    return scalar_rule.dispatch(ps.Sub)(ps.sub, ctx, ins, in_dtypes, out_dtypes)


def _tanh_saturates_up(sop, ctx, ins, in_dtypes, out_dtypes, *, rule):
    """A saturation shortcut with the wrong sign: tanh(-inf) gives +1."""
    (out,) = rule(sop, ctx, ins, in_dtypes, out_dtypes)
    dt = out_dtypes[0]
    minus_inf = ctx.add("IsInf", [ctx.cast(ins[0], in_dtypes[0], dt)], detect_positive=0)
    return [ctx.add("Where", [minus_inf, _const(ctx, 1, dt), out])]


def _mul_unsigned_zero(sop, ctx, ins, in_dtypes, out_dtypes, *, rule):
    """A product whose zeros are all +0.0 (x + 0.0 would do the same, but ONNX Runtime's
    optimizer drops that Add as a no-op, and with it the bug)."""
    (out,) = rule(sop, ctx, ins, in_dtypes, out_dtypes)
    dt = out_dtypes[0]
    if np.dtype(dt).kind != "f":
        return [out]
    zero = _const(ctx, 0.0, dt)
    return [ctx.add("Where", [ctx.add("Equal", [out, zero]), zero, out])]


def _round_away_at_18(sop, ctx, ins, in_dtypes, out_dtypes, *, rule):
    """At opset 18 only, round_half_to_even rounds ties away from zero."""
    if ctx.opset != 18:
        return rule(sop, ctx, ins, in_dtypes, out_dtypes)
    return scalar_rule.dispatch(ps.RoundHalfAwayFromZero)(
        ps.round_half_away_from_zero, ctx, ins, in_dtypes, out_dtypes)


def _scalar_bug(scalar_op: type, wrong):
    rule = scalar_rule.dispatch(scalar_op)
    scalar_rule.register(scalar_op)(functools.partial(wrong, rule=rule))


def _negative_index_bug():
    """Basic integer indices lose their sign: x[-1] reads x[1]."""
    entries = subtensor._entries

    def wrong(ctx, op, index_inputs, advanced):
        found = entries(ctx, op, index_inputs, advanced)
        return [subtensor._Int(ctx.add("Abs", [e.name])) if isinstance(e, subtensor._Int) else e
                for e in found]

    subtensor._entries = wrong


@functools.cache
def _install(name: str) -> None:
    {
        "nan": lambda: _scalar_bug(ps.Add, _add_drops_nan),
        "subtracts": lambda: _scalar_bug(ps.Add, _add_subtracts),
        "minus_inf": lambda: _scalar_bug(ps.Tanh, _tanh_saturates_up),
        "negative_zero": lambda: _scalar_bug(ps.Mul, _mul_unsigned_zero),
        "tie_at_opset18": lambda: _scalar_bug(ps.RoundHalfToEven, _round_away_at_18),
        "negative_index": _negative_index_bug,
    }[name]()


def _converter(name: str):
    def to_onnx(*args, **kwargs):
        _install(name)
        return converter.to_onnx(*args, **kwargs)

    to_onnx.__name__ = f"to_onnx_with_{name}_bug"
    return to_onnx


nan_add = _converter("nan")
add_subtracts = _converter("subtracts")
minus_inf_tanh = _converter("minus_inf")
negative_zero_mul = _converter("negative_zero")
tie_round_opset18 = _converter("tie_at_opset18")
negative_index = _converter("negative_index")
