"""The CPU a run ran on, as data: its model and the SIMD features that choose ONNX Runtime's and
numpy's kernels. A record of a bug that shows only on some CPUs says so (``Known.cpu``); where
its example does not show here, the run warns instead of failing (conformance.session.runner)."""

from __future__ import annotations

import functools
import platform

#: the instruction-set features whose presence changes which kernels run
FEATURES = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
            "avx512_fp16", "amx_tile", "asimd", "sve", "sve2")


@functools.cache
def cpu() -> dict:
    """``{"model": ..., "features": [...]}`` for this machine (Linux's /proc/cpuinfo, else
    what the platform module says)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Model", "CPU part") and model in ("", platform.machine(),
                                                                             platform.processor()):
                    model = value.strip()
                elif key in ("flags", "Features"):
                    flags.update(value.split())
    except OSError:
        pass
    return {"model": model or "unknown", "machine": platform.machine(),
            "features": [f for f in FEATURES if f in flags]}


def describe() -> str:
    info = cpu()
    features = ", ".join(info["features"]) or "none of " + ", ".join(FEATURES[:6])
    return f"{info['model']} ({info['machine']}; {features})"
