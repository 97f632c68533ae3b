"""Converters under test that take their process down on graphs holding a Neg, for the isolation
tests: ``--converter misbehaving_converter:segfaults`` (SIGSEGV), ``:exits`` (``os._exit(1)``)
and ``:hangs`` (sleeps for an hour). Every other graph converts as usual."""

import ctypes
import os
import time

import pytensor.scalar.basic as ps

import converter

try:
    from pytensor.graph.traversal import applys_between
except ImportError:  # PyTensor 2.38
    from pytensor.graph.basic import applys_between


def _has_neg(inputs, outputs) -> bool:
    return any(isinstance(getattr(node.op, "scalar_op", None), ps.Neg)
               for node in applys_between(list(inputs), list(outputs)))


def _misbehaving(misbehave):
    def to_onnx(inputs, outputs, *, opset=None):
        if _has_neg(inputs, outputs):
            misbehave()
        return converter.to_onnx(inputs, outputs, opset=opset)

    return to_onnx


segfaults = _misbehaving(lambda: ctypes.string_at(0))
exits = _misbehaving(lambda: os._exit(1))
hangs = _misbehaving(lambda: time.sleep(3600))


def _says_then_segfaults():
    os.write(2, b"NOISE-FROM-THE-CHILD before it crashed\n")
    ctypes.string_at(0)


#: writes to its stderr first: the line must reach the failure's message, not the terminal
noisy = _misbehaving(_says_then_segfaults)
