"""A converter whose ONNX Loop reads the wrong carried value (tests/test_injected_loop_bug.py):
a one-tap recurrence (``outputs_info=[h0]``, PyTensor's sit-sot) reads the value of two steps
back where the step's own input is the value of the step before. The first step is right
(both carried values start at ``h0``), so only scans of two steps or more show it.

``previous_but_one`` is a ``--converter`` target; it installs the bug on first use.
"""

from __future__ import annotations

import functools

import converter
from converter.ops import control


def _wrong_bind_lags(self, k: int):
    """``_Loop._bind_lags`` with a second carried value, one step older, bound to tap -1."""
    lay, ctx, body = self.lay, self.ctx, self.body
    if tuple(lay.tap_slices[k]) != (-1,):
        return _original_bind_lags(self, k)
    outer, out = lay.taps[k], lay.out_taps[k]
    dtype, ndim = out.type.dtype, out.type.ndim
    start = ctx.add("Gather", [ctx.name_of(outer), control._i64(ctx, 0)], axis=0)
    last = self.carry(start, dtype, ndim, lambda: body.name_of(out), "lag")
    first = len(self.inits) - 1
    older = self.carry(start, dtype, ndim, lambda: last, "lag")
    body.bind(lay.in_taps[k][0], older)  # the bug: h[t-2] where h[t-1] is due
    keeps_history = control._static_length(outer) != 1
    scan = (self.collect(lambda: body.name_of(out), dtype) if keeps_history else None)
    return first, 1, scan


_original_bind_lags = control._Loop._bind_lags


@functools.cache
def _install() -> None:
    control._Loop._bind_lags = _wrong_bind_lags


def previous_but_one(*args, **kwargs):
    _install()
    return converter.to_onnx(*args, **kwargs)
