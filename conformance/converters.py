"""Loading the converter under test from ``module:callable`` (``--converter``), for the pytest
plugin, the CLI and the isolation child alike; each turns :class:`ConverterSpecError` into its
own kind of usage error."""

from __future__ import annotations

import importlib
from collections.abc import Callable


class ConverterSpecError(ValueError):
    """``--converter`` names nothing that can be called."""


def load(spec: str) -> Callable:
    """The callable ``spec`` (``module:callable``) names, with the signature of
    ``converter.to_onnx``."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConverterSpecError(
            f"{spec!r} must look like module:callable, e.g. converter:to_onnx")
    try:
        module = importlib.import_module(module_name)
    # importing runs the module's code, which may raise anything
    except Exception as exc:  # noqa: BLE001
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise ConverterSpecError(
            f"{spec!r}: module {module_name!r} cannot be imported ({detail[:300]})") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConverterSpecError(f"{spec!r}: module {module_name!r} has no callable {attr!r}")
    return fn
