"""PyTensor settings of conformance processes, made before PyTensor is imported (its compile
directory and default linker cannot change afterwards).

- **One compile directory per xdist worker.** PyTensor holds one file lock per compile directory
  for every compilation, so workers sharing one compile one module at a time. The controller
  resolves the user's compile directory and hands it down in ``CONFORMANCE_COMPILEDIR``; each
  worker uses ``<that directory>/xdist-<worker id>``. The scheduler
  (conformance.session.schedule) sends a row to the same worker run after run, so the next run
  finds the row's modules.
- **cvm as PyTensor's default linker**, unless the user chose one. The backends pick their
  linker for the graph under test, but an OpFromGraph (einsum, pad, softmax, alloc_diag, …)
  compiles its inner graph in PyTensor's default mode, which is numba from PyTensor 3 on: slow
  to compile, LLVM memory that is never released, and not one of the backends judged here. With
  cvm, inner graphs run PyTensor's C code on 2.38 and 3.x alike.
- **No creation stack on graph variables** (``traceback__limit=0``), unless the user set one.
  PyTensor walks the Python stack for every variable it creates, to name the user's line in an
  error; a run builds about half a million of them, and the harness names each case itself.
"""

from __future__ import annotations

import os
import sys
import warnings

ENV = "CONFORMANCE_COMPILEDIR"


def hand_down() -> None:
    """In the controller: tell the workers where the user's compile directory is."""
    import pytensor

    os.environ.setdefault(ENV, str(pytensor.config.compiledir))


def _add_flag(flag: str) -> None:
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    os.environ["PYTENSOR_FLAGS"] = f"{flags},{flag}" if flags else flag


def configure() -> str | None:
    """In any conformance process, before PyTensor is imported: the default linker and, in an
    xdist worker, a compile directory of its own (returned, else None)."""
    if "pytensor" in sys.modules:
        warnings.warn("PyTensor was imported before the conformance plugin: its default linker "
                      "and compile directory stay as they are (workers then share one compile "
                      "directory and compile one module at a time)", stacklevel=2)
        return None
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    if "linker=" not in flags:
        _add_flag("linker=cvm")
    if "traceback__limit=" not in flags:
        _add_flag("traceback__limit=0")
    worker, base = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get(ENV)
    if not worker or not base:
        return None
    path = os.path.join(base, f"xdist-{worker}")
    _add_flag(f"compiledir={path}")
    return path
