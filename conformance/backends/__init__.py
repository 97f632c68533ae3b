"""Backends, one module per family, as PyTensor keeps ``link/c``, ``link/numba``, ``link/jax``:
the Python reference (``python``), C with its batching (``c``, ``cbatch``, ``cnodes``), Numba
(``numba``), JAX (``jax``, when installed), ONNX Runtime (``onnxruntime``) and the ONNX
reference evaluator (``onnx_reference``). Each prepares a graph once and runs it on many input
sets, and knows nothing of the others; ``base.Graph`` is the one cache.

:data:`BACKENDS` is the one list: the plugin's options, the report's columns, blame and coverage
derive from it. Adding a backend is its module and its entry here.
"""

from __future__ import annotations

from conformance.backends import jax as _jax
from conformance.backends.base import (
    Backend,
    ConversionFailed,
    Declined,
    Graph,
    HarnessFailed,
    Runner,
    Semantics,
)
from conformance.backends.c import CBackend
from conformance.backends.numba import NumbaBackend
from conformance.backends.onnx_reference import OnnxReferenceBackend
from conformance.backends.onnxruntime import (
    OnnxModeBackend,
    OnnxRuntimeBackend,
    RewrittenGraphBackend,
)
from conformance.backends.python import REFERENCE, PyTensorBackend

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKENDS",
    "NUMBA_DTYPE_ORDER",
    "OPTIONAL_BACKENDS",
    "REFERENCE",
    "Backend",
    "CBackend",
    "ConversionFailed",
    "Declined",
    "Graph",
    "HarnessFailed",
    "NumbaBackend",
    "OnnxModeBackend",
    "OnnxReferenceBackend",
    "OnnxRuntimeBackend",
    "PyTensorBackend",
    "RewrittenGraphBackend",
    "Runner",
    "Semantics",
    "numba_dtypes",
    "without_numba_beyond",
]

#: Every backend by name; the first is the semantic reference all others are judged against.
BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        REFERENCE,
        CBackend("pytensor-c", optimizer=None),
        CBackend("pytensor-c-opt", optimizer="fast_run", unrewritten="pytensor-c"),
        NumbaBackend("pytensor-numba", optimizer=None),
        NumbaBackend("pytensor-numba-opt", optimizer="fast_run", unrewritten="pytensor-numba"),
        *_jax.BACKENDS,
        OnnxRuntimeBackend("onnxruntime"),
        OnnxRuntimeBackend("onnxruntime-noopt", optimize=False),
        OnnxReferenceBackend(),
        RewrittenGraphBackend("onnxruntime-rewritten"),
        OnnxModeBackend("pytensor-onnx"),
    )
}
#: Backends that need a package the quick start does not install, and the package.
OPTIONAL_BACKENDS: dict[str, str] = {b.name: "jax" for b in _jax.BACKENDS}
#: What the default run judges: what users run (the NUMBA mode is PyTensor 3's default, the C
#: mode 2.38's, the ONNX mode this project's), within a newcomer's cold budget. The unrewritten
#: Numba backend and ONNX Runtime without its optimizations join with ``--backends all`` and in
#: the nightly run. onnxruntime-rewritten stays beside pytensor-onnx: it converts the default
#: mode's graph, what function_to_onnx exports from a user's function (on 2.38 with BLAS ops
#: and reductions fused with their elementwise input, on 3.x with the NUMBA mode's own
#: rewrites), which the ONNX mode's rewrites never build.
DEFAULT_BACKENDS = ("pytensor-py", "pytensor-c", "pytensor-c-opt", "pytensor-numba-opt",
                    "onnxruntime", "onnx-reference", "onnxruntime-rewritten", "pytensor-onnx")


def expand_backends(text: str, installed) -> list[str]:
    """The backend names of a ``--backends`` value: names, ``default`` (DEFAULT_BACKENDS) and
    ``all`` (every backend whose optional package ``installed(package)`` says is there)."""
    names: list[str] = []
    for word in (w.strip() for w in text.split(",") if w.strip()):
        if word == "default":
            names.extend(DEFAULT_BACKENDS)
        elif word == "all":
            names.extend(b for b in BACKENDS
                         if b not in OPTIONAL_BACKENDS or installed(OPTIONAL_BACKENDS[b]))
        else:
            names.append(word)
    return list(dict.fromkeys(names))


#: The order in which a row's dtypes are judged by the Numba backends when a run caps them
#: (``--numba-dtypes N``): PyMC's dtypes first (float64 values, int64 indices and counts),
#: then the other float, then the remaining integers from the widest, bool last (Numba has no
#: float16 and declines it). A cold Numba compile costs a second or two per cell, so the default
#: run judges each row's first dtype only, and the nightly every dtype.
NUMBA_DTYPE_ORDER = ("float64", "int64", "float32", "int32", "uint64", "uint32", "int16",
                     "uint16", "int8", "uint8", "bool", "float16")


def numba_dtypes(row_dtypes, count: int | None) -> tuple[str, ...]:
    """The first ``count`` of ``row_dtypes`` in :data:`NUMBA_DTYPE_ORDER` (all for None)."""
    rank = {d: i for i, d in enumerate(NUMBA_DTYPE_ORDER)}
    ordered = sorted(row_dtypes, key=lambda d: rank.get(d, len(rank)))
    return tuple(ordered if count is None else ordered[:count])


def without_numba_beyond(names, dtype: str, row_dtypes, count: int | None) -> tuple[str, ...]:
    """``names`` less the Numba backends when ``dtype`` is not among the row's first ``count``
    (:func:`numba_dtypes`): those cells are left to a run that judges every dtype."""
    if dtype in numba_dtypes(row_dtypes, count):
        return tuple(names)
    return tuple(b for b in names if not isinstance(BACKENDS[b], NumbaBackend))
