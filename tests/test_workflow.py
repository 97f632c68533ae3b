"""The nightly workflow is a valid GitHub Actions workflow (checked against the schema that
check-jsonschema vendors, offline) and judges every release line the project supports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("ruamel.yaml", reason="check-jsonschema (the test extra) brings it")

NIGHTLY = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "nightly.yml"


def _workflow() -> dict:
    return yaml.YAML(typ="safe").load(NIGHTLY.read_text())


def test_nightly_workflow_validates_against_the_github_workflow_schema():
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
         str(NIGHTLY)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{NIGHTLY.name} fails the workflow schema:\n{done.stdout}" \
                                 f"{done.stderr}"


def test_nightly_runs_the_newest_line_on_python_312_and_313_and_pre_releases_on_the_newest():
    jobs = _workflow()["jobs"]
    shard = jobs["shard"]["strategy"]["matrix"]
    python_of = {entry["versions"]: entry["python"] for entry in shard["include"]}
    unnamed = sorted(set(shard["versions"]) ^ set(python_of))
    assert not unnamed, f"every conformance line names its Python: {unnamed}"
    release_pythons = {python_of[v] for v in shard["versions"] if v.startswith("release")}
    assert {"3.11", "3.12", "3.13"} <= release_pythons, release_pythons
    newest = max(python_of.values(), key=lambda v: tuple(map(int, v.split("."))))
    assert python_of["pre-release"] == newest, (
        f"pre-releases run on Python {python_of['pre-release']}, not the newest ({newest})")
    own = {e["python"] for e in jobs["own-tests"]["strategy"]["matrix"]["include"]}
    assert {"3.11", "3.12", "3.13"} <= own, own
    merged = set(jobs["merge"]["strategy"]["matrix"]["versions"])
    assert merged == set(shard["versions"]), f"lines sharded but never merged: {merged}"
