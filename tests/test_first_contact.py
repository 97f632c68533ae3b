"""What a newcomer meets: rows stay on one worker with a compile directory of its own, pytest's
--lf works, an interrupted run says so, and the run states what it compiled."""

from __future__ import annotations

import json
import os
import runpy
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
from test_end_to_end import ROOT, TESTS, conformance

from conformance.registries import CATEGORIES, row_named
from conformance.session.schedule import row_scope


def results(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


def test_the_cold_start_benchmark_takes_a_row_of_every_category():
    rows = runpy.run_path(str(ROOT / "benchmarks" / "cold_start.py"))["ROWS"]
    assert sorted({row_named(r).category for r in rows}) == sorted(CATEGORIES)


def test_a_row_is_one_scheduling_unit():
    assert row_scope(f"{TESTS}::test_op[add[int8-opset18]]") == "row:add"
    assert row_scope(f"{TESTS}::test_op[add_variadic[int8]]") == "row:add_variadic"
    assert row_scope("tests/test_x.py::test_y") == "tests/test_x.py::test_y"


def test_rows_stay_on_their_worker_each_with_its_own_compile_directory(tmp_path):
    base = tmp_path / "compiled"
    env_flags = {"PYTENSOR_FLAGS": f"base_compiledir={base}"}
    select = [f"{TESTS}::test_op[{row}[{dtype}{opset}]]" for row in ("neg", "abs", "sqr", "sign")
              for dtype in ("int8", "float32") for opset in ("", "-opset18")]
    select += ["--opsets", "default,min", "-n", "2"]
    workers = []
    for run in ("first", "second"):
        proc = conformance(*select, tmp_path=tmp_path / run, env=env_flags)
        assert proc.returncode == 0, proc.stdout[-3000:]
        doc = results(tmp_path / run)
        by_row: dict[str, set] = {}
        for test in doc["tests"]:
            by_row.setdefault(test["op"], set()).add(test["worker"])
        assert all(len(w) == 1 for w in by_row.values()), by_row
        workers.append(by_row)
        assert doc["run"]["interrupted"] is False
        assert doc["run"]["tests_ran"] == doc["run"]["tests_planned"] == len(doc["tests"])
    dirs = {p.name for p in base.rglob("xdist-gw*")}
    assert dirs == {"xdist-gw0", "xdist-gw1"}
    first, second = (results(tmp_path / r)["run"] for r in ("first", "second"))
    # a worker that runs out of rows takes one over from its home worker: timing decides that
    moved = set(second.get("rows_moved", []))
    assert moved < set(workers[1]), moved
    stayed = {row: w for row, w in workers[1].items() if row not in moved}
    assert stayed == {row: workers[0][row] for row in stayed}  # a warm run finds its modules
    assert first["c_modules_compiled"] > 0
    if not moved:
        assert second["c_modules_compiled"] == 0, second


def test_last_failed_reruns_only_the_failures(tmp_path):
    select = [f"{TESTS}::test_op[exp[float64]]", f"{TESTS}::test_op[neg[float64]]",
              "--opsets", "default", "-n", "0", "-o", f"cache_dir={tmp_path / 'cache'}"]
    broken = "broken_converter:to_onnx"
    first = conformance(*select, tmp_path=tmp_path / "first", converter=broken)
    outcomes = {t["test"]: t["outcome"] for t in results(tmp_path / "first")["tests"]}
    assert outcomes == {"exp[float64]": "failed", "neg[float64]": "passed"}, first.stdout[-3000:]
    before = (tmp_path / "first" / "results.json").read_text()
    listed = conformance(*select, "--collect-only", tmp_path=tmp_path / "first")
    assert listed.returncode == 0 and "2 tests collected" in listed.stdout, listed.stdout[-2000:]
    # listing the tests leaves the last report alone
    assert (tmp_path / "first" / "results.json").read_text() == before
    assert len(list((tmp_path / "first" / ".runs").iterdir())) == 1
    again = conformance(*select, "--lf", tmp_path=tmp_path / "again", converter=broken)
    assert again.returncode == 1
    rerun = [t["test"] for t in results(tmp_path / "again")["tests"]]
    assert rerun == ["exp[float64]"], again.stdout[-1500:]
    assert "1 deselected" in again.stdout


def _sigint_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_interrupted_run_leaves_a_report_that_says_so(tmp_path):
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'tests'}{os.pathsep}{ROOT}",
               CONFORMANCE_PROFILE="ci")
    args = ["-p", "no:randomly", "-n", "0", "-q", "--report-dir", str(tmp_path), "-k",
            "float64", "--opsets", "default", TESTS]
    # SIGUSR1 makes the child write where each thread is to a file (pytest captures its fd 2)
    threads = tmp_path / "threads.txt"
    child = ("import faulthandler, signal, sys, pytest; "
             f"faulthandler.register(signal.SIGUSR1, file=open({str(threads)!r}, 'w'), "
             "all_threads=True); "
             f"sys.exit(pytest.main({args!r}))")
    # as from a terminal: started in the background of a non-interactive shell (as CI
    # scripts may start it), the child would inherit SIGINT ignored and Python would then
    # install no KeyboardInterrupt handler, so the Ctrl-C below would be ignored
    proc = subprocess.Popen([sys.executable, "-c", child], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_sigint_as_in_a_terminal)

    def hung(what: str):
        proc.send_signal(signal.SIGUSR1)
        time.sleep(2)
        proc.kill()
        out = proc.communicate()[0][-4000:]
        dump = threads.read_text() if threads.exists() else "(no dump)"
        pytest.fail(f"{what}; its output:\n{out}\nits threads:\n{dump[-6000:]}")

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # wait until some tests have finished
        done = [line for f in tmp_path.glob(".runs/*/*.jsonl")
                for line in f.read_text().splitlines() if '"kind": "test"' in line]
        if len(done) >= 3:
            break
        time.sleep(0.5)
    else:
        hung("no test finished within 300 s")
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        hung("the run went on for 300 s after Ctrl-C")
    assert proc.returncode == 2, out[-3000:]
    run = results(tmp_path)["run"]
    assert run["interrupted"] is True
    assert 3 <= run["tests_ran"] < run["tests_planned"]
    assert f"interrupted: {run['tests_ran']} of {run['tests_planned']} tests ran" in out
    html = (tmp_path / "conformance.html").read_text()
    assert f"{run['tests_ran']} of {run['tests_planned']} tests ran" in html


def _interrupted_in_a_with_clean_up() -> KeyboardInterrupt:
    """A KeyboardInterrupt whose innermost traceback entry has no line number, as when SIGINT
    arrives during a ``with`` block's clean-up on Python 3.11."""
    def block():
        with open(os.devnull):
            here = sys._getframe()
        return here

    frame = block()
    lineless = next(start for start, _, line in frame.f_code.co_lines() if line is None)
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as exc:
        exc.__traceback__.tb_next = types.TracebackType(None, frame, lineless, -1)
        return exc


def test_an_interrupt_without_a_line_number_still_prints():
    from _pytest._code import ExceptionInfo

    from conformance.session.interrupt import drop_lineless_entries

    exc = _interrupted_in_a_with_clean_up()
    if exc.__traceback__.tb_next.tb_lineno is not None:
        pytest.skip("this Python gives every instruction a line number")
    # unsanitized, pytest 9.2 on Python 3.11 fails here with a TypeError (seen in CI)
    excinfo = ExceptionInfo.from_exception(exc)
    drop_lineless_entries(excinfo)
    printed = str(excinfo.getrepr(funcargs=True))
    assert "KeyboardInterrupt" in printed and "_interrupted_in_a_with_clean_up" in printed


class _Cache:
    def __init__(self, saved=None):
        self.saved = dict(saved or {})

    def get(self, key, default):
        return self.saved.get(key, default)

    def set(self, key, value):
        self.saved[key] = value


def _scheduler(cache, units: dict[str, int], workers: int = 2):
    from types import SimpleNamespace

    from conformance.session.schedule import RowAffinityScheduling

    sched = SimpleNamespace(nodes=[object()] * workers, config=SimpleNamespace(cache=cache),
                            workqueue={u: dict.fromkeys(range(n), False) for u, n in units.items()})
    sched._last = lambda w: RowAffinityScheduling._last(sched, w)
    homes = RowAffinityScheduling._homes(sched)
    return sched, homes


def test_a_unit_goes_home_to_the_worker_that_ran_it_last_time():
    """Where a worker took over another's unit, that unit's modules are in the thief's compile
    directory: the next run sends it there, and a run of a few rows forgets no other."""
    from conformance.session.schedule import PLACED, RowAffinityScheduling

    cache = _Cache({PLACED: {"workers": 2, "units": {"row:a": 1, "row:b": 1, "row:z": 0}}})
    sched, homes = _scheduler(cache, {"row:a": 4, "row:b": 4, "row:c": 3, "row:d": 2})
    assert homes["row:a"] == homes["row:b"] == 1
    assert homes["row:c"] == homes["row:d"] == 0  # new units onto the less loaded worker
    sched.placed = {"row:a": 0, "row:c": 0}  # this run: worker 0 took row:a over
    RowAffinityScheduling.save_placement(sched)
    assert cache.saved[PLACED] == {"workers": 2, "units": {"row:a": 0, "row:b": 1, "row:c": 0,
                                                           "row:z": 0}, "seconds": {}}
    # another number of workers: last time's placement says nothing
    _, homes = _scheduler(cache, {"row:a": 4, "row:b": 4}, workers=3)
    assert sorted(homes.values()) == [0, 1]


def test_a_worker_starts_its_longest_units_and_takes_over_the_longest_left():
    """Last run's seconds order the units, so that a run ends on short ones."""
    from types import SimpleNamespace

    from conformance.session.schedule import PLACED, RowAffinityScheduling

    cache = _Cache({PLACED: {"workers": 2, "units": {"row:a": 0, "row:b": 0, "row:c": 0},
                             "seconds": {"row:a": 1.0, "row:b": 9.0, "row:c": 4.0}}})
    sched, homes = _scheduler(cache, {"row:a": 4, "row:b": 4, "row:c": 4, "row:new": 2})
    class Node:  # what the scheduler uses of an xdist worker
        def __init__(self, i):
            self.gateway = SimpleNamespace(id=f"gw{i}")

        def send_runtest_some(self, indices):
            pass

    nodes = [Node(0), Node(1)]
    sched.nodes, sched.assigned_work, sched.moved = nodes, {}, []
    sched.registered_collections = {n: list(range(4)) for n in nodes}
    sched._cost = lambda scope: RowAffinityScheduling._cost(sched, scope)
    sched._homes = lambda: homes
    assign = RowAffinityScheduling._assign_work_unit
    assign(sched, nodes[0])
    assign(sched, nodes[0])
    assert list(sched.assigned_work[nodes[0]]) == ["row:b", "row:c"]
    assign(sched, nodes[1])  # its own: the new unit
    assign(sched, nodes[1])  # none of its own left: the longest of the rest, taken over
    assert list(sched.assigned_work[nodes[1]]) == ["row:new", "row:a"]
    assert sched.moved == ["row:a"]
    RowAffinityScheduling.note(sched, "conformance/test_conformance.py::test_op[a[int8]]", 2.5)
    RowAffinityScheduling.save_placement(sched)
    assert cache.saved[PLACED]["seconds"] == {"row:a": 2.5, "row:b": 9.0, "row:c": 4.0}


def test_dev_py_names_a_venv_redirect_file_instead_of_failing_to_create_the_venv(tmp_path):
    """Recent tox releases write a PEP 832 ``.venv`` file pointing at a tox env; dev.py's
    environment (newest releases) lives there, so it says what to do rather than report an
    OSError from venv creation (tox.ini turns tox's redirect off for this project)."""
    redirect = tmp_path / ".venv"
    redirect.write_text(".tox/conformance-ort131\n")
    proc = subprocess.run([sys.executable, str(ROOT / "dev.py"), "lint"], capture_output=True,
                          text=True, env={**os.environ, "CONFORMANCE_VENV": str(redirect)},
                          timeout=60)
    assert proc.returncode != 0
    assert "'.tox/conformance-ort131'" in proc.stderr and "CONFORMANCE_VENV" in proc.stderr
    assert redirect.read_text() == ".tox/conformance-ort131\n"
