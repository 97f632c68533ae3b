"""The documentation: a short README whose links lead somewhere, and files that speak of the
project, never of how its work was organised."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_README_LINES = 300

#: Words about the project's own working process: numbered work sessions and helper
#: processes or agents. An onnxruntime InferenceSession, a pytest session or a --session
#: option are none of these: the pattern needs a number after "session", or "helper" followed
#: by what a helper would be, and an option (``--session 3``) is spared.
DEV_PROCESS = re.compile(
    r"(?<![-.])\bsessions? \d+\b"
    r"|\bhelper(?:'s|s'?)? (?:process|session|agent|run)(?:es|s)?\b"
    r"|\bsub-?agents?\b",
    re.IGNORECASE,
)

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def _project_files() -> list[Path]:
    """Tracked files and new ones git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True).stdout.decode()
    return sorted({ROOT / name for name in listed.split("\0") if name})


def _text(path: Path) -> str | None:
    """The file's text, or None for a binary file (or one deleted from the work tree)."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _outside_code_blocks(text: str) -> list[str]:
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a markdown file."""
    anchors = set()
    for line in _outside_code_blocks(path.read_text(encoding="utf-8")):
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, (
        f"README.md has {lines} lines, more than {MAX_README_LINES}: move detail to docs/ and "
        f"link to it")


def test_no_file_speaks_of_development_sessions_or_helpers():
    hits = []
    for path in _project_files():
        text = None if path == Path(__file__).resolve() else _text(path)  # the pattern's examples
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if DEV_PROCESS.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, ("these lines speak of how the work was organised, not of the project; "
                      "say what is true of the project instead:\n" + "\n".join(hits))


def test_the_pattern_spares_other_sessions():
    for fine in ("an onnxruntime.InferenceSession", "the pytest session's cache",
                 "pass --session 3 to it", "a helper function", "the helpers module"):
        assert not DEV_PROCESS.search(fine), fine
    for flagged in ("cold, 2026-11-27 (session 18)", "sessions 6 to 10",
                    "four helper processes' runs", "a helper's run beside it", "a sub-agent"):
        assert DEV_PROCESS.search(flagged), flagged


@pytest.mark.parametrize("document", [README, *sorted((ROOT / "docs").glob("*.md"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_existing_files(document):
    broken = []
    for line in _outside_code_blocks(document.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            path = (document.parent / file_part).resolve() if file_part else document
            if not path.exists():
                broken.append(f"{target}: no file {path.relative_to(ROOT)}")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{target}: no heading for #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, f"broken links in {document.relative_to(ROOT)}:\n" + "\n".join(broken)
