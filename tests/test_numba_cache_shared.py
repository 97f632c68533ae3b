"""Workers compile C into directories of their own (PyTensor locks its compile directory for
each compile), but Numba's disk cache stays shared: a row that moves to the other worker, or a
function both workers compile, is compiled once. PyTensor keeps that cache under
``base_compiledir``, which the per-worker ``compiledir`` flag leaves alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
from conformance.compile import pytensor_env
worker_dir = pytensor_env.configure()
import pytensor
from pytensor.link.numba.cache import NUMBA_CACHE_PATH
print(json.dumps({"worker_dir": worker_dir, "compiledir": str(pytensor.config.compiledir),
                  "numba": str(NUMBA_CACHE_PATH)}))
"""


def test_each_worker_compiles_c_apart_and_shares_numbas_cache(tmp_path):
    base = tmp_path / "compile"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_XDIST_WORKER": "gw1",
           "PYTENSOR_FLAGS": f"base_compiledir={base}",
           "CONFORMANCE_COMPILEDIR": str(base / "user")}
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["compiledir"] == found["worker_dir"] == str(base / "user" / "xdist-gw1"), found
    assert found["numba"] == str(base / "numba"), found
