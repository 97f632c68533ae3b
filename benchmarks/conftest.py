"""Collects every benchmark's timings; at the end prints the ratios between benchmarks of
the same run and writes reports/speed.json for the HTML report's speed section.

BLAS runs on one thread, as ONNX Runtime does in the backends (``intra_op_num_threads=1``),
so per-op speeds compare one core with one core (neither pytest nor this file imports numpy,
so the variables are set before it is loaded).
"""

from __future__ import annotations

import json
import os

import pytest

from benchmarks.ratios import model_summary, per_node, ratios, rewrite_nodes, speed_rows

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

RECORDS = pytest.StashKey[list]()


def pytest_configure(config):
    config.stash[RECORDS] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    fixture = getattr(item, "funcargs", {}).get("benchmark")
    stats = getattr(fixture, "stats", None)
    if call.when == "call" and report.passed and stats is not None:
        item.config.stash[RECORDS].append({
            "name": item.name, "info": dict(fixture.extra_info),
            "median": stats.stats.median, "min": stats.stats.min,
        })
    return report


def pytest_sessionfinish(session):
    rows = speed_rows(session.config.stash[RECORDS])
    if rows:
        path = session.config.rootpath / "reports" / "speed.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(rows, indent=1) + "\n")


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, config):
    records = config.stash[RECORDS]
    found = ratios(records)
    if not found:
        return
    terminalreporter.write_sep("-", "benchmark ratios (same run; median, min in brackets)")
    for ratio in found:
        terminalreporter.write_line(ratio.line())
    for line in model_summary(records):
        terminalreporter.write_line(line)
    if per_node(records):
        terminalreporter.write_line(f"converter us per node by graph size: {per_node(records)}")
    if rewrite_nodes(records):
        terminalreporter.write_line(f"ONNX mode nodes by rewrite choice: {rewrite_nodes(records)}")
    if speed_rows(records):
        terminalreporter.write_line(f"speed medians: {config.rootpath / 'reports' / 'speed.json'}")
