"""Errors raised by the converter; each says what was wrong and what is allowed."""

from __future__ import annotations

import warnings
import weakref


class ConversionError(ValueError):
    """The graph handed to the converter cannot become an ONNX model as given."""


class UnsupportedOpError(ConversionError, NotImplementedError):
    """No conversion rule exists for an Op (or for the dtypes it was applied to).

    Also a ``NotImplementedError``, what PyTensor's own JAX and PyTorch linkers raise for an
    Op they cannot translate, so code written for those modes catches it alike."""

    def __init__(self, op, input_types=(), detail: str = ""):
        self.op = op
        self.input_types = tuple(input_types)
        types = ", ".join(str(t) for t in self.input_types) or "no inputs"
        extra = f": {detail}" if detail else ""
        super().__init__(
            f"cannot convert {op} (Op class {type(op).__module__}.{type(op).__qualname__}) "
            f"applied to ({types}){extra}. "
            "See converter.supported_ops() for the list of convertible Ops."
        )


class NotRunnable(ConversionError, NotImplementedError):
    """``mode="ONNX"`` cannot run a compiled function: its graph cannot be converted (an
    input type ONNX has no form for, say) or the runtime refused to load the model. Raised
    while ``pytensor.function`` compiles, never at call time, as a ``NotImplementedError``
    like an Op without a rule (``UnsupportedOpError``)."""


class ModelNotLoaded(NotRunnable):
    """The runtime (ONNX Runtime, the reference evaluator) refused to load the converted
    model; its own error is the ``__cause__``."""


class RuntimeCheckDropped(UserWarning):
    """An op that checks its input at run time (``Assert``, ``CheckAndRaise``,
    ``specify_shape``) became an Identity: ONNX cannot raise, so the model does not check."""


#: per conversion (its Context), the op classes already warned about
_warned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def warn_check_dropped(conversion, op, what: str) -> None:
    """Warn, once per ``conversion`` and op class, that ``op``'s runtime check of ``what`` is
    not in the converted model."""
    seen = _warned.setdefault(conversion, set())
    if type(op) in seen:
        return
    seen.add(type(op))
    warnings.warn(RuntimeCheckDropped(
        f"{op} checks {what} at run time, but ONNX cannot raise: the converted model drops "
        "the check and passes the value through unchanged, so input that PyTensor refuses "
        "runs without an error"), stacklevel=2)
