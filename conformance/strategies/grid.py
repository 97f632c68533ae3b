"""Special-value grids: a few deterministic cases per cell that hold every special value of
the dtype inside each operand's domain, so that no test leaves nan, ±inf, ±0.0, ties or the
dtype's extremes to chance.

One operand gets one 1-d array of all its values. Several operands get arrays of equal
length where every pair of values of every two operands meets at some element (an
orthogonal array of strength 2: ``p * p`` elements for the smallest prime ``p`` at least as
large as the longest list), so a binary op sees each (x, y) pair of classes exactly once.
"""

from __future__ import annotations

import math

import numpy as np

from conformance.registry import Case
from conformance.strategies.cases import elemwise, reduction
from conformance.strategies.values import Domain, special_values


def domain_edges(dtype, domain: Domain) -> list:
    """The finite bounds of ``domain`` for ``dtype`` (where careless rules break first)."""
    return [b for b in domain.bounds(np.dtype(dtype)) if b is not None and math.isfinite(b)]


def grid_values(dtype, domain: Domain) -> list:
    """The special values of ``dtype`` and the edges of ``domain``, those inside it only,
    each once (-0.0 and 0.0 are different values here)."""
    dtype = np.dtype(dtype)
    candidates = [*special_values(dtype), *domain_edges(dtype, domain)]
    if dtype.kind == "f":  # the random draws' specials are positive at the bottom
        info = np.finfo(dtype)
        candidates += [-float(info.tiny), -float(info.smallest_subnormal)]
    found: dict = {}
    for v in candidates:
        if dtype != np.bool_ and not domain.contains(v, dtype):
            continue
        value = dtype.type(v)
        key = value.tobytes()  # tells -0.0 from 0.0, and nan from nothing else
        found.setdefault(key, value)
    return list(found.values())


def _prime_at_least(n: int) -> int:
    p = max(n, 2)
    while any(p % d == 0 for d in range(2, math.isqrt(p) + 1)):
        p += 1
    return p


def pairwise(lengths: list[int]) -> list[np.ndarray]:
    """Index arrays, one per operand, of equal length, such that every pair of indices of
    every two operands occurs at some position (one operand: each index once)."""
    if len(lengths) == 1:
        return [np.arange(lengths[0])]
    p = _prime_at_least(max(lengths))
    a, b = (g.ravel() for g in np.meshgrid(np.arange(p), np.arange(p), indexing="ij"))
    rows = [b, *((a + k * b) % p for k in range(len(lengths) - 1))]
    # Folding p values onto n <= p keeps every pair: the pairs below n are all there.
    return [r % n for r, n in zip(rows, lengths, strict=True)]


def _operands(dtype, domains) -> tuple[np.ndarray, ...] | None:
    lists = [grid_values(dtype, d) for d in domains]
    if not all(lists):
        return None
    return tuple(np.array(vs, dtype=dtype)[i]
                 for vs, i in zip(lists, pairwise([len(v) for v in lists]), strict=True))


def grid_cases(factory, dtype: str, *, base: Case | None = None,
               domains: tuple | None = None) -> list[Case]:
    """The grid cases of a row's case ``factory`` at ``dtype``: from the domains an
    elemwise or reduction factory declares, else ``domains`` (the row's ``grid``) filled into
    ``base`` (the cell's canonical case); none for rows that declare neither."""
    if isinstance(factory, elemwise):
        values = _operands(dtype, factory.domains)
        return [] if values is None else [Case(values, tuple((None,) for _ in values))]
    if isinstance(factory, reduction):
        values = _operands(dtype, (factory.domain, factory.domain))
        if values is None:
            return []
        # every pair of special values reduced together, and all of them at once
        pairs = np.stack(values, axis=-1)
        return [Case((pairs,), ((None, None),), (("axis", -1),)),
                Case((values[0],), ((None,),), (("axis", None),))]
    if domains is None or base is None:
        return []
    return filled(base, domains)


def filled(base: Case, domains: tuple) -> list[Case]:
    """``base`` with each operand that has a domain holding its dtype's grid values in turn
    (``domains`` covers the leading operands: those after it, indices or shapes, stay),
    as many cases as its shape needs to hold them all, and each again rotated by one element
    where the operand has several, so that no value is seen only first (ONNX Runtime's
    ReduceMax keeps a nan only there); the other operands, the shapes and the params stay,
    so the cases share the base's compiled graph."""
    if len(domains) > len(base.values):
        raise ValueError(f"grid: {len(domains)} domains for a case of {len(base.values)} "
                         "operands; give one Domain or None per leading operand")
    cases = []
    for i, (value, domain) in enumerate(zip(base.values, domains, strict=False)):
        if domain is None or value.size == 0 or value.dtype.kind not in "fiu":
            continue
        if callable(domain):  # a domain that depends on the operand's dtype
            domain = domain(str(value.dtype))
        specials = grid_values(value.dtype, domain)
        for start in range(0, len(specials), value.size):
            chunk = np.resize(np.array(specials[start:start + value.size], value.dtype),
                              value.size)  # the last chunk repeats its values to fill
            for placed in ((chunk, np.roll(chunk, 1)) if value.size > 1 else (chunk,)):
                values = list(base.values)
                values[i] = placed.reshape(value.shape)
                cases.append(Case(tuple(values), base.static, base.params))
    return cases


def element(case: Case, index: int) -> Case | None:
    """The case cut down to element ``index`` of its operands, when they are 1-d of one
    length (elemwise grid cases); else None."""
    lengths = {v.shape for v in case.values}
    if len(lengths) != 1 or len(next(iter(lengths))) != 1 or case.params:
        return None
    if not 0 <= index < case.values[0].shape[0]:
        return None
    return Case(tuple(v[index:index + 1] for v in case.values), case.static, case.params)
