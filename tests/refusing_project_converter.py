"""The project's own converter with its Exp rule removed, for self-tests: it refuses the
``exp`` rows, which the registry says it supports, so the run must fail."""

import pytensor.scalar.basic as ps

import converter
from converter.ops import elemwise

del elemwise.ARITHMETIC[ps.Exp]

to_onnx = converter.to_onnx
