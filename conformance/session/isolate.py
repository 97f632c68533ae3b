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
``harness.is_refusal``) as :class:`~conformance.core.harness.RefusedElsewhere`, anything else as
:class:`RemoteError`, each wrapped in ``ConversionFailed`` as in the parent's own harness.

A child that dies (segfault, abort, ``exit``) or does not answer in time is killed and replaced,
and the request's result is an exception naming who took it down (the converter or a backend)
and how (signal, exit code, timeout): a failed conversion is recorded as the converter's, a
failed run is compared by the oracle like any other raise. Shrinking keeps working because
every request is independent.

Without ``--isolate``, the backends that declare ``runs_apart`` (Numba, whose out-of-bounds
writes corrupt the heap and may crash the process cases later) still run in a child of their
own, a :class:`Sandbox`: ``judge`` requests run a backend as the parent's harness would, its
row's canonical layouts batched, and a crash is blamed on the case that was running.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
import traceback
from pathlib import Path
from typing import ClassVar

import numpy as np
import onnx

from conformance.backends import BACKENDS, ConversionFailed, Declined, HarnessFailed
from conformance.backends.base import Crashed, Hung
from conformance.backends.ort_status import OrtError
from conformance.compile import compilestats
from conformance.compile.rewritestore import RewriteStore
from conformance.core.converters import load
from conformance.core.harness import Harness, RefusedElsewhere, Spec, is_refusal, recipe
from conformance.registries import row_named
from conformance.registry import Case
from conformance.session import interrupt
from conformance.strategies.canonical import Store

#: Seconds a new child may take to import everything and load the converter.
START_TIMEOUT = 120.0
#: how often a wait for the child looks for a Ctrl-C that was swallowed elsewhere (seconds)
POLL_SLICE = 0.5


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

    @classmethod
    def named(cls, name: str, text: str) -> RemoteError:
        """One whose type carries the original's name, so that a message reads as the
        child's exception would ("TypingError: ..."), as records' ``match`` expect."""
        kind = _REMOTE_KINDS.setdefault(name, type(name, (cls,), {}))
        error = kind.__new__(kind)
        RuntimeError.__init__(error, text)
        error.name = name
        return error


_REMOTE_KINDS: dict[str, type] = {}


def _answer(harness: Harness, kind: str, opset: int, recipe: tuple, backend=None, values=None,
            dtype=None):
    row_name, dtypes, static, params = recipe
    dummies = tuple(np.zeros((0,) * len(s), dtype=d) for d, s in zip(dtypes, static, strict=True))
    spec = Spec(row_named(row_name), dtype or (dtypes[0] if dtypes else "float64"), opset, ())
    harness.start(spec)  # a new row releases the last one's graphs
    if kind == "judge":  # as the parent's harness would: batched, canonical layouts
        case = Case(tuple(values), static, params)
        return harness.outputs(harness.graph(spec, case), BACKENDS[backend], spec, case)
    graph = harness.graph(spec, Case(dummies, static, params))
    if kind == "convert":
        return graph.onnx_model(opset).SerializeToString()
    return [np.asarray(o) for o in graph.runner(BACKENDS[backend], opset)(values)]


def _carried(exc: BaseException) -> tuple:
    return type(exc).__name__, str(exc), is_refusal(exc), traceback.format_exc(limit=3)


def _serve(conn, converter_spec: str, settings: dict | None = None) -> None:
    settings = settings or {}
    if settings.get("tmpdir"):
        # PyTensor writes every generated Numba function's source to a temporary file it
        # never deletes; here they land in a folder the parent removes with the child
        tempfile.tempdir = settings["tmpdir"]
        _quiet(Path(settings["tmpdir"]) / OUTPUT)
    for module in settings.get("preload", ()):
        importlib.import_module(module)
    if settings.get("graph_ops"):
        from conformance.registries import graph_composer

        graph_composer().restrict(settings["graph_ops"])
    harness = Harness(load(converter_spec), c_all_layouts=settings.get("c_all_layouts", False),
                      canonical_store=Store(settings.get("canonical")),
                      rewrite_store=RewriteStore(settings.get("rewritten")))
    compilestats.install_numba()

    def reply(status: str, payload) -> None:
        # the child's compile totals so far travel with every answer: the parent counts them
        conn.send((status, payload, compilestats.totals()))

    reply("ready", None)
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        try:
            reply("ok", _answer(harness, *request))
        except ConversionFailed as exc:
            reply("conversion", _carried(exc.cause))
        except Declined as exc:
            reply("declined", _carried(exc))
        except OrtError as exc:  # sent whole: blame reads its status and stage
            reply("ort", exc)
        except Exception as exc:  # noqa: BLE001
            # every failure goes back to the parent as data; the child keeps serving
            reply("error", _carried(exc))


class Isolated:
    """A child process that converts and runs backends on behalf of the harness."""

    #: modules every child imports before it serves: a plugin that patches a backend (as
    #: the project's tests inject bugs) adds itself here, so the child runs the patch too
    PRELOAD: ClassVar[list[str]] = []

    def __init__(self, converter_spec: str, timeout: float, settings: dict | None = None):
        if timeout <= 0:
            raise ValueError(f"timeout={timeout!r} must be > 0 seconds")
        self.converter_spec = converter_spec
        self.timeout = timeout
        #: what the child's harness must share with the parent's (see _serve)
        self.settings = settings or {}
        self._ctx = _context()
        self._proc = None
        self._conn = None
        self._tmpdir: str | None = None
        #: the child's compile totals at its last answer (see _count)
        self._child_compiled = compilestats.totals()
        #: what the child said last before it died (see _quiet), for the crash's message
        self.last_output = ""

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
            if not self._answered():
                self._stop()
                raise hung(f"{who} did not answer within {self.timeout:g} s "
                           "(--isolate-timeout); the child process was killed")
            status, payload, compiled = self._conn.recv()
        except (EOFError, OSError):
            raise crashed(f"{who} crashed the process ({self._reap()}){self.last_output}"
                          ) from None
        self._count(compiled)
        if status == "ok":
            return payload
        if status == "ort":
            raise payload
        name, text, refused, _ = payload
        if status == "declined":
            raise Declined(text)
        if status == "conversion":  # the converter failed there, or (run) the rewritten graph's
            cause = RefusedElsewhere(f"{name}: {text}") if refused else RemoteError(name, text)
            raise ConversionFailed(cause, f"{name}: {text}")
        raise RemoteError.named(name, text)

    def _count(self, compiled: dict) -> None:
        """Add what the child compiled since its last answer to this process's totals."""
        functions = compiled["numba_functions"] - self._child_compiled["numba_functions"]
        seconds = compiled["numba_seconds"] - self._child_compiled["numba_seconds"]
        compilestats.add_numba(functions, seconds)
        self._child_compiled = compiled

    def _answered(self) -> bool:
        """Whether the child answered within the timeout. The wait is cut into slices so that
        a Ctrl-C stops it (and the child) even when its first KeyboardInterrupt was swallowed
        elsewhere: a child compiling a row's batch may otherwise keep the run for minutes."""
        deadline = time.monotonic() + self.timeout
        try:
            while (left := deadline - time.monotonic()) > 0:
                if self._conn.poll(min(left, POLL_SLICE)):
                    return True
                interrupt.check()
        except KeyboardInterrupt:
            self._stop()
            raise
        return False

    def _start(self) -> None:
        """A new child, once it has loaded the converter; raises HarnessFailed if it cannot
        (then no backend could run, and comparing their errors would make every test pass)."""
        parent, child = self._ctx.Pipe()
        self._tmpdir = tempfile.mkdtemp(prefix="conformance-child-")
        settings = {**self.settings, "preload": tuple(self.PRELOAD), "tmpdir": self._tmpdir}
        self._proc = self._ctx.Process(target=_serve, daemon=True,
                                       args=(child, self.converter_spec, settings))
        self._proc.start()
        child.close()
        self._conn = parent
        try:
            ready = parent.poll(START_TIMEOUT)
            if ready:
                self._child_compiled = parent.recv()[2]
        except (EOFError, OSError):
            raise HarnessFailed(f"--isolate: the child process died while starting and loading "
                                f"{self.converter_spec} ({self._reap()}){self.last_output}"
                                ) from None
        if not ready:
            self._stop()
            raise HarnessFailed(f"--isolate: the child process did not start and load "
                                f"{self.converter_spec} within {START_TIMEOUT:g} s")

    def _reap(self) -> str:
        """Why the child died (its exit status and its last output), once it is gone."""
        code = None
        if self._proc is not None:
            self._proc.join(5)
            code = self._proc.exitcode
        said = _tail(Path(self._tmpdir) / OUTPUT) if self._tmpdir else ""
        self._stop()
        self.last_output = f"; its last output: {said}" if said else ""
        return _describe_exit(code)

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(5)
        if self._conn is not None:
            self._conn.close()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        self._proc = self._conn = self._tmpdir = None

    def close(self) -> None:
        self._stop()


class Sandbox(Isolated):
    """A child process for the backends that declare ``runs_apart``; see the module's doc."""

    _trimmed_in_row = False

    def judge(self, backend: str, spec: Spec, case: Case, values) -> list[np.ndarray]:
        """``backend``'s outputs for ``case`` (on ``values``), as the parent's harness would
        compute them, computed in the child."""
        request = ("judge", spec.opset, recipe(spec, case), backend, list(values), spec.dtype)
        try:
            return self._ask(request, backend, BackendCrashed, BackendHung)
        finally:
            # a row that compiles many large functions is not allowed to grow without bound
            # either; the next request starts a child that reads them back from the disk cache
            # (once a row: a row whose batch alone is that large would compile it again and again)
            if (not self._trimmed_in_row and self._proc is not None
                    and _resident_bytes(self._proc.pid) > SANDBOX_MEMORY_LIMIT):
                self._trimmed_in_row = True
                self._stop()

    def restart(self) -> None:
        """A fresh child for the next request (after a case that may have corrupted memory)."""
        self._stop()

    def new_row(self) -> None:
        """Called as a row starts: a child grown beyond :data:`SANDBOX_MEMORY` is replaced.
        LLVM keeps every function Numba compiled for as long as the process lives, and a
        worker's child would otherwise grow by gigabytes over a run."""
        self._trimmed_in_row = False
        if self._proc is not None and _resident_bytes(self._proc.pid) > SANDBOX_MEMORY:
            self._stop()


#: resident bytes beyond which the sandbox's child is replaced between rows
SANDBOX_MEMORY = 900 * 2**20
#: ... and after any request, within a row (with the worker's ~0.4 GB: under 1.5 GB)
SANDBOX_MEMORY_LIMIT = 1050 * 2**20


#: what the fork server imports once, so that a replaced child starts in milliseconds instead
#: of importing PyTensor, ONNX and Numba again (a sandbox is replaced after every case that
#: wrote out of bounds); a module that fails to import is left to the child
FORKSERVER_PRELOAD = ("conformance.session.isolate", "converter", "pytensor.link.numba.dispatch")


def _context():
    """Children fork from a server that has imported :data:`FORKSERVER_PRELOAD` (no threads,
    no compiled state: safe to fork); where there is no fork server (Windows), they spawn."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(FORKSERVER_PRELOAD))
    return ctx


#: the file in the child's folder that takes its stdout and stderr
OUTPUT = "output.log"


def _quiet(path: Path) -> None:
    """Send the child's stdout and stderr (file descriptors, so C++ and compiler output too)
    to ``path``: ONNX Runtime's error log of a run that raises as expected, PyTensor's warnings
    at import and compile notices would otherwise land on the terminal between the progress
    dots, outside pytest's capture. A crash's last lines are read back from there."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        for target in (1, 2):
            os.dup2(fd, target)
        os.close(fd)


def _tail(path: Path, limit: int = 1500) -> str:
    """The end of the child's output (its last ``limit`` characters, one line)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


def _resident_bytes(pid: int) -> int:
    """The resident memory of process ``pid`` (0 where /proc cannot tell: never replaced)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _describe_exit(code) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
