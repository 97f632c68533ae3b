"""A function PyTensor's NUMBA mode serves from Numba's disk cache must compute what the same
function compiled in the process computes: otherwise a record's example shows in a warm run and
not in a cold one (the ``numba-fastmath-*`` records carry ``cpu=`` for that reason).

Measured on PyTensor 3.3.8 with numba 0.68 on an AVX-512 host: x * y * z with y and z constant
along the first axis is folded left to right when compiled (0 * 1.5 * max = 0), and reordered
by fast-math's ``reassoc`` when loaded from the cache (0 * (1.5 * max) = nan). PyTensor 3.0.7
with numba 0.65 computes 0 both ways."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conformance import versions
from conformance.session import hardware

SCRIPT = """
import numpy as np, pytensor, pytensor.tensor as pt
x = pt.tensor("x", dtype="float32", shape=(None, None))
y, z = (pt.tensor(n, dtype="float32", shape=(1, None)) for n in "yz")
f = pytensor.function([x, y, z], pt.mul(x, y, z), mode="NUMBA")
top = np.finfo("float32").max
print(repr(float(f(*(np.array([[v]], "float32") for v in (0.0, 1.5, top)))[0, 0])))
"""

MEASURED_HERE = "avx512f" in hardware.cpu()["features"]


@pytest.mark.xfail(versions.holds("pytensor>=3.3"), strict=MEASURED_HERE,
                   reason="pytensor: a fast-math function loaded from Numba's disk cache "
                          "reassociates a product the in-process compile folds in order")
def test_a_cached_numba_function_computes_what_its_first_compile_computed(tmp_path):
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path}"}
    first, cached = (subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                                    text=True, timeout=300) for _ in range(2))
    for proc in (first, cached):
        assert proc.returncode == 0, proc.stderr[-2000:]
    compiled, loaded = (p.stdout.strip().splitlines()[-1] for p in (first, cached))
    assert compiled == loaded, (f"compiled in the process: {compiled}; loaded from Numba's "
                                f"cache: {loaded} (x * y * z of 0, 1.5, float32 max)")
