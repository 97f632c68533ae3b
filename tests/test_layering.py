"""The import graph of ``conformance/``: no circles, layers import only downward, and modules
stay small.

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


#: The layers of conformance/, lowest first: the record vocabulary, then strategies, records and
#: accuracy budgets shared by rows, the registry rows, PyTensor compile helpers, backends,
#: running and judging cases (core), the report, the pytest session, upstream reporting and the
#: CLI. A module imports only from its own layer and the layers before it.
LAYERS = (
    "conformance.versions", "conformance.registry", "conformance.strategies",
    "conformance.jax_records", "conformance.accuracy", "conformance.registries",
    "conformance.compile", "conformance.backends", "conformance.core", "conformance.report",
    "conformance.session",
    "conformance.upstream", "conformance.cli",
)
#: What a layer must not import besides the layers above it.
SIDEWAYS = {
    "conformance.compile": ("conformance.registries",),
    "conformance.backends": ("conformance.registries",),
    # the report renders a results document: it needs no graph, backend or row
    "conformance.report": ("conformance.strategies", "conformance.registries",
                           "conformance.compile", "conformance.backends"),
    "conformance.upstream": ("conformance.session",),
    # the CLI, the child process and the converter loader never load the pytest plugin
    "conformance.cli": ("conformance.session.plugin",),
    "conformance.session.isolate": ("conformance.session.plugin",),
    "conformance.core.converters": ("conformance.session.plugin",),
}
LOWER_LAYERS = {  # a module of the key's layer must not import any module listed
    layer: (*LAYERS[n + 1:], *SIDEWAYS.get(layer, ())) for n, layer in enumerate(LAYERS)
} | {layer: banned for layer, banned in SIDEWAYS.items() if layer not in LAYERS}
#: The imports against the layers that exist, each with why; a new one fails the test.
UPWARD = {
    ("conformance.backends.base", "conformance.core.coverage"):
        "a graph reports its op kinds and ONNX operators (Graph.coverage)",
    ("conformance.core.harness", "conformance.session.interrupt"):
        "the harness raises a swallowed Ctrl-C again between backends",
    ("conformance.core.harness", "conformance.upstream.upstream_script"):
        "a case's graph as standalone code (case_code)",
    ("conformance.upstream.issues", "conformance.session.isolate"):
        "conformance upstream reproduces Numba and JAX cells in the Sandbox child",
}


def _within(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


@pytest.mark.parametrize("layer", sorted(LOWER_LAYERS))
def test_layers_import_only_downward(layer):
    upward = {
        (m, dep) for m in GRAPH if _within(m, layer) for dep in GRAPH[m]
        if any(_within(dep, up) for up in LOWER_LAYERS[layer]) and (m, dep) not in UPWARD
    }
    assert not upward, f"{layer} imports upward: " + ", ".join(f"{a} -> {b}" for a, b in
                                                                sorted(upward))


def test_the_listed_upward_imports_still_exist():
    gone = {edge for edge in UPWARD if edge[1] not in GRAPH.get(edge[0], ())}
    assert not gone, f"remove from UPWARD what no longer happens: {sorted(gone)}"


def _reached(module: str) -> set[str]:
    seen, pending = set(), [module]
    while pending:
        if (m := pending.pop()) not in seen:
            seen.add(m)
            pending.extend(GRAPH[m])
    return seen


def _imports_pytest(module: str) -> bool:
    tree = ast.parse(MODULES[module].read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    return any(name.split(".")[0] in ("pytest", "_pytest") for name in names)


@pytest.mark.parametrize("module", ["conformance.cli", "conformance.session.isolate",
                                    "conformance.core.converters"])
def test_the_cli_and_the_child_process_do_not_need_pytest(module):
    """Neither the module nor anything it imports, lazily or not, imports pytest."""
    needing = sorted(m for m in _reached(module) if _imports_pytest(m))
    assert not needing, f"{module} reaches modules that import pytest: {', '.join(needing)}"


#: House rule 7: modules of at most ~500 lines (the tilde allows a tenth more).
MAX_LINES = 550


def test_modules_stay_small():
    sizes = {m: len(p.read_text().splitlines()) for m, p in MODULES.items()}
    long = {m: n for m, n in sorted(sizes.items()) if n > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by concern): {long}"
