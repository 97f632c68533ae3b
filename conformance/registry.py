"""Declarative registry rows: one frozen ``Row`` per op, everything else derived from them."""

from __future__ import annotations

import dataclasses
import enum
import numbers
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from conformance import versions as releases


class Blame(enum.StrEnum):
    """Who is at fault for a divergence."""

    CONVERTER = "converter"
    ONNXRUNTIME = "onnxruntime"
    ONNXRUNTIME_OPTIMIZER = "onnxruntime-optimizer"
    ONNX_REFERENCE = "onnx-reference"
    PYTENSOR = "pytensor"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Tol:
    """Elementwise tolerance, relative or in units in the last place (never both).

    Relative: ``|actual - expected| <= atol + rtol * |expected|``.

    In ULPs (``ulps`` given): ``|actual - expected| <= ulps * ulp(expected)``, ulp being
    numpy's spacing of ``|expected|`` in the output's dtype (a subnormal's spacing for
    subnormals and zero), plus ``operand_ulps * ulp(operand)``, ulp of the element's largest
    operand magnitude in the same dtype: an absolute term for functions whose exact result is
    tiny beside their operands through cancellation (sin(x) next to a multiple of pi, where
    an argument reduction's error is a fraction of x's ulp), declared per row, never a
    constant floor.

    For sums of products of the operands (reductions, cumulative sums, dot products, BLAS
    forms), ``terms_ulps * ulp(terms)`` instead scales with the sum of the terms' magnitudes:
    ``terms`` is the row's own graph evaluated by the reference on the operands' absolute
    values (their non-finite elements read as 0). A sum of n terms computed in any order is
    within about ``n * u * terms`` of the exact value (u: the unit roundoff, less than one
    ulp of ``terms``), so a correct cancellation stays green and a wrong digit of a result
    of the terms' own size does not.
    """

    rtol: float = 0.0
    atol: float = 0.0
    ulps: float | None = None
    operand_ulps: float = 0.0
    terms_ulps: float = 0.0

    def __post_init__(self):
        for name in ("rtol", "atol", "ulps", "operand_ulps", "terms_ulps"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, numbers.Real) and 0 <= value < np.inf):
                raise ValueError(f"Tol({name}={value!r}): must be a finite number >= 0")
        if self.ulps is not None and (self.rtol or self.atol):
            raise ValueError(
                f"Tol(rtol={self.rtol!r}, atol={self.atol!r}, ulps={self.ulps!r}): give a "
                "relative tolerance (rtol, atol) or a budget in ulps, not both; a ULP budget's "
                "absolute term is operand_ulps, scaled to the operands")
        for name in ("operand_ulps", "terms_ulps"):
            if getattr(self, name) and self.ulps is None:
                raise ValueError(f"Tol({name}={getattr(self, name)!r}) needs ulps=: it widens "
                                 "a ULP budget where cancellation makes the result tiny")

    @property
    def in_ulps(self) -> bool:
        return self.ulps is not None


def ulp_budget(**budgets: float) -> dict[str, Tol]:
    """``Row.tol`` with a budget in ulps per float dtype: ``ulp_budget(float32=4, float64=2)``
    (a dtype left out keeps the default tolerance)."""
    bad = [d for d in budgets if d not in ("float16", "float32", "float64")]
    if bad:
        raise ValueError(f"ulp_budget: {bad} are not float dtypes; allowed: float16, float32, "
                         "float64")
    return {d: Tol(ulps=n) for d, n in budgets.items()}


def summed(roundings: float, ulps: float = 0) -> dict[str, Tol]:
    """``Row.tol`` for a row whose outputs are sums of products of its operands, each
    computed with at most ``roundings`` roundings in any order: two such results may differ
    by twice ``roundings * u * terms`` (see ``Tol.terms_ulps``), plus ``ulps`` at the end."""
    return {d: Tol(ulps=ulps, terms_ulps=2 * roundings) for d in ("float16", "float32", "float64")}


#: Per-dtype defaults; integer and bool results are always compared exactly.
DEFAULT_TOL: Mapping[str, Tol] = {
    "float16": Tol(rtol=1e-3, atol=1e-3),
    "float32": Tol(rtol=1e-5, atol=1e-6),
    "float64": Tol(rtol=1e-10, atol=1e-12),
}
EXACT = Tol()
#: disagreeing elements a record's ``when`` is judged on one by one (beyond: the whole case too)
MAX_JUDGED_ELEMENTS = 256
#: What ``Known.cause`` may be: words of lowercase letters and digits joined by '-'.
CAUSE_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
#: What ``Known.reported`` may be: a GitHub issue as owner/repo#number.
REPORTED_FORM = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+#[1-9][0-9]*")


def _operand_classes(v: np.ndarray) -> set[str]:
    """The value classes one operand holds."""
    found = set()
    if v.ndim == 0:
        found.add("0-d")
    if v.size == 0:
        found.add("empty")
    if v.dtype.kind == "f" and v.size:
        if not np.isfinite(v).all():
            found.add("nan/inf")
        finite = v[np.isfinite(v)]
        if (np.abs(finite - np.trunc(finite)) == 0.5).any():
            found.add("ties")
        if (np.signbit(finite) & (finite == 0)).any():
            found.add("-0.0")
    return found


@dataclass(frozen=True)
class Case:
    """One concrete input set: the arrays, the static shapes the symbolic inputs are given
    (``1`` on broadcast axes, ``None`` elsewhere) and any graph-building parameters."""

    values: tuple[np.ndarray, ...]
    static: tuple[tuple[int | None, ...], ...]
    params: tuple[tuple[str, Hashable], ...] = ()

    def graph_key(self) -> tuple:
        """Cases with equal keys share one compiled graph (and one C compile)."""
        types = tuple((v.dtype.str, s) for v, s in zip(self.values, self.static, strict=True))
        return (self.params, types)

    def value_classes(self) -> list[str]:
        """Which interesting classes of input this case covers (for coverage reporting): the
        case's own (any operand 0-d, empty, broadcast, nan/inf, ties, -0.0) and, where it has
        several operands, each operand's as ``"<class> (x<i>)"`` (with ``"float (x<i>)"`` for a
        float operand, so that a report can tell "never drew nan" from "cannot hold one")."""
        classes = set()
        ranks = {v.ndim for v in self.values}
        if len(ranks) > 1 or any(1 in s for s in self.static):
            classes.add("broadcast")
        several = len(self.values) > 1
        for i, v in enumerate(self.values):
            found = _operand_classes(v)
            classes.update(found)
            if several:
                classes.update(f"{c} (x{i})" for c in found)
                if v.dtype.kind == "f":
                    classes.add(f"float (x{i})")
        return sorted(classes)

    def at_element(self, shape: tuple[int, ...], index: tuple[int, ...]) -> Case | None:
        """The case cut down to what element ``index`` of an output of ``shape`` is computed
        from, for a case of an elementwise op (the caller knows: no params, operands
        broadcasting to ``shape``); each operand keeps its rank. None where it cannot be."""
        if self.params:
            return None
        try:
            if np.broadcast_shapes(*(v.shape for v in self.values)) != tuple(shape):
                return None
        except ValueError:
            return None
        values = tuple(np.broadcast_to(v, shape)[index].reshape((1,) * v.ndim)
                       for v in self.values)
        return Case(values, self.static, self.params)

    def describe(self, op: str) -> str:
        args = ", ".join(f"{v.dtype}[{','.join(map(str, v.shape))}]" for v in self.values)
        extra = "".join(f", {k}={v!r}" for k, v in self.params)
        return f"{op}({args}{extra})"


#: the oracle's words for a zero of the wrong sign: a record whose ``match`` asks for them can
#: only be shown by a backend that promises signed zeros
ZERO_SIGN_WORDS = "sign of zero"


@dataclass(frozen=True)
class Known:
    """A recorded divergence: a strict expected failure of some backends on some dtypes.

    A failure is expected only if it also matches ``match`` (a regex searched in the oracle's
    message) and ``when`` (a predicate on the Case), so a divergence never hides other bugs
    of the same backend. ``example`` (a dtype -> Case function) is always tried, so a fix
    upstream turns the expected failure into a strict XPASS, which fails the run.

    ``versions`` (a PEP 440 requirement such as ``"onnxruntime<1.32"``) says for which
    releases the divergence holds; outside them the record is inactive and its example must
    pass (see conformance.versions).

    ``cause`` (a slug such as ``"careduce-c-0d"``) names the upstream bug the record is an
    instance of: records that share it are one root cause for ``conformance upstream``,
    whatever their wording (conformance.upstream.issues describes each cause once).

    ``reported`` (``"owner/repo#number"``) names the upstream issue that already tracks the
    bug: ``conformance upstream`` links it instead of drafting a duplicate.

    ``cpu`` (a line saying on which CPUs it shows, e.g. ``"ONNX Runtime's AVX2 kernels"``)
    marks a bug of some instruction sets only: where the example does not show, the run
    warns "does not show on this CPU" instead of failing.
    """

    backends: tuple[str, ...]
    reason: str
    blame: Blame
    dtypes: tuple[str, ...] | None = None
    example: Callable[[str], Case] | None = None
    match: str | None = None
    when: Callable[[Case], bool] | None = None
    versions: str | None = None
    cause: str | None = None
    #: the bug depends on the CPU (which SIMD kernels run): where its example does not show
    #: on this machine, the run warns, naming the CPU, instead of failing (strict XPASS)
    cpu: str | None = None
    #: backends whose own code shares the reference's fault that the record describes: they
    #: agree with the reference where ``when`` holds, which is as wrong, so their cell is an
    #: expected failure too; strictly (one that stops agreeing there fails the run)
    shared_by: tuple[str, ...] = ()
    reported: str | None = None

    @property
    def package(self) -> str | None:
        """The package at fault: the one ``versions`` names, else the blame's."""
        if self.versions is not None:
            return releases.parse_requirement(self.versions).name
        return releases.BLAMED_PACKAGE.get(str(self.blame))

    @property
    def active(self) -> bool:
        """Whether the divergence is expected on the installed release."""
        return releases.holds(self.versions)

    def covers(self, backend: str, message: str, case: Case, *, shape=None,
               elements: Sequence[tuple[int, ...]] = ()) -> bool:
        """Whether the record explains ``backend``'s disagreement: its message matches and
        ``when`` holds, on each disagreeing element (``elements`` of an output of ``shape``)
        where the case is elementwise, else on the whole case. So a nan elsewhere in the
        case never excuses a wrong value at 0.5."""
        if backend not in self.backends and backend not in self.shared_by:
            return False
        if self.match is not None and not re.search(self.match, message):
            return False
        if self.when is None:
            return True
        narrowed = [case.at_element(shape, i) for i in elements[:MAX_JUDGED_ELEMENTS]]
        if not narrowed or any(c is None for c in narrowed):
            return bool(self.when(case))
        if len(elements) > MAX_JUDGED_ELEMENTS and not self.when(case):
            return False
        return all(self.when(c) for c in narrowed)

    def __post_init__(self):
        if not self.reason or "\n" in self.reason:
            raise ValueError(f"Known.reason must be one non-empty line, got {self.reason!r}")
        if not self.backends:
            raise ValueError("Known.backends must name at least one backend")
        if both := sorted(set(self.backends) & set(self.shared_by)):
            raise ValueError(f"Known({self.reason!r}): {both} cannot both disagree with the "
                             "reference (backends=) and share its fault (shared_by=)")
        if not isinstance(self.blame, Blame):
            raise ValueError(f"Known.blame must be a Blame, got {self.blame!r}")
        if self.example is None:
            raise ValueError(
                f"Known({self.reason!r}) needs example=: a dtype -> Case function that shows "
                "the divergence, so that a fix upstream is noticed (strict xfail)"
            )
        if self.versions is not None:
            releases.parse_requirement(self.versions)
        if self.reported is not None and not REPORTED_FORM.fullmatch(self.reported):
            raise ValueError(f"Known({self.reason!r}): reported={self.reported!r} must name an "
                             "upstream issue as owner/repo#number, e.g. "
                             "'microsoft/onnxruntime#10514'")
        if self.cause is not None and not CAUSE_SLUG.fullmatch(self.cause):
            raise ValueError(f"Known({self.reason!r}): cause={self.cause!r} must be a slug: "
                             "lowercase letters and digits in words joined by '-'")

    def applies(self, dtype: str) -> bool:
        return self.dtypes is None or dtype in self.dtypes

    @property
    def about_zero_signs(self) -> bool:
        """Whether only a zero's sign can show the divergence (its ``match`` asks for the
        oracle's words for that, with no alternative): a backend that does not promise
        signed zeros never does."""
        return self.match is not None and ZERO_SIGN_WORDS in self.match and "|" not in self.match


CaseFactory = Callable[[str], "object"]  # dtype -> hypothesis strategy of Case


@dataclass(frozen=True)
class Reference:
    """Expected values more accurate than the Python linker's, for some dtypes of a row,
    declared as ``Row(reference=Reference(...))`` where the library behind the Python Op
    (scipy) misses the row's budget. ``compute`` maps the case's operands and the Python
    linker's outputs to the expected outputs; it refines the values it can and keeps the
    others (nan, infinities, poles), so the linker still says what raises and what is not
    finite. ``reason`` says, in one line, where the Python linker is not accurate."""

    compute: Callable[[tuple[np.ndarray, ...], list[np.ndarray]], list[np.ndarray]]
    dtypes: tuple[str, ...]
    reason: str
    #: what computes the values, as a filed issue names it ("mpmath at 40 digits")
    source: str = "a more accurate reference"

    def __post_init__(self):
        if not self.reason or "\n" in self.reason:
            raise ValueError(f"Reference.reason must be one non-empty line, got {self.reason!r}")
        if not self.dtypes:
            raise ValueError("Reference.dtypes must name the dtypes it computes")


@dataclass(frozen=True)
class Composes:
    """How a row takes part in random graphs (conformance.strategies.graphs), declared on
    the row as ``compose=Composes(...)``.

    ``domains`` has one Domain per operand: values from earlier nodes are guarded into it.
    ``params`` maps the first operand's shape to a Hypothesis strategy of the row's params
    tuple (None: the row takes none). ``shape`` maps (operand shapes, params dict) to the
    output's shape (None: the operands' broadcast shape). ``keep_rank`` marks a reduction
    whose reduced axes (its ``axis`` param) come back as length-1 axes, so the result
    broadcasts against its operand. ``dtypes`` are the operand dtypes it composes on (None:
    the row's dtypes without a recorded divergence); ``accepts`` says which first-operand
    shapes it takes (None: any). ``pairs`` says whether a later operand of shape ``b`` goes
    with a first operand of shape ``a`` (None: they broadcast); when none does, the first
    operand is used again, so ``accepts`` must only take shapes that pair with themselves.
    ``operand_dtypes`` casts operands (after their guards) to fixed dtypes, one entry per
    operand (None: keep), for rows whose cases mix dtypes; the domain keeps the value exact.
    Declaring ``dtypes`` says that the guards keep every record of those dtypes from
    showing; a random graph that shows one anyway fails the run."""

    domains: tuple
    params: Callable | None = None
    shape: Callable | None = None
    keep_rank: bool = False
    dtypes: tuple[str, ...] | None = None
    accepts: Callable[[tuple], bool] | None = None
    pairs: Callable[[tuple, tuple], bool] | None = None
    operand_dtypes: tuple[str | None, ...] | None = None

    def __post_init__(self):
        if not self.domains:
            raise ValueError("Composes.domains must give one Domain per operand, got ()")
        if self.operand_dtypes is not None:
            if len(self.operand_dtypes) != len(self.domains):
                raise ValueError(f"Composes.operand_dtypes={self.operand_dtypes!r} must give "
                                 f"one dtype or None per operand ({len(self.domains)})")
            bad = [d for d in self.operand_dtypes if d is not None and d not in ALL_DTYPES]
            if bad:
                raise ValueError(f"Composes.operand_dtypes {bad} invalid; allowed: "
                                 f"{ALL_DTYPES} or None")


@dataclass(frozen=True)
class Row:
    """One op: how to build it, on what inputs, for which dtypes, with which tolerance."""

    name: str
    build: Callable
    cases: CaseFactory
    dtypes: tuple[str, ...]
    tol: Mapping[str, Tol] = field(default_factory=dict)
    known: tuple[Known, ...] = ()
    category: str = ""
    compare_values: bool = True
    code: Callable[[Case], str] | None = None
    #: Random graphs may use the row: True for rows whose cases are elemwise(...) or
    #: reduction(...) (their operands say how), else a Composes that says how.
    compose: bool | Composes = False
    #: Whether -0.0 and 0.0 are told apart,
    #: or a Case -> bool that says it per case (random graphs: per graph).
    signed_zeros: bool | Callable[[Case], bool] = True
    #: The special-value grid for rows whose cases are not elemwise(...) or reduction(...):
    #: a Domain (or a dtype -> Domain function) per leading operand whose elements may take
    #: any value in it, None for one
    #: whose values carry structure (a matrix's definiteness); operands after the tuple (indices,
    #: shapes, however many a case has) are left as drawn. The row's
    #: canonical case is run again with each such operand holding every special value of
    #: its dtype in the domain (one operand at a time, the others as drawn).
    grid: tuple | None = None
    #: A more accurate reference than the Python linker for some dtypes (see Reference).
    reference: Reference | None = None

    def __post_init__(self):
        if not self.name.replace("_", "").isalnum():
            raise ValueError(f"Row.name must be an identifier-like name, got {self.name!r}")
        bad = [d for d in self.dtypes if d not in ALL_DTYPES]
        if bad or not self.dtypes:
            raise ValueError(
                f"Row {self.name!r}: dtypes {bad or '()'} invalid; allowed: {ALL_DTYPES}")
        if self.grid is not None and (not isinstance(self.grid, tuple) or not any(self.grid)):
            raise ValueError(f"Row {self.name!r}: grid must be a tuple of a Domain or None per "
                             f"operand with at least one Domain, got {self.grid!r}")
        if self.reference is not None and (
                extra := [d for d in self.reference.dtypes if d not in self.dtypes]):
            raise ValueError(f"Row {self.name!r}: Reference.dtypes {extra} are not among the "
                             f"row's dtypes {self.dtypes}")
        if isinstance(self.compose, Composes) and self.compose.dtypes:
            extra = [d for d in self.compose.dtypes if d not in self.dtypes]
            if extra:
                raise ValueError(f"Row {self.name!r}: Composes.dtypes {extra} are not among "
                                 f"the row's dtypes {self.dtypes}")

    def xfail(
        self, *, backends: Sequence[str], reason: str, blame: Blame,
        dtypes: Sequence[str] | None = None, example: Callable[[str], Case] | None = None,
        match: str | None = None, when: Callable[[Case], bool] | None = None,
        versions: str | None = None, cause: str | None = None, cpu: str | None = None,
        shared_by: Sequence[str] = (), reported: str | None = None,
    ) -> Row:
        """A copy of the row with one more strict expected failure (chainable)."""
        if isinstance(backends, str):
            raise TypeError(f"xfail(backends=...) takes a sequence of names, got {backends!r}")
        bad = [d for d in dtypes or () if d not in self.dtypes]
        if bad:
            raise ValueError(f"Row {self.name!r}: xfail dtypes {bad} are not among {self.dtypes}")
        known = Known(tuple(backends), reason, blame, tuple(dtypes) if dtypes else None,
                      example, match, when, versions, cause, cpu, tuple(shared_by), reported)
        return dataclasses.replace(self, known=(*self.known, known))

    def xfail_apart(self, record: Mapping, *, backends: Sequence[str], before: str | None,
                    dtypes: Sequence[str] | None = None, shared: bool = False,
                    since: str | None = None) -> Row:
        """``record`` (xfail arguments) with ``backends`` showing it only before PyTensor
        ``before``, or never (None), on ``dtypes`` if given (their other dtypes keep it as it
        is): a record names only the backends that show it, whichever run beside them. With
        ``since`` (and ``before=None``) they show it from that release on instead. With
        ``shared``, those backends run the reference's own faulty code there: they agree with
        it where it is wrong, which the record then expects of them (``shared_by``)."""
        mine = tuple(b for b in record["backends"] if b in backends)
        if since is not None:
            if before is not None or shared:
                raise ValueError("xfail_apart: since= goes with before=None and no shared=")
            row = self.xfail_apart(record, backends=backends, before=None, dtypes=dtypes)
            return row.xfail(**{**since_release(record, since), "backends": mine,
                                **({"dtypes": tuple(dtypes)} if dtypes is not None else {})})
        rest = tuple(b for b in record["backends"] if b not in backends)
        if shared:
            apart = tuple(dtypes or record.get("dtypes") or self.dtypes)
            kept = tuple(d for d in record.get("dtypes") or self.dtypes if d not in apart)
            row = self.xfail(**{**record, "dtypes": kept}) if kept else self
            return row.xfail(**{**record, "backends": rest, "dtypes": apart, "shared_by": mine})
        row = self.xfail(**{**record, "backends": rest}) if rest else self
        if dtypes is not None:
            kept = tuple(d for d in record.get("dtypes") or self.dtypes if d not in dtypes)
            if kept:
                row = row.xfail(**{**record, "backends": mine, "dtypes": kept})
        if before is None:
            return row
        return row.xfail(**fixed_in({**record, "backends": mine}, before, dtypes))

    def judges_zero_signs(self, case: Case) -> bool:
        if callable(self.signed_zeros):
            return bool(self.signed_zeros(case))
        return self.signed_zeros

    def tolerance(self, dtype: str) -> Tol:
        if np.dtype(dtype).kind not in "fc":
            return EXACT
        return self.tol.get(dtype, DEFAULT_TOL.get(dtype, EXACT))

    def expected(self, dtype: str, values: tuple[np.ndarray, ...], outputs):
        """The expected outputs: the Python linker's ``outputs``, refined by the row's
        ``reference`` where it computes ``dtype`` (a raised exception stays as it is)."""
        if (self.reference is None or dtype not in self.reference.dtypes
                or isinstance(outputs, BaseException)):
            return outputs
        return self.reference.compute(values, outputs)

    def known_for(self, dtype: str) -> tuple[Known, ...]:
        """The records that concern ``dtype``, active or not (see ``Known.active``)."""
        return tuple(k for k in self.known if k.applies(dtype))

    def test_ids(self) -> list[str]:
        return [f"{self.name}[{d}]" for d in self.dtypes]


#: the ONNX Runtime backends that convert a graph PyTensor rewrote: the default mode's graph
#: as function_to_onnx exports it, and the ONNX mode's own (pytensor.function(mode="ONNX"))
REWRITTEN_ONNX = ("onnxruntime-rewritten", "pytensor-onnx")
ORT_BACKENDS = ("onnxruntime", "onnxruntime-noopt", *REWRITTEN_ONNX)
ONNX_BACKENDS = (*ORT_BACKENDS, "onnx-reference")
#: PyTensor's C code, without and with its default rewrites: a bug in an op's C code shows on
#: both unless a rewrite removes the op
C_BACKENDS = ("pytensor-c", "pytensor-c-opt")
#: PyTensor's Numba kernels, without and with the NUMBA mode's rewrites (PyTensor 3's default)
NUMBA_BACKENDS = ("pytensor-numba", "pytensor-numba-opt")
#: PyTensor's JAX backend (optional: jax installed)
JAX_BACKENDS = ("pytensor-jax", "pytensor-jax-opt")
#: every backend that compiles the graph with PyTensor: where the Python reference itself is
#: wrong, each of them disagrees with it
PYTENSOR_COMPILED = (*C_BACKENDS, *NUMBA_BACKENDS, *JAX_BACKENDS)
#: every backend but the reference: for records of the reference's own faults
NOT_REFERENCE = (*PYTENSOR_COMPILED, *ONNX_BACKENDS)


def without_numba(backends: tuple[str, ...]) -> tuple[str, ...]:
    """``backends`` but the Numba pair: for a fault of the reference that Numba's kernel
    shares, so that Numba agrees with the reference and never shows it."""
    return tuple(b for b in backends if b not in NUMBA_BACKENDS)


ALL_DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
)


def since_release(record: Mapping, release: str) -> dict:
    """``record`` (xfail arguments) showing from PyTensor ``release`` on: its ``versions``
    narrowed to ``>=release``, kept with what it had."""
    bound = record.get("versions")
    if bound is not None and releases.parse_requirement(bound).name != "pytensor":
        raise ValueError(f"since_release bounds PyTensor releases; the record names {bound!r}")
    return {**record, "versions": f"pytensor>={release}" if bound is None
            else f"{bound},>={release}"}


def fixed_in(record: dict, release: str, dtypes: tuple[str, ...] | None = None) -> dict:
    """``record`` (xfail arguments) ending before PyTensor ``release``, which fixed it: its
    ``versions`` narrowed to ``<release`` (kept with what it had, e.g. ``pytensor>=3`` becomes
    ``pytensor>=3,<3.3``), and its dtypes narrowed to ``dtypes`` where only those are fixed
    (the record's others stay in a record of their own)."""
    bound = record.get("versions")
    if bound is not None and releases.parse_requirement(bound).name != "pytensor":
        raise ValueError(f"fixed_in bounds PyTensor releases; the record names {bound!r}")
    narrowed = {**record, "versions": f"pytensor<{release}" if bound is None
                else f"{bound},<{release}"}
    if dtypes is not None:
        narrowed["dtypes"] = tuple(dtypes)
    return narrowed

