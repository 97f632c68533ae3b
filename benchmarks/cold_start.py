"""Cold start: the default conformance run on a fixed subset, from an empty PyTensor compile
directory, with one and with two xdist workers, and again warm.

    .venv/bin/python benchmarks/cold_start.py [ROW ...]

A whole pytest process is the unit here (compiling and worker start-up are what is measured),
so this is a script, not a pytest-benchmark test. Each cold run gets a new empty compile
directory and pytest cache; the warm run reuses the two-worker run's. It prints the wall
times, the C modules each run compiled, and two ratios measured side by side in this one
invocation:
``-n 2 / -n 1`` cold (target <= 0.6) and cold / warm at ``-n 2`` (target <= 3). Reports go to
a temporary folder, never to reports/.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: One row of each registry category, every dtype each has (tests: ROWS covers CATEGORIES).
ROWS = ("add", "exp", "sum", "softmax", "dimshuffle", "alloc", "subtensor", "dot", "extract_diag",
        "cho_solve",
        "deep_copy", "repeat",
        "random_graph", "erf", "scan_cumulative", "bitwise_reduce")
TESTS = "conformance/test_conformance.py"


def node_ids(rows=ROWS) -> list[str]:
    """Every test of ``rows``: each dtype at the default and the minimum opset."""
    import converter
    from conformance.registries import row_named

    return [f"{TESTS}::test_op[{name}[{dtype}{suffix}]]" for name in rows
            for dtype in row_named(name).dtypes
            for suffix in ("", f"-opset{converter.MIN_OPSET}")]

TARGETS = {"-n 2 / -n 1, cold": 0.6, "cold / warm, -n 2": 3.0}


def run(workers: int, selection: list[str], compiledir: str) -> dict:
    """One ``pytest conformance`` run: wall seconds and what its results say it compiled."""
    with tempfile.TemporaryDirectory() as report_dir:
        env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={compiledir}"}
        env.pop("CONFORMANCE_COMPILEDIR", None)
        cmd = [sys.executable, "-m", "pytest", *selection, "-q",
               "-n", str(workers), "--conformance-profile", "ci", "--report-dir", report_dir,
               # pytest's cache (canonical cases) lives and dies with the compile directory
               "-o", f"cache_dir={Path(compiledir) / 'pytest-cache'}"]
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if done.returncode not in (0, 1):  # 1: a conformance test failed; still timed
            sys.exit(f"pytest -n {workers} exited with {done.returncode}:\n"
                     f"{done.stdout[-3000:]}{done.stderr[-2000:]}")
        info = json.loads((Path(report_dir) / "results.json").read_text())["run"]
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    print(f"-n {workers}: {elapsed:6.1f} s, {info.get('c_modules_compiled')} C modules "
          f"({info.get('compile_seconds')} s of g++)   {tail}", flush=True)
    return {"seconds": elapsed, **info}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="*", default=list(ROWS),
                        help="registry rows to run (default: one row of each category)")
    args = parser.parse_args(argv)
    selection = node_ids(args.rows)
    print(f"{len(selection)} tests of {len(args.rows)} rows", flush=True)
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        print("cold, one worker", flush=True)
        serial = run(1, selection, one)
        print("cold, two workers", flush=True)
        parallel = run(2, selection, two)
        print("warm, two workers", flush=True)
        warm = run(2, selection, two)
    measured = {"-n 2 / -n 1, cold": parallel["seconds"] / serial["seconds"],
                "cold / warm, -n 2": parallel["seconds"] / warm["seconds"]}
    for name, ratio in measured.items():
        verdict = "met" if ratio <= TARGETS[name] else "MISSED"
        print(f"{name}: {ratio:.2f}  (target <= {TARGETS[name]}: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
