"""One Hypothesis property per spec, with strict expected failures and recorded outcomes."""

from __future__ import annotations

import hashlib
import math
import shlex
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import example, given, settings, target
from hypothesis.database import ExampleDatabase

from conformance import versions as releases
from conformance.backends import REFERENCE
from conformance.core.harness import CaseOutcome, Harness, Spec, case_code
from conformance.core.support import Refusals
from conformance.registry import Case, Known
from conformance.session import hardware, interrupt
from conformance.strategies import grid, layouts


@dataclass
class Observed:
    """What one test's examples showed, across Hypothesis' generation and shrinking."""

    spec: Spec
    known_seen: dict[int, str] = field(default_factory=dict)
    last_failure: CaseOutcome | None = None
    #: the converter's clean refusals: recorded, never raised (conformance.core.support)
    refusals: Refusals = field(default_factory=Refusals)
    #: the first raised failure's culprit (see :func:`culprit`): shrinking keeps to it
    culprit: Culprit | None = None
    #: failures with another culprit, seen after the first (mostly while shrinking): noted
    #: in the failure record, not raised, so that Hypothesis never shrinks toward them
    others: list[str] = field(default_factory=list)
    #: graph key -> the backends that declined that graph (Numba on an op it has no kernel
    #: for): a record only they could show is not judged, as for the converter's refusals
    declined: dict[object, set[str]] = field(default_factory=dict)
    #: (record index, backend) for each backend seen sharing the reference's fault it records
    shared: set[tuple[int, str]] = field(default_factory=set)
    #: (case, backend) -> the records covering that backend's disagreement on that case: a
    #: record whose example fails on a backend only as another record says (a C code
    #: generation error where a rewrite's wrong value was) cannot be judged there
    covered: dict[tuple, set[int]] = field(default_factory=dict)

    def keeps_blame(self, outcome: CaseOutcome) -> bool:
        """Whether ``outcome``'s failure may be raised: the first, or one with its culprit.
        Hypothesis shrinks toward any input that raises, so a reversal bug would shrink to a
        length-1 input on which one backend happens to agree, and be blamed on the other."""
        found = culprit(outcome)
        if self.culprit is None:
            self.culprit = found
        if found.same_as(self.culprit):
            return True
        if len(self.others) < 3:
            self.others.append(f"also failed, blamed on {found.blame} (not shrunk, another "
                               f"culprit): {outcome.description}")
        return False


@dataclass(frozen=True)
class Culprit:
    """What a failure is about: its blame and the backends that failed unexpectedly."""

    blame: str
    backends: frozenset[str]

    def same_as(self, other: Culprit) -> bool:
        """The same blame, on some of the same backends: a smaller case may leave a backend
        out (the rewritten graph of a 0-d input may lose the wrong node) and still be the
        same fault, while one of PyTensor's C code and one of its Numba code, both blamed
        on PyTensor, are not."""
        return self.blame == other.blame and bool(self.backends & other.backends)


def culprit(outcome: CaseOutcome) -> Culprit:
    return Culprit(str(outcome.blame), frozenset(v.backend for v in outcome.unexpected))


def _summary(values, limit: int = 64):
    return [v.ravel()[:limit].tolist() if v.ndim else v.item() for v in values]


def failure_record(outcome: CaseOutcome, notes, bundle: Path | None, repro: str) -> dict:
    actual = {
        name: (str(a) if isinstance(a, BaseException) else _summary(a))
        for name, a in outcome.actual.items()
    }
    expected = outcome.expected
    return {
        "code": case_code(outcome.spec.row, outcome.case),
        "message": outcome.failure_message(),
        "blame": str(outcome.blame) if outcome.blame else None,
        "case": outcome.description,
        "inputs": _summary(outcome.case.values),
        "input_shapes": [list(v.shape) for v in outcome.case.values],
        "params": [[k, v] for k, v in outcome.case.params],
        "expected": str(expected) if isinstance(expected, BaseException) else _summary(expected),
        "actual": actual,
        "notes": list(notes),
        "bundle": str(bundle) if bundle else None,
        "repro": repro,
    }


class OwnExamples(ExampleDatabase):
    """One test's share of the example database. Every test runs the same inner property,
    and Hypothesis keys saved examples by a hash of the property's source: without a key
    of its own, each test would replay every other test's failures and delete them as
    passing, so a rerun would no longer start from the shrunk failure."""

    def __init__(self, shared: ExampleDatabase, test_id: str):
        super().__init__()
        self.shared, self.prefix = shared, test_id.encode() + b"\0"

    def save(self, key: bytes, value: bytes) -> None:
        self.shared.save(self.prefix + key, value)

    def fetch(self, key: bytes):
        return self.shared.fetch(self.prefix + key)

    def delete(self, key: bytes, value: bytes) -> None:
        self.shared.delete(self.prefix + key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.shared.move(self.prefix + src, self.prefix + dest, value)


def check(spec: Spec, harness: Harness, session) -> dict:
    """Run ``spec``'s property; return the test record. Raises on unexpected failure, calls
    ``pytest.xfail`` when only recorded divergences showed, and fails a strict XPASS."""
    observed = Observed(spec)
    known = spec.known
    harness.start(spec)
    canonical = harness.canonical(spec)
    # inactive records' examples too (there they must pass); the canonical case makes every
    # backend, the batched C one included, judge each cell
    explicit = [k.example(spec.dtype) for k in spec.records]
    explicit += [canonical] if canonical is not None else []
    # every special value in each operand, at every opset, whatever the random draws find
    explicit += grid.grid_cases(spec.row.cases, spec.dtype, base=canonical,
                                domains=spec.row.grid)
    # the plainest layouts before any drawn one: a converter refusing the rarer forms would
    # otherwise end the row "unsupported" before they are tried
    explicit += layouts.first_cases(spec.row.cases, spec.dtype)
    deferred: list[CaseOutcome] = []

    def judge(case):
        interrupt.check()
        outcome = harness.run(spec, case)
        session.record_example(spec, outcome)
        observed.refusals.note(outcome)
        for verdict in outcome.verdicts:
            if verdict.declined:
                observed.declined.setdefault(case.graph_key(), set()).add(verdict.backend)
            if verdict.shared:
                observed.shared.add((known.index(verdict.known), verdict.backend))
        if session.target_error:
            for verdict in outcome.verdicts:
                ulp = verdict.comparison.max_ulp
                if verdict.comparison.ok and math.isfinite(ulp):
                    target(ulp, label=f"{verdict.backend} error in ulp")
        for verdict in outcome.verdicts:
            for k in verdict.covering:
                observed.known_seen.setdefault(known.index(k), verdict.comparison.message)
            if verdict.covering:
                observed.covered.setdefault((_identity(case), verdict.backend), set()).update(
                    known.index(k) for k in verdict.covering)
        if outcome.unexpected:
            if any(case is c for c in explicit):
                # an explicit example is not shrunk: let the search find (and shrink) one
                deferred.append(outcome)
                return
            if not observed.keeps_blame(outcome):
                return
            observed.last_failure = outcome
            raise AssertionError(outcome.failure_message())

    # Kept to one line: Hypothesis reads and hashes the source of the function it is given
    # for every test (4 ms for the whole body above, times every test of the run)
    @given(case=spec.row.cases(spec.dtype))
    def prop(case):
        judge(case)

    for case in explicit:
        prop = example(case=case)(prop)
    overrides = {}
    if settings().database is not None:
        overrides["database"] = OwnExamples(settings().database, spec.test_id)
    if spec.opset_label:
        # Other opsets only change which ONNX operators a rule emits, which depends on the
        # graph's structure rather than its values: a third of the examples covers it.
        overrides["max_examples"] = max(3, settings().max_examples // 3)
    if overrides:
        prop = settings(**overrides)(prop)

    record = {"test": spec.test_id, "op": spec.row.name, "category": spec.row.category,
              "dtype": spec.dtype, "opset": spec.opset, "opset_label": spec.opset_label,
              "known": [_known_json(k) for k in known],
              "known_inactive": [_known_json(k) for k in spec.records if not k.active],
              "failure": None}
    start = time.perf_counter()
    try:
        prop()
    except BaseException as exc:
        record["duration"] = time.perf_counter() - start
        record.update(observed.refusals.fields())
        if observed.last_failure is not None:
            record["outcome"] = "failed"
            notes = [*getattr(exc, "__notes__", []), *observed.others]
            record["failure"] = session.failure(observed.last_failure, notes)
        else:
            record["outcome"] = "error"
            record["failure"] = {"message": f"{type(exc).__name__}: {exc}", "blame": "unknown"}
        session.record_test(record)
        raise
    record["duration"] = time.perf_counter() - start
    refusals = observed.refusals
    record.update(refusals.fields())
    if deferred:  # only an explicit example failed, and the search found nothing smaller
        failed = _narrowed(harness, spec, deferred[0])
        record["outcome"] = "failed"
        record["failure"] = session.failure(failed, [])
        session.record_test(record)
        pytest.fail(failed.failure_message(), pytrace=False)
    if refusals.refused and harness.claims_every_row:
        message = refusals.claim_message(spec)
        record["outcome"] = "failed"
        record["failure"] = {**session.failure(refusals.simplest(), []), "message": message}
        session.record_test(record)
        pytest.fail(message, pytrace=False)
    unseen = [k for i, k in enumerate(known) if i not in observed.known_seen]
    unjudged = refusals.unjudged(unseen, spec)  # their examples were refused: not XPASS
    # a backend that could have shown them runs in the first opset's test, not here
    unjudged += [k for k in unseen if k not in unjudged
                 and {*k.backends, *k.shared_by} & set(spec.deferred)]
    declined = {i: observed.declined.get(k.example(spec.dtype).graph_key(), set())
                for i, k in enumerate(known)}  # the backends that declined each example
    unjudged += [k for i, k in enumerate(known) if k in unseen and k not in unjudged
                 and set(spec.showing(k)) <= declined[i]]
    # an example another record explains on every backend that could show this one
    unjudged += [k for i, k in enumerate(known) if k in unseen and k not in unjudged
                 and _hidden(observed, i, k.example(spec.dtype), spec.showing(k), declined[i])]
    unseen = [k for k in unseen if k not in unjudged]
    if unjudged:
        record["known_unjudged"] = [_known_json(k) for k in unjudged]
    record["xfail_seen"] = dict(observed.known_seen)
    fixed = {} if session.strict_records else {
        i: newer for i, k in enumerate(known)
        if k in unseen and (newer := releases.beyond_checked(k.package))}
    if fixed:
        # a release nobody has checked the records against: a warning, not a failure
        record["fixed_upstream"] = [{**_known_json(known[i]), "installed": newer}
                                    for i, newer in fixed.items()]
        unseen = [k for i, k in enumerate(known) if k in unseen and i not in fixed]
        for item in record["fixed_upstream"]:
            warnings.warn(FixedUpstream(
                f"{spec.test_id}: recorded divergence not seen on {item['installed']} "
                f"({item['blame']}: {item['reason']}); fixed upstream? Bound the record with "
                f"versions= once confirmed"), stacklevel=1)
    elsewhere = [k for k in unseen if k.cpu]
    if elsewhere:
        # a bug of other instruction sets: not a fix, and not this contributor's problem
        here = hardware.describe()
        record["not_on_this_cpu"] = [{**_known_json(k), "cpu": k.cpu, "installed": here}
                                     for k in elsewhere]
        for k in elsewhere:
            warnings.warn(NotOnThisCpu(
                f"{spec.test_id}: recorded divergence does not show on this CPU, {here} "
                f"({k.blame}: {k.reason}; shows with {k.cpu})"), stacklevel=1)
        unseen = [k for k in unseen if not k.cpu]
    # a backend that no longer shares the reference's fault on the record's example is fixed
    unshared = [(k, b) for i, k in enumerate(known) for b in spec.showing(k) if b in k.shared_by
                and (i, b) not in observed.shared and b not in declined[i]]
    if unseen or unshared:
        record["outcome"] = "failed"
        lines = [f"XPASS(strict) {spec.test_id}: {b} no longer agrees with {REFERENCE.name} "
                 f"where it is wrong ({k.blame}: {k.reason}); remove it from the record's "
                 f"shared_by" for k, b in unshared]
        lines += [f"XPASS(strict) {spec.test_id}: {', '.join(spec.showing(k))} now agree "
                 f"({k.blame}: {k.reason}); {_fix_hint(k)}" for k in unseen]
        record["failure"] = {"message": "\n".join(lines),
                             "blame": str((unseen or [k for k, _ in unshared])[0].blame)}
        session.record_test(record)
        pytest.fail("\n".join(lines), pytrace=False)
    if refusals.refused and not refusals.converted:
        record["outcome"] = "unsupported"
        session.record_test(record)
        pytest.skip(refusals.skip_reason(spec))
    if len(fixed) + len(unjudged) + len(elsewhere) < len(known):
        record["outcome"] = "xfailed"
        session.record_test(record)
        # no traceback: pytest would read and parse this module's source for each xfail
        raise pytest.xfail.Exception("; ".join(f"{'/'.join(k.backends)} ({k.blame}): {k.reason}"
                                               for k in known), pytrace=False)
    record["outcome"] = "passed"
    session.record_test(record)
    return record


def _identity(case: Case) -> tuple:
    """A case's graph and values, to tell a record's example from other cases of its graph."""
    digest = hashlib.sha1(b"".join(v.tobytes() for v in case.values)).hexdigest()
    return case.graph_key(), digest


def _hidden(observed: Observed, index: int, example: Case, backends, declined) -> bool:
    """Whether record ``index``'s example failed, on every backend that could show it and
    did not decline it, only as other records say."""
    judged = [b for b in backends if b not in declined]
    found = [observed.covered.get((_identity(example), b)) for b in judged]
    return bool(judged) and all(f and index not in f for f in found)


def _narrowed(harness: Harness, spec: Spec, outcome: CaseOutcome) -> CaseOutcome:
    """A failing explicit example made smaller, as Hypothesis does not shrink those: a grid
    case cut down to the element the first unexpected disagreement names, a first case
    (``layouts.firsts``) on as few elements as still fail; each only where the smaller case
    fails with the same culprit (:func:`culprit`)."""
    where = outcome.unexpected[0].comparison.where
    smaller = [grid.element(outcome.case, where[1][0])] if where and where[1] else []
    smaller += layouts.smaller_firsts(spec.row.cases, spec.dtype, outcome.case)
    for small in smaller:
        if small is None:
            continue
        narrowed = harness.run(spec, small)
        if narrowed.unexpected and culprit(narrowed).same_as(culprit(outcome)):
            return narrowed
    return outcome


def _fix_hint(k: Known) -> str:
    version = releases.installed(k.package) if k.package else None
    if version is None:
        return "remove this expected failure"
    return (f"if {k.package} {version} fixed it, bound the record with "
            f"versions=\"{k.package}<{version}\", else remove it")


class NotOnThisCpu(UserWarning):
    """A recorded divergence that depends on the CPU did not show on this one."""


class FixedUpstream(UserWarning):
    """A recorded divergence did not show on a release newer than the records were checked
    against (see conformance.versions)."""


def _known_json(k: Known) -> dict:
    return {"backends": list(k.backends), "reason": k.reason, "blame": str(k.blame),
            "dtypes": list(k.dtypes) if k.dtypes else None, "versions": k.versions,
            "package": k.package, **({"shared_by": list(k.shared_by)} if k.shared_by else {})}


def repro_command(bundle: Path) -> str:
    return f"conformance repro {shlex.quote(str(bundle))}"
