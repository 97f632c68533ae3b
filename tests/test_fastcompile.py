"""Faster compiles: GCC reads the precompiled headers, the machine code is the same with them
and without debug information, and a module that does not open as they expect compiles as
before."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from pytensor import config

from conformance.compile import fastcompile

HEADERS = ["#include <Python.h>", "#include <math.h>", "#include <numpy/arrayobject.h>"]
BODY = textwrap.dedent("""
    extern "C" double twice_exp(double x) { return 2.0 * exp(x) + (double) NPY_MAXDIMS; }
""")

needs_gcc = pytest.mark.skipif(not config.cxx or not fastcompile._is_gcc(config.cxx),
                               reason="precompiled headers are for GCC only")


def preargs() -> list[str]:
    from pytensor.link.c.cmodule import GCC_compiler

    return ["-O3", *GCC_compiler.compile_args(), fastcompile.NO_DEBUG_INFO]


def include_dirs() -> list[str]:
    import numpy as np

    return [np.get_include()]


def test_the_prelude_is_the_leading_includes_when_python_comes_first():
    source = "\n".join([*HEADERS, "int x;", "#include <vector>"])
    assert fastcompile.prelude(source) == tuple(HEADERS)
    assert fastcompile.prelude("#include <math.h>\n#include <Python.h>\nint x;") == ()
    assert fastcompile.prelude("int x;") == ()


@needs_gcc
def test_gcc_uses_the_header_and_the_machine_code_does_not_change(tmp_path):
    source = tmp_path / "mod.cpp"
    source.write_text("\n".join(HEADERS) + BODY)
    headers = fastcompile.Headers(tmp_path / "pch")
    dirs = headers.include_dirs(source.read_text(), include_dirs(), preargs())
    assert len(dirs) == len(include_dirs()) + 1, "no precompiled header was built"

    def compile_(dirs: list[str], out: str, args=None) -> str:
        # as PyTensor's g++ call
        options = headers.options(dirs, args or preargs(), hide_symbols=True)
        done = subprocess.run([*options, "-H", "-c", str(source), "-o", str(tmp_path / out)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stderr  # -H lists the headers read; "!" marks a precompiled one used

    used = compile_(dirs, "with.o")
    assert any(line.startswith("! ") and line.endswith("Python.h.gch")
               for line in used.splitlines()), used[:2000]
    plain = compile_(include_dirs(), "without.o")
    assert not any(line.startswith("! ") for line in plain.splitlines())

    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed: cannot compare machine code")

    def code(name: str) -> str:
        listing = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(tmp_path / name)],
                                 capture_output=True, text=True, check=True).stdout
        return listing.split("Disassembly", 1)[1]  # past the header naming the file

    assert "twice_exp" in code("with.o")
    assert code("with.o") == code("without.o")
    # and with PyTensor's debug information
    compile_(include_dirs(), "debug.o", [a for a in preargs() if a != fastcompile.NO_DEBUG_INFO])
    assert code("debug.o") == code("without.o")


@needs_gcc
def test_a_module_opening_otherwise_keeps_its_include_path(tmp_path):
    headers = fastcompile.Headers(tmp_path / "pch")
    src = "#include <math.h>\n#include <Python.h>\n" + BODY
    assert headers.include_dirs(src, include_dirs(), preargs()) == include_dirs()
    assert not (tmp_path / "pch").exists()


@needs_gcc
def test_options_gcc_refuses_leave_the_include_path_as_it_was(tmp_path):
    headers = fastcompile.Headers(tmp_path / "pch")
    src = "\n".join(HEADERS) + BODY
    bad = [*preargs(), "-fno-such-option-anywhere"]
    assert headers.include_dirs(src, include_dirs(), bad) == include_dirs()
    assert headers.include_dirs(src, include_dirs(), bad) == include_dirs()  # not retried


@needs_gcc
def test_pytensor_compiles_its_modules_with_them(tmp_path):
    """A PyTensor function compiled in a fresh compile directory: the header is built there,
    g++ run as PyTensor runs it reads it, and the module works."""
    script = textwrap.dedent("""
        import logging, shlex, subprocess
        from pathlib import Path
        import numpy as np
        import pytensor
        import pytensor.tensor as pt
        from conformance.compile import fastcompile

        commands = []
        class Commands(logging.Handler):
            def emit(self, record):
                if record.getMessage().startswith("Running cmd: "):
                    commands.append(record.getMessage().removeprefix("Running cmd: "))
        log = logging.getLogger("pytensor.link.c.cmodule")
        log.setLevel(logging.DEBUG)
        log.addHandler(Commands())

        root = Path(pytensor.config.compiledir) / "conformance-pch"
        fastcompile.install(root)
        x = pt.dvector("x")
        f = pytensor.function([x], pt.exp(x) * 2 + 1, mode="FAST_RUN")
        np.testing.assert_allclose(f(np.array([0.0, 1.0])), [3.0, 2 * np.e + 1])
        print(sorted(p.name for p in root.glob("*/*")))
        (command,) = [c for c in commands if str(root) in c]
        again = subprocess.run([*shlex.split(command), "-H"], capture_output=True, text=True)
        print([l for l in again.stderr.splitlines() if l.startswith("! ")])
    """)
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path},linker=cvm"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    files, used = done.stdout.splitlines()[-2:]
    assert "'Python.h.gch'" in files and "'Python.h'" in files, done.stdout
    assert "Python.h.gch" in used, f"g++ did not read the precompiled header: {used}"
