"""A converter under test whose log1p and expm1 are the textbook formulas that cancel:
``log(1 + x)`` and ``exp(x) - 1`` (``--converter cancelling_converter:textbook``). Both keep
zero's sign and are right on nan and the infinities, and both lie well inside any absolute
tolerance; only a budget in ulps at small magnitudes tells them from the real functions
(tests/test_ulp_mutants.py). Every other op converts as usual."""

import functools

import pytensor.scalar.basic as ps

import converter
from converter.ops.elemwise import scalar_rule
from converter.ops.elemwise_math import _c, _differs, _float_rule


def _keeping_zero(ctx, x, value, dt):
    """``value``, and ``x`` itself where x is a zero (so -0.0 stays -0.0); x goes in Where's
    second slot, where ONNX Runtime keeps a zero's sign."""
    return ctx.add("Where", [_differs(ctx, x, _c(ctx, 0, dt), dt), value, x])


def _log_of_one_plus(ctx, names, dt):
    (x,) = names
    return _keeping_zero(ctx, x, ctx.add("Log", [ctx.add("Add", [_c(ctx, 1, dt), x])]), dt)


def _exp_minus_one(ctx, names, dt):
    (x,) = names
    return _keeping_zero(ctx, x, ctx.add("Sub", [ctx.add("Exp", [x]), _c(ctx, 1, dt)]), dt)


@functools.cache
def _install() -> None:
    scalar_rule.register(ps.Log1p)(_float_rule(_log_of_one_plus))
    scalar_rule.register(ps.Expm1)(_float_rule(_exp_minus_one))


def textbook(*args, **kwargs):
    _install()
    return converter.to_onnx(*args, **kwargs)
