"""Each registry row's canonical model may not grow without the growth being recorded.

ONNX Runtime pays about a microsecond per node whatever the tensor size, so a small model
costs what its node count says. ``tests/node_budgets/pytensor-<line>.json`` holds, per row and
dtype, how many ONNX nodes (subgraph nodes included) the converter emits for the row's
canonical case (``conformance.strategies.canonical``: the layout the C backend compares).
A model larger than its record fails this test; rewrite the file of the installed release
line with

    .venv/bin/python tests/test_node_budget.py --update

and commit it with the change, so that the growth shows in review. A model smaller than its
record passes with a warning asking for the same command: shrinking is never a regression,
and failing on it would also fail on things that are not the converter's doing (another
Hypothesis release draws other canonical layouts), while the warning keeps the slack in
view until the file is tightened. A row the converter refuses is recorded as null.

The counts hold for the PyTensor release line they were recorded with (graphs differ between
lines: PyTensor 2.38 builds some rows from other ops, 3.3 others again), so each line has a
file of its own; a line without one (an older line nobody recorded) skips.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import onnx
import pytensor
import pytest

import converter
from conformance.core.harness import build_graph
from conformance.registries import all_rows
from conformance.strategies.canonical import Store


def release_line() -> str:
    return ".".join(pytensor.__version__.split(".")[:2])


BUDGET = Path(__file__).with_name("node_budgets") / f"pytensor-{release_line()}.json"
UPDATE = ".venv/bin/python tests/test_node_budget.py --update"
ROWS = {row.name: row for row in all_rows()}


def node_count(graph) -> int:
    """Nodes of ``graph`` and of every subgraph nested in its nodes' attributes."""
    total = 0
    for node in graph.node:
        total += 1
        for attr in node.attribute:
            total += sum(node_count(g) for g in (attr.g, *attr.graphs))
    return total


def row_counts(row, store: Store, opset: int) -> dict[str, list]:
    """Per dtype, ``[node count, case]``: the node count of the row's canonical model (None:
    refused) and the case it was counted on (its description)."""
    counts = {}
    for dtype, case in store.cases(row).items():
        inputs, outputs = build_graph(row, case)
        try:
            count = node_count(converter.to_onnx(inputs, outputs, opset=opset).graph)
        except converter.ConversionError:
            count = None
        counts[dtype] = [count, _described(row, case)]
    return counts


def _described(row, case) -> str:
    return f"{case.describe(row.name)} {case.static} {case.params}"


def load() -> dict:
    return json.loads(BUDGET.read_text())


@pytest.fixture(scope="module")
def budget():
    if not BUDGET.exists():
        pytest.skip(f"no node budget recorded for PyTensor {release_line()} ({BUDGET.name}); "
                    f"`{UPDATE}` records one")
    recorded = load()
    if recorded["opset"] > onnx.defs.onnx_opset_version():
        pytest.skip(f"node budget recorded at opset {recorded['opset']}, which onnx "
                    f"{onnx.__version__} does not have")
    return recorded


@pytest.fixture(scope="module")
def store():
    # drawn afresh, as a clean clone draws them: a checkout's cached canonical cases may come
    # from another state of the harness
    return Store()


def test_budgets_of_removed_rows_are_reported(budget):
    gone = sorted(set(budget["rows"]) - set(ROWS))
    if gone:
        warnings.warn(f"{BUDGET.name} holds budgets of rows that no longer exist "
                      f"{gone}; run `{UPDATE}` and commit the file", UserWarning, stacklevel=1)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_row_stays_within_its_node_budget(name, budget, store):
    recorded = budget["rows"].get(name)
    if recorded is None:  # a new row: adding an op is its rule and its row, nothing else
        pytest.skip(f"row {name} has no node budget yet; `{UPDATE}` records one")
    counts = row_counts(ROWS[name], store, budget["opset"])
    grown, shrunk, other = [], [], []
    for dtype, (count, case) in counts.items():
        before, recorded_case = recorded.get(dtype, ("missing", None))
        if recorded_case != case:
            # another canonical case than the one counted (the draws follow the harness's
            # state): no like-for-like count to compare
            other.append(f"{name}[{dtype}]")
            continue
        if count == before:
            continue
        line = f"{name}[{dtype}]: {count} ONNX nodes, recorded {before} ({case})"
        if count is None or before is None or count > before:
            grown.append(line)
        else:
            shrunk.append(line)
    assert not grown, (
        f"the converter emits more nodes than {BUDGET.name} allows (or converts "
        f"differently): {'; '.join(grown)}. If that is intended, run `{UPDATE}` and commit "
        "the file with the change")
    if shrunk or other:
        warnings.warn(f"smaller than recorded: {'; '.join(shrunk) or 'none'}; counted on "
                      f"other canonical cases than recorded: {', '.join(other) or 'none'}; "
                      f"update the budget with `{UPDATE}`", UserWarning, stacklevel=1)


def update(opset: int) -> dict:
    """Every row's counts now, as the file stores them."""
    store = Store()
    return {"pytensor": release_line(), "opset": opset,
            "rows": {name: row_counts(ROWS[name], store, opset) for name in sorted(ROWS)}}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Record every registry row's node count.")
    parser.add_argument("--update", action="store_true", required=True,
                        help=f"rewrite {BUDGET.name} with the counts the converter emits now")
    parser.add_argument("--opset", type=int, default=None,
                        help="opset to convert at (default: the recorded one, else the "
                             "converter's default)")
    args = parser.parse_args(argv)
    opset = args.opset or (load()["opset"] if BUDGET.exists() else converter.default_opset())
    data = update(opset)
    BUDGET.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    total = sum(c or 0 for counts in data["rows"].values() for c, _ in counts.values())
    print(f"wrote {BUDGET} ({len(data['rows'])} rows, {total} nodes in all, opset {opset})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
