"""What the converter under test converts: its clean refusals across one test's examples.

A clean refusal (``harness.is_refusal``: ``UnsupportedOpError``, ``NotImplementedError``) is an
outcome, "unsupported", not a failure: the property records it and returns, so Hypothesis goes
on searching the layouts the converter does convert, and a wrong value anywhere in the row is
still found (and shrunk: a refused layout never counts as failing). At the end of a test:

- the project's own converter claims every registry row, so any refusal fails the test, on the
  simplest refused layout (smallest inputs first);
- any other converter's test whose every example was refused ends as "unsupported" (a pytest
  skip: not judged, not a failure); one that converted some layouts is judged on those and
  reports the refused ones beside its outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.core.harness import CaseOutcome, Spec
from conformance.registry import Case, Known

#: Refused layouts listed per test in the results.
MAX_LAYOUTS = 20


def _size(case: Case) -> tuple:
    """Simplest first: fewest elements, then fewest axes, then the shortest description."""
    return (sum(v.size for v in case.values), sum(v.ndim for v in case.values),
            len(case.describe("")))


@dataclass
class Refusals:
    """The examples of one test the converter refused, by layout (graph key)."""

    examples: int = 0
    refused: int = 0
    #: graph key -> (its simplest refused outcome, the backends that had nothing to run)
    layouts: dict[tuple, tuple[CaseOutcome, frozenset[str]]] = field(default_factory=dict)

    def note(self, outcome: CaseOutcome) -> None:
        self.examples += 1
        unsupported = frozenset(v.backend for v in outcome.unsupported)
        if not unsupported:
            return
        self.refused += 1
        key = outcome.case.graph_key()
        old, backends = self.layouts.get(key, (None, frozenset()))
        if old is None or _size(outcome.case) < _size(old.case):
            old = outcome
        self.layouts[key] = (old, backends | unsupported)

    @property
    def converted(self) -> int:
        """Examples no backend was refused on."""
        return self.examples - self.refused

    def simplest(self) -> CaseOutcome:
        return min((o for o, _ in self.layouts.values()), key=lambda o: _size(o.case))

    def unjudged(self, records, spec: Spec) -> list[Known]:
        """The ``records`` whose example the converter refused on a running backend they
        name: not seen, but not contradicted either (no strict XPASS), since that backend
        could have shown them."""
        running = set(spec.backends)
        found = []
        for k in records:
            _, backends = self.layouts.get(k.example(spec.dtype).graph_key(), (None, ()))
            if set(k.backends) & running & set(backends):
                found.append(k)
        return found

    def fields(self) -> dict:
        """The test record's ``unsupported`` entry (docs/results-schema.md), if any refusal."""
        if not self.refused:
            return {}
        simplest = self.simplest()
        layouts = sorted(self.layouts.values(), key=lambda entry: _size(entry[0].case))
        return {"unsupported": {
            "examples": self.refused, "converted": self.converted,
            "layouts": [o.description for o, _ in layouts[:MAX_LAYOUTS]],
            "backends": sorted(set().union(*(b for _, b in self.layouts.values()))),
            "message": simplest.unsupported[0].comparison.message,
        }}

    def claim_message(self, spec: Spec) -> str:
        simplest = self.simplest()
        return (f"converter.to_onnx refused {self.refused} of {self.examples} examples of "
                f"{spec.test_id}, a row it claims (every registry row is the project "
                f"converter's claim); simplest refused layout {simplest.description}:\n"
                f"{simplest.failure_message()}")

    def skip_reason(self, spec: Spec) -> str:
        first = self.simplest().unsupported[0].comparison.message
        return (f"unsupported: the converter under test refused all {self.refused} examples "
                f"of {spec.test_id} ({len(self.layouts)} layouts); simplest: {first}")
