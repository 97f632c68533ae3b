"""``conformance bisect``: in which releases of the package at fault a divergence shows.

A record is named ``row:index`` (its position in ``row.known``, as ``conformance upstream``
lists them), ``row[dtype]`` (the row's one upstream record for that dtype) or
``row[dtype]:index``; a repro bundle folder names an unrecorded failure. Its standalone
script (conformance.upstream.issues) runs in one throw-away environment per release, cached under
``~/.cache/conformance-bisect/NAME-VERSION`` (uv when installed, else venv + pip), and a
binary search over the releases PyPI lists with a wheel for this Python finds:

- ``fixed``: the first release that no longer shows it (when the oldest tested shows it and
  the newest does not), or
- ``since``: the first release that shows it (when the oldest tested does not and the newest
  does), and always ``first_shown``: the earliest tested release that shows it.

The search assumes one change of status between the oldest and the newest release tested. A
release that cannot be installed, or whose script cannot judge (status 3: it cannot load
the model), is reported and left out, and its neighbours are tried instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

CACHE = Path(os.environ.get("CONFORMANCE_BISECT_CACHE",
                            Path.home() / ".cache" / "conformance-bisect"))
BUG, FIXED = "bug", "fixed"


class BisectError(Exception):
    """A record, bundle or package that cannot be bisected (the message says why)."""


@dataclass
class Result:
    package: str
    tested: dict[str, str] = field(default_factory=dict)  # version -> bug/fixed/why not
    fixed: str | None = None
    since: str | None = None
    first_shown: str | None = None

    @property
    def suggestion(self) -> str | None:
        """The record's ``versions=`` string this result suggests."""
        parts = ([f">={self.since}"] if self.since else []) + (
            [f"<{self.fixed}"] if self.fixed else [])
        return f"{self.package}{','.join(parts)}" if parts else None

    def as_dict(self) -> dict:
        return {"package": self.package, "tested": self.tested, "fixed": self.fixed,
                "since": self.since, "first_shown": self.first_shown,
                "versions": self.suggestion}


def search(releases: list[str], judge: Callable[[str], str | None], package: str) -> Result:
    """Binary search over ``releases`` (oldest first); ``judge`` returns BUG, FIXED or a
    reason it could not judge (that release is left out)."""
    result = Result(package)
    versions = list(releases)

    def status(i: int) -> str | None:
        version = versions[i]
        if version not in result.tested:
            result.tested[version] = judge(version)
        found = result.tested[version]
        return found if found in (BUG, FIXED) else None

    def end(index_of: Callable[[], int]) -> str | None:
        while versions:
            i = index_of()
            found = status(i)
            if found:
                return found
            del versions[i]
        return None

    first = end(lambda: 0)
    last = end(lambda: len(versions) - 1)
    if first is None or last is None:
        return result
    if first != last:
        lo, hi = 0, len(versions) - 1  # status(lo) == first, status(hi) == last
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = status(mid)
            if found is None:
                del versions[mid]
                hi -= 1
                continue
            lo, hi = (mid, hi) if found == first else (lo, mid)
        if first == BUG:
            result.fixed = versions[hi]
        else:
            result.since = versions[hi]
    shown = [v for v in releases if result.tested.get(v) == BUG]
    result.first_shown = shown[0] if shown else None
    return result


# ---- releases and environments ---------------------------------------------------------

def releases(package: str, *, low: str | None = None, high: str | None = None) -> tuple[
        list[str], dict[str, str]]:
    """(final releases with a wheel for this Python, oldest first; skipped -> why) from PyPI."""
    url = f"https://pypi.org/pypi/{package}/json"
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            data = json.load(reply)
    except OSError as exc:
        raise BisectError(f"cannot list {package}'s releases from {url}: {exc}") from None
    tags = set(sys_tags())
    found, skipped = [], {}
    for text, files in data.get("releases", {}).items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if version.is_prerelease or (low and version < Version(low)) or (
                high and version > Version(high)):
            continue
        if not any(_fits(f.get("filename", ""), tags) for f in files if not f.get("yanked")):
            skipped[text] = (f"no wheel for this Python ({sys.implementation.cache_tag}, "
                             f"{sys.platform})")
            continue
        found.append(version)
    return [str(v) for v in sorted(found)], skipped


def _fits(filename: str, tags) -> bool:
    if not filename.endswith(".whl"):
        return False
    try:
        return bool(parse_wheel_filename(filename)[3] & tags)
    except InvalidWheelFilename:
        return False


def environment(package: str, version: str, log: Callable[[str], None]) -> Path:
    """The cached environment's python with ``package==version`` installed (built once)."""
    folder = CACHE / f"{package}-{version}"
    python = folder / "bin" / "python"
    if (folder / ".complete").is_file():
        return python
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    log(f"installing {package}=={version} into {folder}")
    uv = shutil.which("uv")
    if uv:
        steps = [[uv, "venv", "-q", "--python", sys.executable, str(folder)],
                 [uv, "pip", "install", "-q", "--python", str(python), f"{package}=={version}"]]
    else:
        steps = [[sys.executable, "-m", "venv", str(folder)],
                 [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                  "--only-binary=:all:", f"{package}=={version}"]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode:
            shutil.rmtree(folder, ignore_errors=True)
            lines = (done.stderr or done.stdout).strip().splitlines()
            reason = next((ln for ln in reversed(lines) if "ERROR" in ln or "error" in ln),
                          lines[-1] if lines else f"exit {done.returncode}")
            raise BisectError(f"cannot install {package}=={version}: {reason.strip()}")
    (folder / ".complete").write_text(version, encoding="utf-8")
    return python


def judge_with(script: Path, package: str, log: Callable[[str], None],
               install: Callable = environment) -> Callable[[str], str]:
    """A judge that runs ``script`` in each release's environment (status 1: bug)."""
    from conformance.upstream.issues import run_clean

    def judge(version: str) -> str:
        try:
            python = install(package, version, log)
        except BisectError as exc:
            log(str(exc))
            return f"not installed: {exc}"
        code, output = run_clean(script, python=str(python), timeout=900)
        verdict = {1: BUG, 0: FIXED}.get(code)
        if verdict is None:
            tail = output.strip().splitlines()[-1:] or [""]
            verdict = f"cannot judge (exit {code}): {tail[0][:200]}"
        log(f"{package} {version}: {verdict}")
        return verdict

    return judge


# ---- which record ----------------------------------------------------------------------

_NAME = re.compile(r"^(?P<row>\w+)(?:\[(?P<dtype>\w+)\])?(?::(?P<index>\d+))?$")


def resolve(name: str, rows, opset: int, package: str | None = None):
    """The upstream Cell a name picks (see the module docstring); with ``package``, among
    the records that package is at fault for."""
    from conformance.upstream.issues import UPSTREAM, Cell

    match = _NAME.match(name)
    if not match or not (match["dtype"] or match["index"]):
        raise BisectError(f"{name!r} names no record; expected row:index (e.g. sign:0), "
                          "row[dtype] (e.g. sign[int64]) or a repro bundle folder")
    by_name = {row.name: row for row in rows}
    row = by_name.get(match["row"])
    if row is None:
        raise BisectError(f"{name!r}: no registry row named {match['row']!r}")
    from conformance.upstream.issues import blamed_package

    upstream = [i for i, k in enumerate(row.known) if k.blame in UPSTREAM
                and (package is None or blamed_package(k) == package)]
    if match["index"] is not None:
        index = int(match["index"])
        if index not in upstream:
            raise BisectError(f"{name!r}: row {row.name!r} has upstream records "
                              f"{', '.join(map(str, upstream)) or 'none'}")
    else:
        fitting = [i for i in upstream if row.known[i].applies(match["dtype"])]
        if len(fitting) != 1:
            listed = "; ".join(f"{row.name}:{i} ({row.known[i].reason})" for i in fitting)
            at_fault = f" that {package} is at fault for" if package else ""
            raise BisectError(f"{name!r}: {len(fitting)} upstream records{at_fault} concern "
                              f"{match['dtype']}" + (f"; pick one of {listed}" if fitting
                                                     else ""))
        index = fitting[0]
    known = row.known[index]
    dtype = match["dtype"] or next(d for d in row.dtypes if known.applies(d))
    if not known.applies(dtype) or dtype not in row.dtypes:
        raise BisectError(f"{name!r}: record {row.name}:{index} does not concern {dtype}")
    return Cell(row, index, dtype, opset)


def bundle_cell(folder: Path, rows):
    """A Cell for an unrecorded failure in a repro bundle: a record made up from it."""
    import dataclasses

    from conformance.core.bundle import load_case
    from conformance.registry import Blame, Known
    from conformance.upstream.issues import UPSTREAM, Cell

    meta, case = load_case(folder)
    if meta.get("blame") not in {str(b) for b in UPSTREAM}:
        raise BisectError(f"{folder}: the bundle's blame is {meta.get('blame')!r}; only an "
                          "upstream bug (onnxruntime, onnx-reference, pytensor) is bisected")
    row = {r.name: r for r in rows}[meta["row"]]
    failing = [b for b in meta["backends"] if b != "pytensor-py"
               and re.search(rf"(^|\n){re.escape(b)}\b", meta.get("message", ""))]
    known = Known(tuple(failing or meta["backends"][1:]), f"unrecorded: {meta['case']}",
                  Blame(meta["blame"]), example=lambda _dtype: case)
    row = dataclasses.replace(row, known=(*row.known, known))
    return Cell(row, len(row.known) - 1, meta["dtype"], int(meta["opset"]))
