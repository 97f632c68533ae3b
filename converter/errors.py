"""Errors raised by the converter; each says what was wrong and what is allowed."""

from __future__ import annotations

import warnings
import weakref


class ConversionError(ValueError):
    """The graph handed to the converter cannot become an ONNX model as given."""


class UnsupportedOpError(ConversionError):
    """No conversion rule exists for an Op (or for the dtypes it was applied to)."""

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
