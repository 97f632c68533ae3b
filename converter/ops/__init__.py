"""Conversion rules, one module per PyTensor op category.

A module listed in ``CATEGORY_MODULES`` is imported here; the project's tests check that
every ``converter/ops/*.py`` file is listed, so no rule file can be silently left out.
"""

from __future__ import annotations

import importlib

CATEGORY_MODULES = (
    "elemwise", "elemwise_math", "elemwise_trig", "reduce", "shape", "creation", "subtensor",
    "linalg", "nn", "misc", "special", "special_ndtri", "linalg_solve", "control",
)

_loaded = [importlib.import_module(f"{__name__}.{name}") for name in CATEGORY_MODULES]


def registered_modules() -> tuple[str, ...]:
    return tuple(m.__name__ for m in _loaded)


def supported_ops() -> dict[str, list[str]]:
    """Convertible Op classes and, for Elemwise/CAReduce, convertible scalar-op classes."""
    from converter._core import convert_op
    from converter.ops.elemwise import scalar_rule

    def names(classes):
        return sorted({c.__name__ for c in classes if c is not object})

    return {"ops": names(convert_op.registry), "scalar_ops": names(scalar_rule.registry)}
