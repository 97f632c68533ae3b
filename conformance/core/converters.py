"""Loading the converter under test from ``module:callable`` (``--converter``), for the pytest
plugin, the CLI and the isolation child alike; each turns :class:`ConverterSpecError` into its
own kind of usage error."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from importlib import metadata

#: The project's own converter: the registry's rows are its claims.
PROJECT = "converter:to_onnx"


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


def claims_every_row(fn: Callable) -> bool:
    """Whether ``fn`` is the project's own converter, which claims every registry row (so a
    refusal of one fails the run); any other converter is judged on what it converts."""
    import converter  # heavy (PyTensor): only once a converter is loaded anyway

    return fn is converter.to_onnx


def version(spec: str) -> str | None:
    """The version of what ``spec`` names: its distribution's, else its module's
    ``__version__``; None when neither is known (a module from a source tree)."""
    module_name = spec.partition(":")[0]
    for dist in metadata.packages_distributions().get(module_name.split(".")[0], []):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    found = getattr(sys.modules.get(module_name), "__version__", None)
    return str(found) if found is not None else None
