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
from conformance.backends.onnxruntime import OnnxRuntimeBackend, RewrittenGraphBackend
from conformance.backends.python import REFERENCE, PyTensorBackend

__all__ = [
    "BACKENDS", "DEFAULT_BACKENDS", "OPTIONAL_BACKENDS", "REFERENCE", "Backend", "CBackend",
    "ConversionFailed", "Declined", "Graph", "HarnessFailed", "NumbaBackend",
    "OnnxReferenceBackend", "OnnxRuntimeBackend", "PyTensorBackend", "RewrittenGraphBackend",
    "Runner", "Semantics",
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
    )
}
#: Backends that need a package the quick start does not install, and the package.
OPTIONAL_BACKENDS: dict[str, str] = {b.name: "jax" for b in _jax.BACKENDS}
#: What the default run judges: what users run (the NUMBA mode is PyTensor 3's default, the C
#: mode 2.38's), within a newcomer's cold budget. The unrewritten Numba backend and ONNX
#: Runtime without its optimizations join with ``--backends all`` and in the nightly run.
DEFAULT_BACKENDS = ("pytensor-py", "pytensor-c", "pytensor-c-opt", "pytensor-numba-opt",
                    "onnxruntime", "onnx-reference", "onnxruntime-rewritten")


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
