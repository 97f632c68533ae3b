#!/usr/bin/env python3
"""Project tasks that need nothing but python3 (>= 3.11) and a C compiler.

    python3 dev.py report [pytest args]   # conformance run -> reports/conformance.html
    python3 dev.py test [pytest args]     # the project's own tests
    python3 dev.py lint                   # ruff
    python3 dev.py bench [pytest args]    # benchmarks (pytest-benchmark)

The first call makes a virtual environment in .venv (or $CONFORMANCE_VENV) and installs the
project into it; later calls reinstall only when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("CONFORMANCE_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")

COMMANDS = {
    "report": ["-m", "pytest", "conformance", "-n", "auto"],
    "test": ["-m", "pytest", "tests", "-n", "auto"],
    "lint": ["-m", "ruff", "check", "."],
    "bench": ["-m", "pytest", "benchmarks", "--benchmark-only", "-p", "no:xdist"],
}


def ensure_venv() -> Path:
    python = BIN / "python"
    if VENV.is_file():  # a PEP 832 redirect file (recent tox releases write one)
        target = VENV.read_text(errors="replace").strip()
        sys.exit(f"{VENV} is a file pointing at {target!r} (a PEP 832 redirect, as tox writes), "
                 f"not a virtual environment; dev.py keeps its own environment with the newest "
                 f"releases there: remove the file, or set CONFORMANCE_VENV to another folder")
    if not python.exists():
        print(f"creating virtual environment in {VENV}", flush=True)
        try:
            venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
        except (OSError, subprocess.CalledProcessError) as exc:
            sys.exit(f"could not create {VENV} ({exc}); on Debian/Ubuntu install python3-venv")
    stamp = VENV / ".installed"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text() != want:
        print("installing the project and its test dependencies", flush=True)
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True)
        subprocess.run([*pip, "-e", f"{ROOT}[test]"], check=True)
        stamp.write_text(want)
    return python


#: what the registries serve each Python (README's version table says which lines are tested)
LINES = {
    (3, 11): "the Python 3.11 line: PyTensor 3.0.7 is the newest release for it; PyTensor 3.3 "
             "and PyMC 6 need Python >= 3.12",
}
PACKAGES = ("pytensor", "numba", "numpy", "onnxruntime", "onnx", "pymc")


def announce_line(python: Path) -> None:
    """One line naming the release line under test, so nobody mistakes it."""
    probe = ("import sys; from importlib import metadata as m\n"
             "def v(p):\n"
             "    try: return m.version(p)\n"
             "    except m.PackageNotFoundError: return None\n"
             f"print(' '.join(f'{{p}}={{v(p)}}' for p in {PACKAGES!r}), "
             "'python=%d.%d.%d' % sys.version_info[:3])")
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return
    found = dict(item.split("=", 1) for item in done.stdout.split())
    versions = ", ".join(f"{p} {found[p]}" for p in PACKAGES if found.get(p) != "None")
    major_minor = tuple(int(x) for x in found["python"].split(".")[:2])
    line = LINES.get(major_minor, "the newest line")
    print(f"Python {found['python']}: {versions} ({line})", flush=True)


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py runs under whatever python3 is
        sys.exit(f"dev.py needs Python >= 3.11, this is {sys.version.split()[0]}")
    if not argv or argv[0] not in COMMANDS:
        print(__doc__)
        return 2
    python = ensure_venv()
    announce_line(python)
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    cmd = [str(python), *COMMANDS[argv[0]], *argv[1:]]
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
