"""Nothing under test takes the run down: with --isolate a converter that segfaults, exits or
hangs is a recorded, shrunk and bundled failure of the tests it touches, at -n 0 and -n 2;
without it, a worker the converter crashes still counts in results and report.

The converters (tests/misbehaving_converter.py) misbehave only on graphs holding a Neg, so
``neg`` tests are affected and ``exp`` tests are not.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST = "conformance/test_conformance.py::test_op"
AFFECTED = ("neg[float64]",)
UNAFFECTED = ("exp[float64]",)


def conformance(tmp_path: Path, converter: str, tests, *args):
    """The conformance run of ``tests`` (row[dtype] ids) judging ``converter``."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'tests'}{os.pathsep}{ROOT}",
               CONFORMANCE_PROFILE="ci")
    # few examples: every layout the converter is tried on costs a new child (and a hang the
    # whole timeout); a failure is still shrunk
    cmd = [sys.executable, "-m", "pytest", "--opsets", "default", "-p", "no:cacheprovider",
           "--examples", "6", "--backends", "onnxruntime,onnx-reference",
           "--report-dir", str(tmp_path), "--converter", converter,
           *(f"{TEST}[{t}]" for t in tests), *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def pytest_counts(stdout: str) -> Counter:
    """pytest's closing summary line as counts by outcome."""
    last = [line for line in stdout.splitlines() if re.search(r" in [\d.]+s", line)][-1]
    found = re.findall(r"(\d+) (failed|passed|skipped|xfailed|xpassed|errors?)", last)
    return Counter({("error" if word.startswith("error") else word): int(n)
                    for n, word in found})


def report_counts(folder: Path) -> tuple[Counter, Counter]:
    """Counts by outcome in results.json and on the HTML report's summary cards."""
    doc = json.loads((folder / "results.json").read_text())
    results = Counter(t["outcome"] for t in doc["tests"])
    html = (folder / "conformance.html").read_text()
    cards = Counter({s: int(n) for s, n in re.findall(
        r'data-outcome="([a-z]+)"[^>]*><b>(\d+)</b>', html)})
    return results, cards


def check_complete_run(proc, folder: Path, *, failed: dict[str, str], passed=()) -> dict:
    """The run ended normally, its report exists, the ``failed`` tests failed with the
    given cause in their message, ``passed`` passed, and the totals agree with pytest's."""
    __tracebackhide__ = True
    output = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 1, f"rc={proc.returncode}, but should be 1 (tests failed)\n{output}"
    assert (folder / "results.json").is_file() and (folder / "conformance.html").is_file(), output
    doc = json.loads((folder / "results.json").read_text())
    tests = {t["test"]: t for t in doc["tests"]}
    for tid, cause in failed.items():
        assert tests[tid]["outcome"] == "failed", (tid, tests[tid]["outcome"], output)
        message = tests[tid]["failure"]["message"]
        assert re.search(cause, message), f"{tid}: {cause!r} not in {message!r}"
    for tid in passed:
        assert tests[tid]["outcome"] == "passed", (tid, tests[tid].get("failure"), output)
    results, cards = report_counts(folder)
    expected = pytest_counts(proc.stdout)
    assert results == expected, f"results.json counts {dict(results)}, but pytest {dict(expected)}"
    assert cards == expected, f"the report shows {dict(cards)}, but pytest {dict(expected)}"
    return tests


CAUSES = {
    "segfaults": r"the converter crashed the process \(killed by SIGSEGV\)",
    "exits": r"the converter crashed the process \(exit code 1\)",
    "hangs": r"the converter did not answer within 5 s",
}


# every misbehaviour in one process; under xdist once (the child's answer reaches the
# controller the same way whatever went wrong, and a hang costs the whole timeout per shrink)
@pytest.mark.parametrize(("converter", "workers"), [
    *((cause, "0") for cause in CAUSES), ("segfaults", "2")])
def test_with_isolate_a_misbehaving_converter_is_a_recorded_failure(tmp_path, converter,
                                                                   workers):
    proc = conformance(tmp_path, f"misbehaving_converter:{converter}", AFFECTED + UNAFFECTED,
                       "-n", workers, "--isolate", "--isolate-timeout", "5")
    tests = check_complete_run(proc, tmp_path, failed=dict.fromkeys(AFFECTED, CAUSES[converter]),
                               passed=UNAFFECTED)
    for tid in AFFECTED:
        failure = tests[tid]["failure"]
        assert failure["blame"] == "converter", failure
        # shrunk to the smallest input, an empty or 0-d array
        assert all(math.prod(s) <= 1 for s in failure["input_shapes"]), failure
        bundle = Path(failure["bundle"])
        assert (bundle / "inputs.npz").is_file() and (bundle / "meta.json").is_file()
        assert not (bundle / "model.onnx").exists()  # nothing converted
    # the coverage bookkeeping came from the child: the unaffected test's ONNX operators
    assert "Exp" in tests[UNAFFECTED[0]]["onnx_ops"]


def test_a_childs_output_goes_to_its_crash_message_not_the_terminal(tmp_path):
    proc = conformance(tmp_path, "misbehaving_converter:noisy", AFFECTED, "-n", "0",
                       "--isolate")
    check_complete_run(proc, tmp_path, failed=dict.fromkeys(
        AFFECTED, r"\(killed by SIGSEGV\); its last output: NOISE-FROM-THE-CHILD"))
    # in the failure's message on the terminal, never as a line of its own
    assert not re.search(r"^NOISE-FROM-THE-CHILD", proc.stdout + proc.stderr, re.M)


def test_without_isolate_a_converter_crashing_a_worker_counts_in_results_and_report(tmp_path):
    # two affected tests of one row: the second goes to a replacement worker, which must not
    # wait forever for work
    affected = ("neg[float64]", "neg[int32]")
    proc = conformance(tmp_path, "misbehaving_converter:segfaults", affected + UNAFFECTED,
                       "-n", "2")
    check_complete_run(proc, tmp_path, passed=UNAFFECTED, failed=dict.fromkeys(
        affected, r"the worker process crashed while running neg\[(float64|int32)\]"))
    assert "worker process crashed" in (tmp_path / "conformance.html").read_text()


def test_with_isolate_a_child_that_cannot_start_is_an_error_not_a_pass(tmp_path):
    # every backend, the reference included, would raise alike, and agree
    proc = conformance(tmp_path, "unloadable_converter:to_onnx", UNAFFECTED, "-n", "0",
                       "--isolate")
    assert proc.returncode == 1, proc.stdout[-3000:]
    [test] = json.loads((tmp_path / "results.json").read_text())["tests"]
    assert test["outcome"] == "error", test
    assert "child process died while starting" in test["failure"]["message"]
    assert "(exit code 3)" in test["failure"]["message"]


def test_a_ctrl_c_stops_the_wait_for_a_busy_child(monkeypatch):
    """A Ctrl-C whose KeyboardInterrupt was swallowed elsewhere (it is only remembered) still
    ends the wait for a child that does not answer, and the child is stopped: without that, a
    child compiling a row's batch kept an interrupted run going for minutes."""
    import numpy as np

    from conformance.core.harness import Spec, recipe
    from conformance.registries import row_named
    from conformance.registry import Case
    from conformance.session import interrupt
    from conformance.session.isolate import Isolated

    spec = Spec(row_named("neg"), "float32", 18, ("onnxruntime",))
    case = Case((np.array([1.0], "float32"),), ((None,),))
    child = Isolated("misbehaving_converter:hangs", timeout=60)  # converting a Neg sleeps
    monkeypatch.setattr(interrupt, "_pending", True)
    try:
        with pytest.raises(KeyboardInterrupt):
            child.convert(recipe(spec, case), opset=18)
        assert child._proc is None  # stopped, not left converting
    finally:
        child.close()
