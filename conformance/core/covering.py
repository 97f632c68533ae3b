"""Which of a cell's records explain a backend's disagreement with the reference: a record
excuses only what it describes, judged on the elements that disagreed where the row can say
which operand elements made them (elementwise rows), on the whole case otherwise."""

from __future__ import annotations

import re

from conformance.backends import ConversionFailed
from conformance.core.oracle import describe_error
from conformance.registry import MAX_JUDGED_ELEMENTS, Case, Known


def covers(k: Known, backend: str, message: str, actual, case: Case, *, refused: bool,
           records_refusals: bool, where: dict) -> bool:
    """Whether record ``k`` explains the disagreement. A failed conversion only by a
    ``match`` on what the converter raised: a record of wrong values, or of what the
    reference does, never excuses a refusal (``refused``) or a crash. The records describe
    the project's converter, so another converter's refusal is never theirs
    (``records_refusals``)."""
    if not isinstance(actual, ConversionFailed):
        return k.covers(backend, message, case, **where)
    if refused and not records_refusals:
        return False
    return k.match is not None and k.covers(backend, f"{backend} raised "
                                            f"{describe_error(actual)}", case)


def shared_fault(known, backend: str, case: Case) -> Known | None:
    """The record of a reference fault that ``backend`` shares (``Known.shared_by``) and
    that holds on ``case``: the backend agreed with the reference there, which is as wrong."""
    return next((k for k in known if backend in k.shared_by
                 and (k.when is None or k.when(case))), None)


def covering_together(known, backend: str, message: str, case: Case, where: dict) -> tuple:
    """The records that between them describe every disagreeing element (each element by
    at least one of them: a nan by one record, a tiny value by another), or () if some
    element is described by none."""
    shape, elements = where["shape"], where["elements"][:MAX_JUDGED_ELEMENTS]
    narrowed = [case.at_element(shape, i) for i in elements]
    if not narrowed or any(c is None for c in narrowed):
        return ()
    fitting = [k for k in known if k.covers(backend, message, case, shape=shape, elements=())
               or (k.when is not None and backend in k.backends
                   and (k.match is None or re.search(k.match, message)))]
    used = []
    for c in narrowed:
        k = next((k for k in fitting if k.when is None or k.when(c)), None)
        if k is None:
            return ()
        if k not in used:
            used.append(k)
    return tuple(used)
