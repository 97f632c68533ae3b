"""Any subset of ``--backends`` is green: each backend alone beside the reference.

A record names every backend that shows it. Were it to lean on which other backends run (a
blame read off who agrees, a record judged only through its neighbour), a run of one backend
would fail or XPASS where the full run is green. Each backend runs here alone with the
reference, on the ``ci`` profile, over a cross-section of rows whose records name many
backends between them: 0-d and empty softmax, Numba's bool max, the C and Numba pads of empty
axes, narrow-unsigned cumsum, C psi and a float16 exp computed in float32."""

from __future__ import annotations

import importlib.util
import json

import pytest
from test_end_to_end import TESTS, conformance

from conformance.backends import BACKENDS, OPTIONAL_BACKENDS, REFERENCE

CROSS_SECTION = ("softmax[float64]", "log_softmax[float32]", "softmax_grad[float64]",
                 "max[bool]", "pad_reflect[int8]", "cumsum[uint8]", "psi[float64]",
                 "exp[float16]")
ALONE = [b for b in BACKENDS if b != REFERENCE.name
         and (b not in OPTIONAL_BACKENDS or importlib.util.find_spec(OPTIONAL_BACKENDS[b]))]


@pytest.mark.parametrize("backend", ALONE)
def test_each_backend_alone_beside_the_reference_is_green(backend, tmp_path):
    run = conformance(*(f"{TESTS}::test_op[{t}]" for t in CROSS_SECTION), "--opsets", "default",
                      "-n", "0", "--backends", f"{REFERENCE.name},{backend}", "--strict-records",
                      tmp_path=tmp_path)
    assert run.returncode == 0, f"{backend} alone beside {REFERENCE.name}:\n{run.stdout[-3000:]}"
    ran = {t["test"] for t in json.loads((tmp_path / "results.json").read_text())["tests"]}
    assert ran == set(CROSS_SECTION), run.stdout[-500:]
