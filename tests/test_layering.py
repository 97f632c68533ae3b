"""The import graph of ``conformance/``: no circles, and layers import only downward.

Imports inside functions count as well: a lazy import that closes a circle is still a circle.
A package that loads its category modules by name (``CATEGORIES``) depends on them too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "conformance"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _targets(module: str, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        here = module.split(".")
        if MODULES[module].name != "__init__.py":
            here = here[:-1]
        here = here[: len(here) - node.level + 1]
        base = ".".join([*here, base] if base else here)
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def _imports(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.update(t for t in _targets(module, node) if t in MODULES and t != module)
    if module == "conformance.registries":
        from conformance.registries import CATEGORIES

        found.update(f"{module}.{c}" for c in CATEGORIES)
    return found


GRAPH = {m: _imports(m) for m in MODULES}


def _cycle_from(start: str) -> list[str] | None:
    path, on_path, done = [], set(), set()

    def visit(m):
        path.append(m)
        on_path.add(m)
        for dep in sorted(GRAPH[m]):
            if dep in on_path:
                return [*path[path.index(dep):], dep]
            if dep not in done and (found := visit(dep)):
                return found
        on_path.discard(path.pop())
        done.add(m)
        return None

    return visit(start)


def test_no_import_circles():
    circles = {" -> ".join(c) for m in sorted(GRAPH) if (c := _cycle_from(m))}
    assert not circles, "import circles in conformance/:\n" + "\n".join(sorted(circles))


LOWER_LAYERS = {  # a module of the key's layer must not import any module listed
    "conformance.strategies": ("conformance.registries", "conformance.harness",
                               "conformance.plugin", "conformance.runner", "conformance.cli"),
    "conformance.registries": ("conformance.harness", "conformance.plugin", "conformance.runner",
                               "conformance.cli", "conformance.results"),
    "conformance.cli": ("conformance.plugin",),
    "conformance.isolate": ("conformance.plugin",),
    "conformance.converters": ("conformance.plugin",),
}


@pytest.mark.parametrize("layer", sorted(LOWER_LAYERS))
def test_layers_import_only_downward(layer):
    upward = {
        (m, dep) for m in GRAPH if m == layer or m.startswith(layer + ".")
        for dep in GRAPH[m]
        if any(dep == up or dep.startswith(up + ".") for up in LOWER_LAYERS[layer])
    }
    assert not upward, f"{layer} imports upward: " + ", ".join(f"{a} -> {b}" for a, b in
                                                                sorted(upward))


def test_the_cli_and_the_child_process_do_not_need_pytest():
    for module in ("conformance.cli", "conformance.isolate", "conformance.converters"):
        assert "pytest" not in {a.name for n in ast.walk(ast.parse(MODULES[module].read_text()))
                                if isinstance(n, ast.Import) for a in n.names}, module
