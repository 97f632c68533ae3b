"""Checks for JSON the conformance command reads from disk (results lines, results files,
bundle metadata), so that a bad file is refused with one line saying where the bad value
sits, what it is and what was expected, instead of a traceback from code further on.

A schema is built from small parts (``ListOf(STRING)``, ``Obj(required={...})``) and applied
with :func:`validate`. Objects may hold keys a schema does not name: readers must not fail on
keys they do not know (docs/results-schema.md).
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from collections.abc import Callable

#: Deepest nesting accepted; the results and bundle formats need fewer than ten levels,
#: and deeper values would exhaust the stack of the recursive code that reads them later.
MAX_DEPTH = 64

_REPR = reprlib.Repr()
_REPR.maxstring = 40
_REPR.maxother = 40
_REPR.maxlist = _REPR.maxdict = 4
_REPR.maxlevel = 2


class Invalid(ValueError):
    """Data read from a file is unusable; the message says what is wrong and what is expected."""


def describe(value) -> str:
    """A JSON value as a reader would name it: ``an integer (5)``, ``a string ('ab')``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    kind = ("an integer" if isinstance(value, int) else "a number" if isinstance(value, float)
            else "a string" if isinstance(value, str) else "a list" if isinstance(value, list)
            else "an object" if isinstance(value, dict) else f"a {type(value).__name__}")
    if isinstance(value, int):
        text = str(value) if value.bit_length() < 64 else f"{str(value)[:20]}..."
    else:
        text = _REPR.repr(value)
    return f"{kind} ({text})"


def one_line(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` of an exception from other code, on one line and cut at ``limit``."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def parse(data: bytes, what: str):
    """The JSON value in ``data``; Invalid, naming ``what``, for anything else."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Invalid(f"{what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                      f"{exc.start}); expected JSON") from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise Invalid(f"{what} nests lists or objects deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise Invalid(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column "
                      f"{exc.colno}") from None
    # e.g. an integer literal longer than Python converts (sys.get_int_max_str_digits)
    except ValueError as exc:
        raise Invalid(f"{what} is not valid JSON: {exc}") from None
    # fewer brackets than levels allowed (the usual line) cannot nest too deep: skip the walk
    if text.count("[") + text.count("{") > MAX_DEPTH and _too_deep(value):
        raise Invalid(f"{what} nests lists or objects deeper than {MAX_DEPTH} levels")
    return value


def _too_deep(value) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


class _Mismatch(Exception):
    def __init__(self, path: tuple, value, expected: str, missing: str | None = None):
        super().__init__()
        self.path, self.value, self.expected, self.missing = path, value, expected, missing

    def render(self, root: str) -> str:
        where = _where(self.path, root)
        if self.missing is not None:
            return f"{where} has no {self.missing!r} ({self.expected})"
        return f"{where} is {describe(self.value)}; expected {self.expected}"


def _where(path: tuple, root: str) -> str:
    if not path:
        return root
    text = ""
    for key in path:
        if isinstance(key, int):
            text += f"[{key}]"
        elif re.fullmatch(r"[A-Za-z_]\w*", key):
            text += f".{key}" if text else key
        else:
            text += f"[{key!r}]"
    return text


def validate(schema: Schema, value, root: str = "the value") -> None:
    """Raise Invalid if ``value`` does not fit ``schema``; ``root`` names the whole value."""
    try:
        schema.check(value, ())
    except _Mismatch as exc:
        raise Invalid(exc.render(root)) from None


class Schema:
    expected = "a value"

    def check(self, value, path: tuple) -> None:
        raise NotImplementedError


class Is(Schema):
    """Any value ``test`` accepts."""

    def __init__(self, test: Callable[[object], bool], expected: str):
        self.test, self.expected = test, expected

    def check(self, value, path):
        if not self.test(value):
            raise _Mismatch(path, value, self.expected)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def ints(low: int | None = None, high: int | None = None) -> Is:
    if low is None and high is None:
        return Is(_is_int, "an integer")
    shown = f"an integer from {low} to {high}" if high is not None else f"an integer >= {low}"
    return Is(lambda v: _is_int(v) and (low is None or v >= low) and (high is None or v <= high),
              shown)


ANY = Is(lambda v: True, "any JSON value")
STRING = Is(lambda v: isinstance(v, str), "a string")
BOOL = Is(lambda v: isinstance(v, bool), "true or false")
#: Counts stay where float arithmetic on them (rates, medians) cannot overflow.
COUNT = ints(0, 2**53)
#: Numbers a float can hold: a longer integer would overflow float() further on.
NUMBER = Is(lambda v: isinstance(v, float) or (_is_int(v) and abs(v) < 2**1000), "a number")
#: For values drawn on a scale or rounded to an integer in the report.
FINITE = Is(lambda v: NUMBER.test(v) and math.isfinite(v), "a finite number")


class Literal(Schema):
    def __init__(self, *values: str):
        self.values = values
        self.expected = "one of " + ", ".join(map(repr, values))

    def check(self, value, path):
        if not isinstance(value, str) or value not in self.values:
            raise _Mismatch(path, value, self.expected)


class Nullable(Schema):
    def __init__(self, inner: Schema):
        self.inner, self.expected = inner, f"null or {inner.expected}"

    def check(self, value, path):
        if value is not None:
            self.inner.check(value, path)


class Either(Schema):
    def __init__(self, *options: Schema):
        self.options = options
        self.expected = " or ".join(o.expected for o in options)

    def check(self, value, path):
        for option in self.options:
            try:
                option.check(value, path)
            except _Mismatch:
                continue
            return
        raise _Mismatch(path, value, self.expected)


class AllOf(Schema):
    """Every one of ``parts`` (checked in order: the first names the value's type)."""

    def __init__(self, *parts: Schema):
        self.parts = parts
        self.expected = " and ".join(p.expected for p in parts)

    def check(self, value, path):
        for part in self.parts:
            part.check(value, path)


class ListOf(Schema):
    def __init__(self, item: Schema, *, min_items: int = 0):
        self.item, self.min_items = item, min_items
        least = {0: "", 1: "non-empty "}.get(min_items, f"{min_items}+ item ")
        self.expected = f"a {least}list of items, each {item.expected}"

    def check(self, value, path):
        if not isinstance(value, list) or len(value) < self.min_items:
            raise _Mismatch(path, value, self.expected)
        for i, item in enumerate(value):
            self.item.check(item, (*path, i))


class Tuple(Schema):
    """A list of fixed length, one schema per position."""

    def __init__(self, *items: Schema):
        self.items = items
        self.expected = f"a list of {len(items)} items: " + ", ".join(i.expected for i in items)

    def check(self, value, path):
        if not isinstance(value, list) or len(value) != len(self.items):
            raise _Mismatch(path, value, self.expected)
        for i, (item, schema) in enumerate(zip(value, self.items, strict=True)):
            schema.check(item, (*path, i))


class MapOf(Schema):
    """An object whose every value fits ``value`` (and every key ``key``, when given)."""

    def __init__(self, value: Schema, *, key: Schema | None = None):
        self.value, self.key = value, key
        keys = f" with keys {key.expected}" if key else ""
        self.expected = f"an object{keys} whose values are each {value.expected}"

    def check(self, value, path):
        if not isinstance(value, dict):
            raise _Mismatch(path, value, self.expected)
        for k, v in value.items():
            if self.key is not None:
                self.key.check(k, (*path, k))
            self.value.check(v, (*path, k))


class Obj(Schema):
    """An object with ``required`` keys and possibly ``optional`` ones, each checked."""

    def __init__(self, required: dict | None = None, optional: dict | None = None,
                 expected: str = "an object"):
        self.required, self.optional = required or {}, optional or {}
        self.expected = expected

    def check(self, value, path):
        if not isinstance(value, dict):
            raise _Mismatch(path, value, self.expected)
        for key, schema in self.required.items():
            if key not in value:
                raise _Mismatch(path, value, schema.expected, missing=key)
            schema.check(value[key], (*path, key))
        for key, schema in self.optional.items():
            if key in value:
                schema.check(value[key], (*path, key))


def matching(pattern: str, expected: str) -> Is:
    regex = re.compile(pattern)
    return Is(lambda v: isinstance(v, str) and regex.fullmatch(v) is not None, expected)
