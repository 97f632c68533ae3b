"""A foreign converter as the one judged in a measured trial (docs/other-converters.md): it
refuses negative constant slice bounds and negative constant integer indices
(``UnsupportedOpError``, a clean refusal) and converts the plain reversal ``x[::-1]`` as
``x[:]``, silently wrong. Everything else goes to the project's converter; the project's own
rules are left untouched (the wrong reversal
is a rewrite of the graph handed to it).
"""

from __future__ import annotations

from pytensor.graph.basic import Constant
from pytensor.graph.replace import clone_replace
from pytensor.tensor.subtensor import Subtensor, indices_from_subtensor

import converter
from converter.errors import UnsupportedOpError

try:
    from pytensor.graph.traversal import applys_between
except ImportError:  # PyTensor 2.38
    from pytensor.graph.basic import applys_between


def _value(part):
    return int(part.data) if isinstance(part, Constant) else part


def _negative(part) -> bool:
    return isinstance(part, Constant) and int(part.data) < 0


def _reversal(entry) -> bool:
    return (isinstance(entry, slice) and entry.start is None and entry.stop is None
            and isinstance(entry.step, Constant) and int(entry.step.data) == -1)


def _as_written(entry):
    if isinstance(entry, slice):
        return slice(None) if _reversal(entry) else slice(
            *(None if p is None else _value(p) for p in (entry.start, entry.stop, entry.step)))
    return _value(entry)


def to_onnx(inputs, outputs, *, opset=None):
    wrong = {}
    for node in applys_between(list(inputs), list(outputs)):
        if not isinstance(node.op, Subtensor):
            continue
        index = indices_from_subtensor(node.inputs[1:], node.op.idx_list)
        for entry in index:
            parts = (entry.start, entry.stop) if isinstance(entry, slice) else (entry,)
            if any(_negative(p) for p in parts):
                raise UnsupportedOpError(node.op, [i.type for i in node.inputs],
                                         "reversing_converter takes no negative bound or index")
        if any(_reversal(entry) for entry in index):
            wrong[node.outputs[0]] = node.inputs[0][tuple(_as_written(e) for e in index)]
    if wrong:
        outputs = clone_replace(list(outputs), replace=wrong)
    return converter.to_onnx(inputs, outputs, opset=opset)
