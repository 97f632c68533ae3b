"""Bitwise reductions: ``CAReduce`` with ``and_``, ``or_`` or ``xor`` over integers and bools.

ONNX has bitwise operators only elementwise, and its ReduceMin/ReduceMax equal AND/OR only on
bools, so the converter reduces each bit apart (converter/ops/reduce.py); the values are drawn
over each dtype's whole range, where every bit is set somewhere. pt.all and pt.any (and_ and
or_ on bools) are the reductions rows' ``all`` and ``any``.
"""

from __future__ import annotations

import pytensor.scalar.basic as ps
from hypothesis import strategies as st
from pytensor.tensor.elemwise import CAReduce

from conformance.registry import Case, Row
from conformance.strategies import ANY, arrays, dtypes
from conformance.strategies.axes import LAYOUTS

#: the scalar op of each reduction, by the name a case carries
SCALAR_OPS = {"and": ps.and_, "or": ps.or_, "xor": ps.xor}


def bitwise_reduce(x, op, axis):
    return CAReduce(SCALAR_OPS[op], axis=axis)(x)


def reductions(dtype: str):
    """A reduction (shrinking to ``and``), a layout of ``LAYOUTS`` plus the empty axis
    tuple (the identity), and an operand of any values."""

    @st.composite
    def cases(draw):
        op = draw(st.sampled_from(tuple(SCALAR_OPS)))
        rank, axis = draw(st.sampled_from((*LAYOUTS, (2, ()))))
        shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
        value = draw(arrays(dtype, shape, ANY))
        return Case((value,), ((None,) * rank,), (("op", op), ("axis", axis)))

    return cases()


ROWS = [
    Row("bitwise_reduce", bitwise_reduce, reductions, dtypes.BOOL + dtypes.INTS, grid=(ANY,)),
]
