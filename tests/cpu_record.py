"""A pytest plugin (``-p cpu_record``) for self-tests: ``add`` gets a record of a bug that shows
only on some CPUs (made up: its example passes everywhere), so the run must warn that it does
not show on this CPU and stay green."""

import dataclasses

import conformance.registries as registries
from conformance.registry import Blame
from conformance.strategies import fixed

_rows = registries.all_rows


def _with_cpu_record():
    rows = list(_rows())
    for i, row in enumerate(rows):
        if row.name == "add":
            rows[i] = dataclasses.replace(row).xfail(
                backends=("onnxruntime",), dtypes=("float32",), blame=Blame.ONNXRUNTIME,
                reason="Add drops the low bit on AVX-512 FP16 kernels (made up for a test)",
                example=fixed([1.0], [2.0]), cpu="CPUs with AVX-512 FP16 (made up)")
    return tuple(rows)


registries.all_rows = _with_cpu_record
