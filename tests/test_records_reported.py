"""A record may name the upstream issue that already tracks its bug (``reported=``): the
form is checked, and ``conformance upstream`` points at that issue instead of drafting a
second one. The grid puts every special value off the first position too, where ONNX
Runtime's ReduceMax drops a nan."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.registries import row_named
from conformance.registry import Blame, Known
from conformance.strategies import fixed
from conformance.strategies.canonical import Store
from conformance.strategies.grid import grid_cases
from conformance.upstream import issues, upstream_issue


@pytest.mark.parametrize("bad", ["onnxruntime#10514", "microsoft/onnxruntime", "a/b#0",
                                 "https://github.com/microsoft/onnxruntime/issues/10514"])
def test_reported_must_be_owner_repo_number(bad):
    with pytest.raises(ValueError, match="owner/repo#number"):
        Known(("onnxruntime",), "a reason", Blame.ONNXRUNTIME, example=fixed([1.0]),
              reported=bad)


def test_upstream_points_at_the_reported_issue_instead_of_a_draft():
    cells = [c for c in issues.registry_cells([row_named("max"), row_named("min")], 18)
             if c.known.cause == "reduce-max-min-nan"]
    [cause] = issues.group(cells)
    assert cause.reported == "microsoft/onnxruntime#10514"
    text = upstream_issue.issue_text(cause)
    assert "Already reported upstream" in text
    assert "https://github.com/microsoft/onnxruntime/issues/10514" in text
    assert "## What is expected" not in text, "a reported cause must not get a second draft"


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
def test_the_grid_puts_a_nan_after_the_first_element(name):
    row = row_named(name)
    base = Store().cases(row)["float64"]
    cases = grid_cases(row.cases, "float64", base=base, domains=row.grid)
    off_first = [c for c in cases if c.values[0].size > 1
                 and np.isnan(c.values[0].ravel()[1:]).any()
                 and not np.isnan(c.values[0].ravel()[0])]
    assert off_first, f"{name}[float64]: no grid case holds a nan after a number"
