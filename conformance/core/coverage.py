"""Coverage: which PyTensor op kinds the tested graphs contain, which exist but are untested,
which ONNX operators the converter emitted, and the supported-ops table of
docs/supported-ops.md.

An op kind is an Op class, or for Elemwise its scalar-op class (written ``Elemwise{Exp}``),
and for a bare CAReduce its scalar op (``CAReduce{Composite}``; subclasses such as Sum are
their own kinds). Composite's inner scalar ops count as Elemwise kinds too. Abstract bases
(classes others derive from that compute nothing themselves) are not kinds.

    python -m conformance.core.coverage                                # print the table
    python -m conformance.core.coverage --write docs/supported-ops.md  # rewrite it there
"""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import pkgutil
import re
import sys
import warnings
from pathlib import Path

from conformance.versions import holds, installed

TABLE_START = "<!-- supported-ops:start -->"
TABLE_END = "<!-- supported-ops:end -->"
WRITE_COMMAND = "python -m conformance.core.coverage --write docs/supported-ops.md"

#: The PyTensor line the document is generated on (the newest): its table holds that line's rows.
NEWEST_LINE = "pytensor>=3.3"
#: Rows the newest line lacks, with the releases that have them (a PEP 440 requirement). The
#: generator cannot see these rows on the newest line, so the document names them from here;
#: tests/test_registry.py checks on every line that a listed row exists exactly where its
#: requirement holds, and that an older line has no other row missing from the document.
ROWS_NOT_ON_NEWEST: dict[str, str] = {
    "ger": "pytensor<3.3",  # PyTensor 3.3 has no Ger (converter.compat.CLASSES)
}


def op_kinds(outputs) -> set[str]:
    """The op kinds in the graph computing ``outputs``."""
    from pytensor.graph.traversal import applys_between

    kinds = set()
    for node in applys_between([], outputs):
        kinds |= _kinds_of(node.op)
    return kinds


def _kinds_of(op) -> set[str]:
    import pytensor.scalar.basic as ps
    from pytensor.tensor.elemwise import CAReduce, Elemwise

    name = type(op).__name__
    scalar = getattr(op, "scalar_op", None)
    if scalar is None or not isinstance(op, Elemwise | CAReduce):
        return {name}
    if isinstance(op, CAReduce) and type(op) is not CAReduce:
        kinds = {name}
    else:
        kinds = {f"{'CAReduce' if isinstance(op, CAReduce) else 'Elemwise'}"
                 f"{{{type(scalar).__name__}}}"}
    if isinstance(scalar, ps.Composite):
        kinds |= {f"Elemwise{{{type(n.op).__name__}}}" for n in scalar.fgraph.apply_nodes}
    return kinds


def onnx_ops(model) -> set[str]:
    return {n.op_type for n in model.graph.node}


def _walk_modules(package: str):
    module = importlib.import_module(package)
    yield module
    for info in pkgutil.walk_packages(getattr(module, "__path__", []), f"{package}."):
        if any(part in info.name for part in (".tests", "._", ".link.", "c_code")):
            continue
        try:
            yield importlib.import_module(info.name)
        except Exception:  # noqa: BLE001
            # optional submodules (numba, jax, ...) may not import here; they hold no ops we cover
            continue


@functools.cache
def all_op_kinds() -> set[str]:
    """Every concrete Op class in pytensor.tensor and pytensor.compile, and every scalar op
    (as ``Elemwise{...}``), as op kinds."""
    from pytensor.graph.op import Op
    from pytensor.scalar.basic import ScalarOp
    from pytensor.tensor.elemwise import CAReduce, Elemwise

    classes = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated aliases PyTensor still re-exports
        for package in ("pytensor.tensor", "pytensor.compile", "pytensor.scalar",
                        "pytensor.raise_op"):
            for module in _walk_modules(package):
                for _, cls in inspect.getmembers(module, inspect.isclass):
                    if cls.__module__.startswith("pytensor") and issubclass(cls, Op):
                        classes.add(cls)
    bases = {base for cls in classes for base in cls.__mro__[1:]}
    kinds = set()
    for cls in classes - {Elemwise, CAReduce}:
        computes = any(m in cls.__dict__ for m in ("perform", "impl", "c_code"))
        if inspect.isabstract(cls) or (cls in bases and not computes):
            continue
        kinds.add(f"Elemwise{{{cls.__name__}}}" if issubclass(cls, ScalarOp) else cls.__name__)
    return kinds


def summary(covered) -> dict:
    covered = set(covered)
    universe = all_op_kinds()
    return {"op_kinds": sorted(covered), "count": len(covered),
            "uncovered": sorted(universe - covered)}


def supported_table() -> str:
    """Markdown: each registry row, its category and the dtypes it is tested on."""
    from conformance.registries import all_rows

    lines = ["| category | op | dtypes |", "|---|---|---|"]
    for row in sorted(all_rows(), key=lambda r: (r.category, r.name)):
        lines.append(f"| {row.category} | `{row.name}` | {', '.join(row.dtypes)} |")
    return "\n".join(lines)


def supported_block() -> str:
    """What goes between the markers: the table, then the rows the newest line lacks."""
    absent = ", ".join(f"`{name}` ({spec})" for name, spec in sorted(ROWS_NOT_ON_NEWEST.items()))
    return (f"{supported_table()}\n\nRows only on older releases, not in the table above "
            f"(which lists the rows of {NEWEST_LINE}): {absent}.")


def marked_part(text: str, where: object = "the document") -> str:
    """The text between the markers."""
    if TABLE_START not in text or TABLE_END not in text:
        raise ValueError(f"{where} has no {TABLE_START} ... {TABLE_END} markers")
    return text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()


def write_supported_ops(path: Path) -> bool:
    """Rewrite the part between the markers of ``path`` (a new file gets a header and the
    markers); True when the file changed. Only on the newest line, whose rows the table lists."""
    if not holds(NEWEST_LINE):
        raise ValueError(f"the supported-ops document lists the rows of {NEWEST_LINE}, and "
                         f"this is pytensor {installed('pytensor')}: write it from an "
                         f"environment with {NEWEST_LINE} (on this line the tests check that "
                         f"the document holds every row this line has)")
    block = f"{TABLE_START}\n{supported_block()}\n{TABLE_END}"
    if path.exists():
        text = path.read_text(encoding="utf-8")
        marked_part(text, path)
        pattern = re.compile(re.escape(TABLE_START) + ".*?" + re.escape(TABLE_END), re.S)
        new = pattern.sub(lambda _: block, text)
    else:
        text = None
        new = (f"# Supported ops\n\nGenerated by `{WRITE_COMMAND}` (on {NEWEST_LINE}); "
               f"a test checks it is current.\n\n{block}\n")
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.core.coverage",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", type=Path, metavar="PATH",
                        help="rewrite the supported-ops table between the markers of PATH "
                             "(docs/supported-ops.md); without it, print the table")
    args = parser.parse_args(argv)
    if args.write:
        try:
            changed = write_supported_ops(args.write)
        except ValueError as exc:
            print(f"python -m conformance.core.coverage: {exc}", file=sys.stderr)
            return 1
        print("updated" if changed else "up to date")
    else:
        print(supported_block())
    return 0


if __name__ == "__main__":
    sys.exit(main())
