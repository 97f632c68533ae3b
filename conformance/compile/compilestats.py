"""How many C modules and Numba functions this process compiled, and in how many seconds.

Wraps PyTensor's ``GCC_compiler.compile_str`` (the one call that runs g++ for a module) with a
counter, and listens to Numba's ``numba:compile`` event (sent only when a dispatcher compiles,
not when its disk cache serves it); it changes nothing else. The totals go into each process's
results as a ``compile`` record, and the run summary and report add them up, so a newcomer
sees why a first run is slower than the next.
"""

from __future__ import annotations

import time

_totals = {"modules": 0, "seconds": 0.0, "numba_functions": 0, "numba_seconds": 0.0}


def install() -> None:
    """Start counting (once per process)."""
    from pytensor.link.c.cmodule import GCC_compiler

    compile_str = GCC_compiler.compile_str
    if getattr(compile_str, "_counted", False):
        return

    def counted(*args, **kwargs):
        start = time.perf_counter()
        try:
            return compile_str(*args, **kwargs)
        finally:
            _totals["modules"] += 1
            _totals["seconds"] += time.perf_counter() - start

    counted._counted = True
    GCC_compiler.compile_str = staticmethod(counted)


#: the listener counting Numba's compiles, once installed (one per process)
_numba_listener = None


def install_numba() -> None:
    """Count Numba's compiles in this process (once; where Numba is installed). Only the
    outermost compile is timed: a function compiles the overloads it calls inside its own
    event, which would otherwise count twice."""
    global _numba_listener
    if _numba_listener is not None:
        return
    try:
        from numba.core import event
    except ImportError:
        return

    class Outermost(event.Listener):
        depth = 0
        started = 0.0

        def on_start(self, _event):
            if self.depth == 0:
                self.started = time.perf_counter()
            self.depth += 1

        def on_end(self, _event):
            self.depth -= 1
            if self.depth == 0:
                add_numba(1, time.perf_counter() - self.started)

    _numba_listener = Outermost()
    event.register("numba:compile", _numba_listener)


def add_numba(functions: int, seconds: float) -> None:
    """Numba compiles done elsewhere on this process's behalf (the sandbox's child)."""
    _totals["numba_functions"] += functions
    _totals["numba_seconds"] += seconds


def totals() -> dict:
    return {"modules": _totals["modules"], "seconds": round(_totals["seconds"], 2),
            "numba_functions": _totals["numba_functions"],
            "numba_seconds": round(_totals["numba_seconds"], 2)}


#: seconds this process spent computing each backend's outputs (building, compiling and
#: running the graph, in the sandbox's child or here), "reference" included
_backend_seconds: dict[str, float] = {}


def add_backend_time(backend: str, seconds: float) -> None:
    _backend_seconds[backend] = _backend_seconds.get(backend, 0.0) + seconds


def backend_seconds() -> dict[str, float]:
    return dict(_backend_seconds)
