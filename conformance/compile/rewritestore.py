"""Rewritten graphs kept on disk between runs.

``pytensor-c-opt`` and ``onnxruntime-rewritten`` judge each row's canonical graphs as
PyTensor's default rewrites leave them (conformance.backends.cbatch). Rewriting
costs a tenth of a second to a third per graph, and an OpFromGraph's inner graph more (half a
second for a reflect pad's Scan): about a tenth of a warm run, for graphs that come out the same
every run. :class:`RewriteStore` keeps each one pickled under a name that changes with
whatever the graph depends on: the harness's code (which builds the rows' graphs), the
releases of the libraries, and PyTensor's flags. Reading one back is 20 to 40 times faster
than rewriting it.

A graph that does not pickle (an op holding a local function) is rewritten every time; a
missing, cut-short or unreadable file is rewritten and written again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import shutil
import time
import zlib
from collections.abc import Callable, Hashable
from pathlib import Path

from conformance.strategies.canonical import fingerprint

#: A folder of another fingerprint is removed once nothing has used it for this long (another
#: checkout or tox env with other releases may share the cache and still use its own).
STALE_AFTER = 3 * 24 * 3600
#: The PyTensor flags a rewrite may depend on (the rest name folders or tune the linker).
_FLAGS = ("floatX", "blas__ldflags", "cxx", "mode", "linker", "optimizer",
          "optimizer_excluding", "optimizer_including", "optimizer_requiring", "cast_policy")


@functools.cache
def _fingerprint() -> str:
    import pytensor

    flags = {name: str(getattr(pytensor.config, name, None)) for name in _FLAGS}
    return hashlib.sha256(fingerprint() + repr(sorted(flags.items())).encode()).hexdigest()[:16]


class RewriteStore:
    """Graphs derived from a row's graph (``key`` names the row, the layout and what was
    derived), each built once and then read from ``folder`` (pytest's cache); without a
    folder, built every time."""

    def __init__(self, folder: Path | None = None):
        self.base = folder  # what another process opens the same store with
        self.folder = None if folder is None else Path(folder) / _fingerprint()
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            os.utime(self.folder)
            _remove_stale(self.folder)

    def get(self, key: tuple[Hashable, ...], build: Callable[[], tuple[list, list]]):
        """The (inputs, outputs) stored under ``key``, else ``build()``'s, stored."""
        text = repr(key)
        if self.folder is None or "..." in text:  # numpy abbreviates long arrays' repr
            return build()
        path = self.folder / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}.pickle.z"
        with contextlib.suppress(OSError, EOFError, zlib.error, pickle.UnpicklingError,
                                 AttributeError, ImportError, TypeError, ValueError):
            return pickle.loads(zlib.decompress(path.read_bytes()))
        graph = build()
        # an op holding a local function does not pickle: its graph is rebuilt next time
        with contextlib.suppress(OSError, pickle.PicklingError, TypeError, AttributeError,
                                 RecursionError):
            data = zlib.compress(pickle.dumps(graph, protocol=pickle.HIGHEST_PROTOCOL), 1)
            partial = path.with_suffix(f".{os.getpid()}.tmp")  # workers may race to write
            partial.write_bytes(data)
            partial.replace(path)
        return graph


def _remove_stale(current: Path) -> None:
    now = time.time()
    for other in current.parent.iterdir():
        with contextlib.suppress(OSError):
            if other != current and other.is_dir() and now - other.stat().st_mtime > STALE_AFTER:
                shutil.rmtree(other, ignore_errors=True)
