"""PyTensor's JAX backend, when jax is installed (``pip install .[jax]``): ``pytensor-jax`` (the
JAX linker without rewrites: JAX's dispatch against the Python reference) and
``pytensor-jax-opt`` (the ``JAX`` mode, what ``pytensor.function(..., mode="JAX")`` compiles:
``fast_run`` plus JAX's own rewrites, without the C-only, BLAS, fusion and inplace ones). Judged
by ``tox -e jax`` and the nightly, never by the quick start.

Declared (:data:`SEMANTICS`), not recorded on every row:

- float64 is computed only with ``jax_enable_x64`` (JAX's default is float32); PyTensor's JAX
  dispatch turns it on at import when ``floatX`` is float64, PyTensor's default, which the
  harness keeps, and the backend turns it on again before compiling.
- A graph that JAX cannot trace is *declined* (the backend's "unsupported" cell, as Numba's
  NotImplementedError is): PyTensor's dispatch has no JAX implementation of an op, or raises
  NotImplementedError for an input that must be static under ``jit`` (a shape, a slice bound, a
  repeat count), or JAX itself refuses such a value: one of its documented tracer errors
  (https://docs.jax.dev/en/latest/errors.html), the IndexError of a slice bound and the
  TypeError of a shape that are not static, or lax.cond's TypeError for an ifelse whose
  branches have other shapes. These come from tracing, once per input layout,
  before any value is computed: they say nothing about the values. The JAX mode's rewrites
  make some graphs untraceable that the JAX linker alone traces (einsum): declined as well,
  and shown as such in the pass-rate table.
- XLA's CPU kernels keep no promise about the sign of a zero.
- JAX runs XLA's CPU kernels with flush-to-zero and denormals-are-zero set, "working as
  intended" (jax-ml/jax#16200; the "sharp bits" page since jax-ml/jax#26668): a float32 or
  float64 subnormal may be read or written as a zero (a float16 one by some kernels, such as
  division, not by others, which compute in float32). Judged right where it agrees with the
  reference on the inputs as given or with their subnormals read as zeros, subnormal results
  read as zeros on both sides.
"""

from __future__ import annotations

import contextlib
import importlib.util
import warnings

from conformance.backends.base import Backend, Declined, Graph, Runner, Semantics
from conformance.backends.cnodes import call

SEMANTICS = Semantics(
    signed_zeros=False, declines=frozenset(),
    flushes_subnormals=frozenset({"float16", "float32", "float64"}),
    source="XLA does not keep the sign of zero; JAX sets the CPU's flush-to-zero and "
           "denormals-are-zero modes (JAX's 'sharp bits': subnormals read and written as "
           "zeros; float16 ones by some kernels, e.g. division, not by others); "
           "float64 needs jax_enable_x64 (PyTensor's JAX dispatch sets it when floatX is "
           "float64, PyTensor's default); a graph jit cannot trace (no JAX implementation, or "
           "a value that must be static) is declined")

#: JAX's errors for a traced value used where a concrete one is needed (jax.errors)
_STATIC_VALUE_ERRORS = ("ConcretizationTypeError", "TracerIntegerConversionError",
                        "TracerArrayConversionError", "NonConcreteBooleanIndexError")
#: the same refusal where jax raises a plain exception: (type, what its message says)
_STATIC_VALUE_MESSAGES = ((IndexError, "must be static"),  # x[:n], x[:n] = y
                          (TypeError, "sequences of concrete values"),  # reshape(x, shape)
                          # ifelse(c, x, y) with x and y of other shapes (lax.cond)
                          (TypeError, "branches must have equal output types"))


def available() -> bool:
    return importlib.util.find_spec("jax") is not None


def untraceable(exc: BaseException) -> bool:
    """Whether ``exc`` is PyTensor's JAX dispatch or jax saying the graph cannot be traced:
    no implementation of an op, or a value that jit needs to be static."""
    if isinstance(exc, NotImplementedError):
        return True
    if any(isinstance(exc, kind) and text in str(exc) for kind, text in _STATIC_VALUE_MESSAGES):
        return True
    import jax

    return isinstance(exc, tuple(getattr(jax.errors, n) for n in _STATIC_VALUE_ERRORS))


@contextlib.contextmanager
def _declined_if_untraceable():
    """PyTensor converts the graph when compiling and jax traces it on the first call of each
    input layout: a refusal from either is the backend's "unsupported" cell, anything else a
    result."""
    try:
        yield
    except Exception as exc:
        if untraceable(exc):
            raise Declined(f"JAX cannot trace the graph: {type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        raise


class JaxBackend(Backend):
    """The JAX linker, without rewrites or in the JAX mode: one jitted function per graph,
    traced again by jax for each input layout.

    ``pytensor-jax-opt`` compiles the graph with ``mode="JAX"`` itself rather than a graph
    rewritten beforehand by the Python linker (``Graph.rewritten``, as the Numba and C
    batches do): linking there compiles each Scan's inner function with PyTensor's default
    mode, whose BLAS rewrites stay in the Scan's graph (a ``Gemv{inplace}``, which JAX has no
    implementation of), so it is not what the JAX mode compiles."""

    #: XLA aborts the process on some graphs (a CHECK failure compiling a negative length):
    #: run in the sandbox's child, where that is the case's result, not the worker's end
    runs_apart = True

    def __init__(self, name: str, mode: str | None):
        self.name, self.mode = name, mode

    semantics = SEMANTICS

    def prepare(self, graph: Graph, opset: int) -> Runner:
        if not available():
            raise Declined("jax is not installed (pip install .[jax])")
        import jax

        jax.config.update("jax_enable_x64", True)
        with _declined_if_untraceable():
            fn = self.function(graph)

        def run(values):
            with _declined_if_untraceable():
                return call(fn, values)

        return run

    def function(self, graph: Graph):
        """``graph`` compiled: with ``Mode(linker="jax", optimizer=None)`` (the inner graphs of
        Scan and OpFromGraph without rewrites too, as for pytensor-py), or in ``mode``."""
        if self.mode is None:
            return graph.function("jax", None)
        import pytensor

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pytensor.function(graph.inputs, graph.outputs, mode=self.mode,
                                     on_unused_input="ignore")


BACKENDS = (JaxBackend("pytensor-jax", mode=None), JaxBackend("pytensor-jax-opt", mode="JAX"))
