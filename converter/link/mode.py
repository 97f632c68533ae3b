"""The ``ONNX`` mode: PyTensor's rewrites chosen for ONNX, and the ONNX linker.

``import converter`` registers the linker ``"onnx"`` and the modes ``"ONNX"`` (ONNX Runtime)
and ``"ONNX_REFERENCE"`` (``onnx.reference.ReferenceEvaluator``, for debugging) under
PyTensor's own names, as ``pytensor/compile/mode.py`` registers ``JAX`` and ``NUMBA``.
:func:`onnx_mode` builds variants.
"""

from __future__ import annotations

import warnings

import onnx
from pytensor.compile import mode as pt_mode
from pytensor.graph.rewriting.db import RewriteDatabaseQuery

from converter import _args
from converter._core import MIN_OPSET
from converter._opset import default_opset
from converter.errors import ConversionError
from converter.link.linker import EVALUATORS, OPTIMIZATION_LEVELS, ONNXLinker, SessionOptions

#: the query: canonicalization, stabilization and specialization (``fast_run``), which make
#: a model smaller or more accurate (log1p, softplus, log-sum-exp forms), and PyTensor's
#: fusion into Composites, which converts to no more nodes than the unfused graph (two fewer
#: on a PyMC logp+dlogp) at the same speed; the linker's ``incompatible_rewrites`` leave out
#: what serves C or Numba only (docs/converter.md#the-onnx-mode measures both choices)
QUERY = RewriteDatabaseQuery(include=["fast_run"])


def onnx_mode(*, providers=("CPUExecutionProvider",), threads: int | None = None,
              optimization: str = "all", opset: int | None = None,
              evaluator: str = "onnxruntime", rewrites=QUERY):
    """A ``Mode`` that runs a compiled function as one ONNX model.

    ``providers``: ONNX Runtime's execution providers, in order of preference.
    ``threads``: its intra-op threads (None: its default, one per core).
    ``optimization``: its graph optimization level, one of ``all``, ``extended``, ``basic``,
    ``none``. ``opset``: the model's opset (None: ``converter.default_opset()``).
    ``evaluator``: ``onnxruntime``, or ``reference`` for ``onnx.reference.ReferenceEvaluator``
    (ONNX Runtime's options then mean nothing). ``rewrites``: the rewrite query or name of
    PyTensor's (``QUERY`` by default; the linker's incompatible rewrites are left out of any).
    """
    if evaluator not in EVALUATORS:
        raise ConversionError(f"evaluator={evaluator!r} is not one of {', '.join(EVALUATORS)}")
    if optimization not in OPTIMIZATION_LEVELS:
        raise ConversionError(f"optimization={optimization!r} is not one of "
                              f"{', '.join(OPTIMIZATION_LEVELS)} (ONNX Runtime's levels)")
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool)
                                or threads < 1):
        raise ConversionError(f"threads={threads!r} must be a positive int or None")
    if isinstance(providers, str) or not providers or not all(
            isinstance(p, str) for p in providers):
        raise ConversionError(f"providers={providers!r} must be a non-empty sequence of "
                              "ONNX Runtime provider names such as 'CPUExecutionProvider'")
    if opset is not None:
        opset = _args.opset(opset, onnx.defs.onnx_opset_version(), MIN_OPSET, default_opset)
    options = SessionOptions(evaluator=evaluator, providers=tuple(providers), threads=threads,
                             optimization=optimization, opset=opset)
    return pt_mode.Mode(linker=ONNXLinker(options), optimizer=rewrites)


def _register() -> None:
    """Register the linker and modes once; a name some other code took is left to it, with
    a warning that says how to get this mode still."""
    for registry, name, value, register in (
            (pt_mode.predefined_linkers, "onnx", ONNXLinker(), pt_mode.register_linker),
            (pt_mode.predefined_modes, "ONNX", onnx_mode(), pt_mode.register_mode),
            (pt_mode.predefined_modes, "ONNX_REFERENCE", onnx_mode(evaluator="reference"),
             pt_mode.register_mode)):
        held = registry.get(name)
        if held is None:
            register(name, value)
        elif not _ours(held):
            warnings.warn(f"PyTensor already has a {name!r} entry ({held!r}); this project's "
                          "is not registered under that name: pass mode=converter.onnx_mode() "
                          "instead", stacklevel=3)


def _ours(entry) -> bool:
    linker = getattr(entry, "linker", entry)
    return isinstance(linker, ONNXLinker)


_register()
