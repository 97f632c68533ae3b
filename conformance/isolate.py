"""Crash isolation: everything under test runs in a child process under a timeout.

With ``--isolate`` the parent builds PyTensor graphs, judges results and writes records, and
runs none of the code under test. The child rebuilds each graph from its recipe (row name, input
dtypes, static layout, params), keeps its own cache, loads the same converter, and answers one
request at a time:

- ``convert``: the converter's model for a graph and opset (validated there with
  ``onnx.checker.check_model(full_check=True)``), sent back serialized; the parent reads it as
  data for coverage and repro bundles;
- ``run``: one backend's outputs on one input set (conversion, session creation and the run).

A failed conversion comes back as its own kind of answer, typed: a clean refusal (see
``harness.is_refusal``) as :class:`~conformance.harness.RefusedElsewhere`, anything else as
:class:`RemoteError`, each wrapped in ``ConversionFailed`` as in the parent's own harness.

A child that dies (segfault, abort, ``exit``) or does not answer in time is killed and replaced,
and the request's result is an exception naming who took it down (the converter or a backend)
and how (signal, exit code, timeout): a failed conversion is recorded as the converter's, a
failed run is compared by the oracle like any other raise. Shrinking keeps working because
every request is independent.
"""

from __future__ import annotations

import multiprocessing
import signal
import traceback

import numpy as np
import onnx

from conformance.backends import BACKENDS, ConversionFailed, HarnessFailed
from conformance.converters import load
from conformance.harness import Harness, RefusedElsewhere, Spec, is_refusal
from conformance.registries import row_named
from conformance.registry import Case

#: Seconds a new child may take to import everything and load the converter.
START_TIMEOUT = 120.0


class Crashed(RuntimeError):
    """Code under test took the child process down."""


class Hung(RuntimeError):
    """Code under test did not answer within the timeout."""


class BackendCrashed(Crashed):
    """A backend took its process down."""


class BackendHung(Hung):
    """A backend did not answer within the timeout."""


class ConverterCrashed(Crashed):
    """The converter under test took its process down."""


class ConverterHung(Hung):
    """The converter under test did not answer within the timeout."""


class RemoteError(RuntimeError):
    """An exception raised in the child, carried back by type name and text."""

    def __init__(self, name: str, text: str):
        super().__init__(f"{name}: {text}")
        self.name = name


def _answer(harness: Harness, kind: str, opset: int, recipe: tuple, backend=None, values=None):
    row_name, dtypes, static, params = recipe
    dummies = tuple(np.zeros((0,) * len(s), dtype=d) for d, s in zip(dtypes, static, strict=True))
    spec = Spec(row_named(row_name), dtypes[0] if dtypes else "float64", opset, ())
    harness.start(spec)  # a new row releases the last one's graphs
    graph = harness.graph(spec, Case(dummies, static, params))
    if kind == "convert":
        return graph.onnx_model(opset).SerializeToString()
    return [np.asarray(o) for o in graph.runner(BACKENDS[backend], opset)(values)]


def _carried(exc: BaseException) -> tuple:
    return type(exc).__name__, str(exc), is_refusal(exc), traceback.format_exc(limit=3)


def _serve(conn, converter_spec: str) -> None:
    harness = Harness(load(converter_spec))
    conn.send(("ready", None))
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        try:
            conn.send(("ok", _answer(harness, *request)))
        except ConversionFailed as exc:
            conn.send(("conversion", _carried(exc.cause)))
        except Exception as exc:  # noqa: BLE001
            # every failure goes back to the parent as data; the child keeps serving
            conn.send(("error", _carried(exc)))


class Isolated:
    """A child process that converts and runs backends on behalf of the harness."""

    def __init__(self, converter_spec: str, timeout: float):
        if timeout <= 0:
            raise ValueError(f"timeout={timeout!r} must be > 0 seconds")
        self.converter_spec = converter_spec
        self.timeout = timeout
        self._ctx = multiprocessing.get_context("spawn")
        self._proc = None
        self._conn = None

    def convert(self, recipe: tuple, inputs=None, outputs=None, *, opset: int) -> onnx.ModelProto:
        """The converter's model of ``recipe``'s graph, converted in the child. With the recipe
        bound this has a converter's signature; ``inputs`` and ``outputs`` are ignored (the
        child builds its own). Raises :class:`ConversionFailed` saying what went wrong."""
        try:
            data = self._ask(("convert", opset, recipe), "the converter", ConverterCrashed,
                             ConverterHung)
        except ConversionFailed:
            raise
        except (RemoteError, Crashed, Hung) as exc:
            raise ConversionFailed(exc, str(exc)) from None
        return onnx.ModelProto.FromString(data)

    def run(self, backend: str, opset: int, recipe: tuple, values) -> list[np.ndarray]:
        """``backend``'s outputs for ``recipe``'s graph on ``values``, computed in the child."""
        return self._ask(("run", opset, recipe, backend, list(values)), backend,
                         BackendCrashed, BackendHung)

    def _ask(self, request: tuple, who: str, crashed: type, hung: type):
        if self._proc is None or not self._proc.is_alive():
            self._start()
        try:
            self._conn.send(request)
            # Graph building and compiling count too, so allow for a first C compile.
            if not self._conn.poll(self.timeout):
                self._stop()
                raise hung(f"{who} did not answer within {self.timeout:g} s "
                           "(--isolate-timeout); the child process was killed")
            status, payload = self._conn.recv()
        except (EOFError, OSError):
            raise crashed(f"{who} crashed the process ({self._reap()})") from None
        if status == "ok":
            return payload
        name, text, refused, _ = payload
        if status == "conversion":  # the converter failed there, or (run) the rewritten graph's
            cause = RefusedElsewhere(f"{name}: {text}") if refused else RemoteError(name, text)
            raise ConversionFailed(cause, f"{name}: {text}")
        raise RemoteError(name, text)

    def _start(self) -> None:
        """A new child, once it has loaded the converter; raises HarnessFailed if it cannot
        (then no backend could run, and comparing their errors would make every test pass)."""
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_serve, args=(child, self.converter_spec),
                                       daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        try:
            ready = parent.poll(START_TIMEOUT)
            if ready:
                parent.recv()
        except (EOFError, OSError):
            raise HarnessFailed(f"--isolate: the child process died while starting and loading "
                                f"{self.converter_spec} ({self._reap()})") from None
        if not ready:
            self._stop()
            raise HarnessFailed(f"--isolate: the child process did not start and load "
                                f"{self.converter_spec} within {START_TIMEOUT:g} s")

    def _reap(self) -> str:
        """Why the child died (its exit status), once it is gone."""
        code = None
        if self._proc is not None:
            self._proc.join(5)
            code = self._proc.exitcode
        self._stop()
        return _describe_exit(code)

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(5)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    def close(self) -> None:
        self._stop()


def _describe_exit(code) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
