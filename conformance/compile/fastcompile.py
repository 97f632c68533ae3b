"""PyTensor's C modules compiled in less time to the same machine code.

A cold run compiles a thousand or so small modules, and two things g++ does for each of them
produce nothing the module runs:

- **Debug information.** PyTensor always passes ``-g``; ``-g0`` after it turns that off.
  GCC's debug options do not change the code it generates (``-fcompare-debug`` exists to
  check exactly that): 15 to 40% of a module's compile time.
- **Parsing the same headers again.** Every module opens with the same few ``#include``
  lines (Python, numpy, PyTensor's helper), about half of g++'s time on a small module. GCC
  can load headers it parsed once: looking up ``Python.h`` it takes ``Python.h.gch`` from
  the same directory when that file was made with the same options. So, for each distinct
  set of leading ``#include`` lines and compiler options, a directory holds that ``.gch``,
  built from exactly those lines with exactly the module's options, and is put first on the
  module's include path. The module reads the same tokens either way. Where GCC cannot use
  the file (other options, another compiler), the directory's own ``Python.h`` passes the
  include on to the real one, and the module compiles as it would have.

tests/test_fastcompile.py checks that the machine code is unchanged and that g++, run as
PyTensor runs it, reads the header. Both changes are made when a module is compiled, not to
PyTensor's flags, so every module's cache key stays what it is without them.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: the include a module must open with for the precompiled header to stand in for it
FIRST = "#include <Python.h>"
#: after PyTensor's own -g, which it always passes
NO_DEBUG_INFO = "-g0"
FORWARD = "#include_next <Python.h>\n"


def prelude(src_code: str) -> tuple[str, ...]:
    """The module's leading ``#include`` lines, or () unless they open with :data:`FIRST`."""
    lines = []
    for line in src_code.splitlines():
        if not line.startswith("#include"):
            break
        lines.append(line.strip())
    return tuple(lines) if lines and lines[0] == FIRST else ()


def _is_gcc(cxx: str) -> bool:
    try:
        version = subprocess.run([cxx, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "clang" not in version.lower() and ("g++" in version or "GCC" in version)


class Headers:
    """The precompiled headers kept under ``root`` (one directory per prelude and options)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._failed: set[str] = set()  # keys whose build failed in this process
        self._gcc: bool | None = None

    def options(self, include_dirs, preargs, hide_symbols: bool) -> list[str]:
        """The compiler options PyTensor's ``compile_str`` gives g++ for these arguments
        (without the output and the source file)."""
        from pytensor import config
        from pytensor.link.c.cmodule import std_include_dirs

        args = [p for p in (preargs or [])
                if not (config.cmodule__remove_gxx_opt and p.startswith("-O"))]
        dirs = [d for d in (include_dirs or []) if d] + list(std_include_dirs())
        visibility = ["-fvisibility=hidden"] if hide_symbols and sys.platform != "win32" else []
        return [config.cxx, "-g", *args, *(f"-I{d}" for d in dirs), *visibility]

    def include_dirs(self, src_code: str, include_dirs, preargs,
                     hide_symbols: bool = True) -> list[str]:
        """``include_dirs`` with the precompiled header's directory first, when the module
        opens as one can stand in for; else unchanged."""
        given = list(include_dirs or [])
        lines = prelude(src_code)
        if not lines:
            return given
        options = self.options(given, preargs, hide_symbols)
        if self._gcc is None:
            self._gcc = _is_gcc(options[0])
        if not self._gcc:
            return given
        key = hashlib.sha256("\0".join([*options, *lines]).encode()).hexdigest()[:16]
        folder = self.root / key
        if key in self._failed:
            return given
        if not (folder / "Python.h.gch").exists() and not self._build(folder, options, lines):
            self._failed.add(key)
            return given
        return [str(folder), *given]

    def _build(self, folder: Path, options: list[str], lines: tuple[str, ...]) -> bool:
        """Build the folder next to it and move it in whole: workers sharing a compile
        directory may race, and a half-written header must never be found."""
        self.root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.root) as scratch:
            staged = Path(scratch) / "pch"
            staged.mkdir()
            header = Path(scratch) / "prelude.h"
            header.write_text("\n".join(lines) + "\n")
            try:
                done = subprocess.run([*options, "-x", "c++-header", str(header),
                                       "-o", str(staged / "Python.h.gch")],
                                      capture_output=True, timeout=300)
            except (OSError, subprocess.SubprocessError):
                return False
            if done.returncode != 0:
                return False
            (staged / "Python.h").write_text(FORWARD)
            try:
                os.replace(staged, folder)
            except OSError:  # another process put it there first
                return (folder / "Python.h.gch").exists()
        return True


def install(root: Path) -> None:
    """Have PyTensor compile its modules without debug information and with the precompiled
    headers under ``root`` (once per process)."""
    import inspect

    from pytensor.link.c.cmodule import GCC_compiler

    compile_str = GCC_compiler.compile_str
    if getattr(compile_str, "_headers", None) is not None:
        return
    headers = Headers(root)
    signature = inspect.signature(compile_str)

    def with_headers(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments
        given["preargs"] = [*(given["preargs"] or []), NO_DEBUG_INFO]
        given["include_dirs"] = headers.include_dirs(
            given["src_code"], given["include_dirs"], given["preargs"], given["hide_symbols"])
        return compile_str(*bound.args, **bound.kwargs)

    with_headers._headers = headers
    GCC_compiler.compile_str = staticmethod(with_headers)
