"""How many C modules this process compiled, and in how many seconds.

Wraps PyTensor's ``GCC_compiler.compile_str`` (the one call that runs g++ for a module) with a
counter; it changes nothing else. The totals go into each process's results as a ``compile``
record, and the run summary and report add them up.
"""

from __future__ import annotations

import time

_totals = {"modules": 0, "seconds": 0.0}


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


def totals() -> dict:
    return {"modules": _totals["modules"], "seconds": round(_totals["seconds"], 2)}


#: seconds this process spent computing each backend's outputs (building, compiling and
#: running the graph, in the sandbox's child or here), "reference" included
_backend_seconds: dict[str, float] = {}


def add_backend_time(backend: str, seconds: float) -> None:
    _backend_seconds[backend] = _backend_seconds.get(backend, 0.0) + seconds


def backend_seconds() -> dict[str, float]:
    return dict(_backend_seconds)
