"""Versions as data: which releases a recorded divergence holds for, and which releases the
registry's records were last checked against.

A record (``Known``) names the package at fault through its blame, or explicitly through a PEP
440 requirement such as ``"onnxruntime<1.32"``. On an installed release outside that
requirement the record is inactive: its example still runs, and must pass. On a release newer
than any in :data:`CHECKED`, a record whose example passes is reported as *fixed upstream?*
rather than failing the run, because nobody has looked at that release yet; ``--strict-records``
(the nightly pre-release job) fails instead.
"""

from __future__ import annotations

import functools
from importlib import metadata

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

#: The newest release of each package that every record was checked against (a full default
#: run, green). Raise an entry only after such a run on that release.
CHECKED: dict[str, str] = {
    "onnxruntime": "1.32.0",
    "onnx": "1.23.2",
    "pytensor": "3.3.8",
    "numpy": "2.5.5",
}

#: The package a blame points at, for records that do not name one.
BLAMED_PACKAGE: dict[str, str] = {
    "onnxruntime": "onnxruntime",
    "onnxruntime-optimizer": "onnxruntime",
    "onnx-reference": "onnx",
    "pytensor": "pytensor",
}


@functools.cache
def installed(package: str) -> Version | None:
    """The installed release of ``package``, or None when it is not installed."""
    try:
        return Version(metadata.version(package))
    except (metadata.PackageNotFoundError, InvalidVersion):
        return None


def parse_requirement(text: str) -> Requirement:
    """``text`` as a requirement on one of the packages in :data:`CHECKED`."""
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise ValueError(f"versions={text!r} is not a PEP 440 requirement such as "
                         f"'onnxruntime<1.32': {exc}") from None
    if req.name not in CHECKED:
        raise ValueError(f"versions={text!r} names {req.name!r}; records may bound only "
                         f"{sorted(CHECKED)}")
    if not req.specifier:
        raise ValueError(f"versions={text!r} has no version specifier; give one such as "
                         f"'{req.name}<2' or leave versions out")
    return req


def holds(requirement: str | None) -> bool:
    """Whether the installed release satisfies ``requirement`` (None: every release does)."""
    if requirement is None:
        return True
    req = parse_requirement(requirement)
    version = installed(req.name)
    return version is not None and req.specifier.contains(version, prereleases=True)


def beyond_checked(package: str | None) -> str | None:
    """``"onnxruntime 1.33.0"`` when the installed ``package`` is newer than the release the
    records were checked against, else None (also for None or an unknown package)."""
    if package is None or package not in CHECKED:
        return None
    version = installed(package)
    if version is None or version <= Version(CHECKED[package]):
        return None
    return f"{package} {version}"
