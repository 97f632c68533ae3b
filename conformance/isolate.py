"""Crash isolation: backends run in a child process under a timeout.

The child rebuilds each graph from its recipe (row name, input types, params) with the same
converter, keeps its own cache, and answers one (backend, opset, recipe, values) request at a
time. A child that dies (segfault, abort) or does not answer in time is replaced, and the
request's result is an exception saying so, which the oracle then compares like any other
raise; shrinking keeps working because every request is independent.
"""

from __future__ import annotations

import multiprocessing
import signal
import traceback

import numpy as np


class BackendCrashed(RuntimeError):
    """The backend took its process down."""


class BackendHung(RuntimeError):
    """The backend did not answer within the timeout."""


class RemoteError(RuntimeError):
    """An exception raised by a backend in the child, carried back by type name and text."""

    def __init__(self, name: str, text: str):
        super().__init__(f"{name}: {text}")
        self.name = name


def _serve(conn, converter_spec: str) -> None:
    from conformance.backends import BACKENDS
    from conformance.converters import load
    from conformance.harness import Harness, Spec
    from conformance.registries import row_named
    from conformance.registry import Case

    harness = Harness(load(converter_spec))
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        backend, opset, (row_name, dtypes, static, params), values = request
        try:
            dummies = tuple(np.zeros((0,) * len(s), dtype=d) for d, s in zip(dtypes, static,
                                                                            strict=True))
            case = Case(dummies, static, params)
            spec = Spec(row_named(row_name), dtypes[0] if dtypes else "float64", opset, ())
            graph = harness.graph(spec, case)
            outputs = graph.runner(BACKENDS[backend], opset)(values)
            conn.send(("ok", [np.asarray(o) for o in outputs]))
        except Exception as exc:  # noqa: BLE001
            # every failure goes back to the parent as data; the child keeps serving
            conn.send(("error", (type(exc).__name__, str(exc), traceback.format_exc(limit=3))))


class Isolated:
    """A child process that runs backends on behalf of the harness."""

    def __init__(self, converter_spec: str, timeout: float):
        if timeout <= 0:
            raise ValueError(f"timeout={timeout!r} must be > 0 seconds")
        self.converter_spec = converter_spec
        self.timeout = timeout
        self._ctx = multiprocessing.get_context("spawn")
        self._proc = None
        self._conn = None

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_serve, args=(child, self.converter_spec),
                                       daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(5)
        self._proc = self._conn = None

    def run(self, backend: str, opset: int, recipe: tuple, values) -> list[np.ndarray]:
        if self._proc is None or not self._proc.is_alive():
            self._start()
        try:
            self._conn.send((backend, opset, recipe, list(values)))
            # Graph building and compiling count too, so allow for a first C compile.
            if not self._conn.poll(self.timeout):
                self._stop()
                raise BackendHung(f"{backend} did not answer within {self.timeout:g} s")
            status, payload = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            code = None
            if self._proc is not None:
                self._proc.join(5)
                code = self._proc.exitcode
            self._stop()
            why = _describe_exit(code)
            raise BackendCrashed(f"{backend} crashed the process ({why})") from None
        if status == "ok":
            return payload
        name, text, _ = payload
        raise RemoteError(name, text)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
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
