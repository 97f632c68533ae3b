"""Version-aware records: a record says for which releases it holds; a record that no longer
shows on a release newer than the registry was checked against is "fixed upstream?", a
warning, unless --strict-records."""

from __future__ import annotations

import json

import pytest
from packaging.version import Version
from test_end_to_end import TESTS, conformance

from conformance import versions
from conformance.registries import row_named
from conformance.registry import Blame, Known
from conformance.strategies import fixed

ORT = versions.installed("onnxruntime")


def known(**kwargs) -> Known:
    base = {"backends": ("onnxruntime",), "reason": "r", "blame": Blame.ONNXRUNTIME,
            "example": fixed(1)}
    return Known(**{**base, **kwargs})


@pytest.mark.parametrize(("text", "says"), [
    ("onnxruntime", "no version specifier"), ("onnxruntime<<1", "not a PEP 440 requirement"),
    ("torch<2", "names 'torch'")])
def test_a_bad_versions_bound_is_refused_with_what_is_allowed(text, says):
    with pytest.raises(ValueError, match=says):
        known(versions=text)


def test_a_bound_switches_a_record_on_or_off_for_the_installed_release():
    assert known().active and known().package == "onnxruntime"
    assert known(versions=f"onnxruntime>={ORT}").active
    assert not known(versions=f"onnxruntime<{ORT}").active
    assert known(blame=Blame.PYTENSOR, versions="onnx>=1").package == "onnx"
    assert known(blame=Blame.CONVERTER).package is None


def test_only_a_release_newer_than_the_checked_one_counts_as_unchecked(monkeypatch):
    monkeypatch.setitem(versions.CHECKED, "onnxruntime", str(ORT))
    assert versions.beyond_checked("onnxruntime") is None
    monkeypatch.setitem(versions.CHECKED, "onnxruntime", "1.0")
    assert versions.beyond_checked("onnxruntime") == f"onnxruntime {ORT}"
    assert versions.beyond_checked(None) is None


def test_the_int64_records_fixed_in_onnxruntime_1_32_carry_that_bound():
    for name, dtype in (("sign", "int64"), ("maximum", "int64"), ("minimum", "int64"),
                        ("matmul", "float32")):
        (record,) = [k for k in row_named(name).known_for(dtype) if k.versions]
        assert record.versions == "onnxruntime<1.32"
        assert record.active == (Version("1.32") > ORT)


@pytest.mark.skipif(ORT.release < (1, 32), reason="the int64 Sign record holds before 1.32")
def test_a_record_gone_in_an_unchecked_release_warns_and_strict_records_fail(tmp_path):
    select = [f"{TESTS}::test_op[sign[int64]]", "--opsets", "default", "-n", "0",
              "-p", "pretend_versions"]
    lenient = conformance(*select, tmp_path=tmp_path / "lenient")
    assert lenient.returncode == 0, lenient.stdout[-3000:]
    assert "fixed upstream?" in lenient.stdout
    (test,) = json.loads((tmp_path / "lenient" / "results.json").read_text())["tests"]
    assert test["outcome"] == "passed"
    assert test["fixed_upstream"][0]["installed"] == f"onnxruntime {ORT}"
    assert "Fixed upstream?" in (tmp_path / "lenient" / "conformance.html").read_text()

    strict = conformance(*select, "--strict-records", tmp_path=tmp_path / "strict")
    assert strict.returncode == 1
    assert f'versions="onnxruntime<{ORT}"' in strict.stdout


@pytest.mark.skipif(ORT.release < (1, 32), reason="the int64 Sign record holds before 1.32")
def test_an_inactive_record_still_runs_its_example_and_is_listed(tmp_path):
    run = conformance(f"{TESTS}::test_op[sign[int64]]", "--opsets", "default", "-n", "0",
                      tmp_path=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:]
    (test,) = json.loads((tmp_path / "results.json").read_text())["tests"]
    assert test["known"] == [] and test["known_inactive"][0]["versions"] == "onnxruntime<1.32"
    assert test["examples"] >= 2  # the record's example ran with the drawn ones
    assert "Not expected on the installed releases" in (tmp_path / "conformance.html").read_text()


def test_a_cpu_dependent_record_that_does_not_show_here_warns_and_stays_green(tmp_path):
    run = conformance(f"{TESTS}::test_op[add[float32]]", "--opsets", "default", "-n", "0",
                      "-p", "cpu_record", "--strict-records", tmp_path=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "does not show on this CPU" in run.stdout, run.stdout[-3000:]
    assert "AVX-512 FP16 (made up)" in run.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    (test,) = doc["tests"]
    assert test["outcome"] == "passed"
    (record,) = test["not_on_this_cpu"]
    assert record["cpu"] == "CPUs with AVX-512 FP16 (made up)"
    assert record["installed"] and doc["run"]["cpu"]["model"]
    assert "Not on this CPU" in (tmp_path / "conformance.html").read_text()


def test_a_backend_that_stops_sharing_the_references_fault_fails_the_run(tmp_path):
    run = conformance(f"{TESTS}::test_op[round_half_away_from_zero[float64]]", "--opsets",
                      "default", "-n", "0", "--backends", "pytensor-py,onnxruntime",
                      "-p", "unshared_fault", tmp_path=tmp_path)
    assert run.returncode == 1, run.stdout[-3000:]
    assert ("XPASS(strict) round_half_away_from_zero[float64]: onnxruntime no longer agrees "
            "with pytensor-py where it is wrong") in run.stdout, run.stdout[-3000:]
