"""``conformance bisect``: the binary search over releases (with a fake judge, no network),
naming records, and one slow real run (``CONFORMANCE_BISECT_SLOW=1``)."""

from __future__ import annotations

import json
import os
import time

import pytest

from conformance.registries import all_rows
from conformance.upstream import bisect
from conformance.upstream.bisect import BUG, FIXED, BisectError, search

RELEASES = [f"1.{minor}.0" for minor in range(20, 33)]


def judge_of(statuses: dict, calls: list):
    def judge(version):
        calls.append(version)
        return statuses[version]
    return judge


def test_finds_the_first_fixed_release_in_few_steps():
    statuses = {v: BUG if v < "1.27.0" else FIXED for v in RELEASES}
    calls: list = []
    result = search(RELEASES, judge_of(statuses, calls), "onnxruntime")
    assert result.fixed == "1.27.0" and result.since is None
    assert result.first_shown == "1.20.0"
    assert result.suggestion == "onnxruntime<1.27.0"
    assert len(calls) <= 2 + 4  # both ends, then log2(13) steps


def test_finds_the_release_that_introduced_it():
    statuses = {v: FIXED if v < "1.25.0" else BUG for v in RELEASES}
    result = search(RELEASES, judge_of(statuses, []), "onnxruntime")
    assert result.since == "1.25.0" and result.fixed is None
    assert result.first_shown == "1.25.0" and result.suggestion == "onnxruntime>=1.25.0"


def test_releases_that_cannot_be_judged_are_skipped():
    statuses = {v: BUG if v < "1.27.0" else FIXED for v in RELEASES}
    for broken in ("1.20.0", "1.26.0", "1.27.0", "1.32.0"):
        statuses[broken] = "not installed: no wheel"
    result = search(RELEASES, judge_of(statuses, []), "onnxruntime")
    assert result.fixed == "1.28.0"  # 1.27.0 could not be judged: the next release is named
    assert result.first_shown == "1.21.0"
    assert result.tested["1.20.0"].startswith("not installed")


def test_no_change_in_the_tested_range():
    result = search(RELEASES, lambda v: BUG, "onnxruntime")
    assert result.fixed is None and result.since is None and result.first_shown == "1.20.0"
    assert len(result.tested) == 2
    result = search(RELEASES, lambda v: FIXED, "onnxruntime")
    assert result.first_shown is None and result.suggestion is None


def test_nothing_judgeable():
    result = search(RELEASES[:3], lambda v: "cannot judge", "pytensor")
    assert result.fixed is None and result.first_shown is None and len(result.tested) == 3


def test_judge_reports_an_install_failure(tmp_path):
    def refuse(package, version, log):
        raise BisectError(f"cannot install {package}=={version}: no matching distribution")

    verdict = bisect.judge_with(tmp_path / "repro.py", "onnxruntime", lambda _: None,
                                install=refuse)("1.0.0")
    assert verdict.startswith("not installed: cannot install onnxruntime==1.0.0")


def _fake_rows():
    from conformance.registry import Blame, Row

    def example(dtype):
        return None

    row = (Row("fake", abs, lambda dtype: None, ("int64", "float32"))
           .xfail(backends=("onnxruntime",), reason="a", blame=Blame.ONNXRUNTIME,
                  dtypes=("int64",), example=example)
           .xfail(backends=("pytensor-c",), reason="b", blame=Blame.PYTENSOR, example=example)
           .xfail(backends=("onnxruntime",), reason="c", blame=Blame.CONVERTER,
                  example=example))
    return [row]


@pytest.mark.parametrize("name, expected", [
    ("fake[float32]", "fake[float32]:1"), ("fake:0", "fake[int64]:0"),
    ("fake[int64]", None), ("fake[int64]:1", "fake[int64]:1"),
])
def test_records_are_named_by_row_dtype_or_index(name, expected):
    if expected is None:
        with pytest.raises(BisectError, match="pick one of"):
            bisect.resolve(name, _fake_rows(), 18)
    else:
        assert bisect.resolve(name, _fake_rows(), 18).name == expected


def test_the_sign_record_is_found_in_the_registry():
    assert bisect.resolve("sign[int64]", all_rows(), 18).name == "sign[int64]:0"


@pytest.mark.parametrize("name", ["fake", "nosuchrow[int64]", "fake:7", "fake:2",
                                  "fake[uint8]", "fake[float32]:0"])
def test_bad_record_names_say_what_is_expected(name):
    with pytest.raises(BisectError):
        bisect.resolve(name, _fake_rows(), 18)


@pytest.mark.skipif(not os.environ.get("CONFORMANCE_BISECT_SLOW"),
                    reason="installs onnxruntime releases from PyPI; set "
                           "CONFORMANCE_BISECT_SLOW=1 to run")
def test_bisects_the_int64_sign_record_over_onnxruntime_releases(tmp_path, capsys):
    from conformance.cli import main

    started = time.monotonic()
    status = main(["bisect", "sign[int64]", "--min", "1.29", "--max", "1.32.0",
                   "-o", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0, out
    result = json.loads(next(tmp_path.rglob("bisect.json")).read_text(encoding="utf-8"))
    assert result["fixed"] == "onnxruntime 1.32.0"
    assert result["first_shown"] == "1.29.0"
    assert 'versions="onnxruntime<1.32.0"' in out
    print(f"bisect took {time.monotonic() - started:.0f}s")


def test_package_picks_the_one_record_that_package_is_at_fault_for():
    rows = all_rows()
    with pytest.raises(BisectError, match="2 upstream records concern int64"):
        bisect.resolve("maximum[int64]", rows, 18)
    cell = bisect.resolve("maximum[int64]", rows, 18, "onnxruntime")
    assert cell.known.blame == "onnxruntime" and cell.dtype == "int64"
    assert bisect.resolve("maximum[int64]", rows, 18, "pytensor").known.blame == "pytensor"
    with pytest.raises(BisectError, match="0 upstream records that onnx is at fault"):
        bisect.resolve("maximum[int64]", rows, 18, "onnx")
