"""A pytest plugin (``-p unshared_fault``) for self-tests: round_half_away_from_zero's record
of the Python reference's floor(x + 0.5) claims that ONNX Runtime shares the fault (made up:
ONNX Runtime rounds 0.49999999999999994 to 0, as every backend but the reference and Numba
does), so the run must fail with a strict XPASS saying that it no longer agrees."""

import dataclasses

import conformance.registries as registries

_rows = registries.all_rows


def _claiming_onnxruntime_shares_it():
    rows = list(_rows())
    for i, row in enumerate(rows):
        if row.name == "round_half_away_from_zero":
            known = tuple(
                dataclasses.replace(k, shared_by=("onnxruntime",), backends=tuple(
                    b for b in k.backends if b != "onnxruntime")) if k.shared_by else k
                for k in row.known)
            rows[i] = dataclasses.replace(row, known=known)
    return tuple(rows)


registries.all_rows = _claiming_onnxruntime_shares_it
