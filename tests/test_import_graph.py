"""The package's import graph has no cycles (its layers are import-linter's contracts:
``tests/test_layers.py``).

The graph is read from the source (ast), not from what an import happens to execute: one
node per module of ``cflbounds/``, an edge for every import statement anywhere in it, a
function-level (deferred) one included, since deferring an import is the usual way a cycle
is hidden rather than removed. Importing ``a.b.c`` also runs the packages ``a.b`` and ``a``,
so those are edges too, unless they enclose the importer (Python has started them already).
"""
import ast
from pathlib import Path

import cflbounds

PACKAGE = Path(cflbounds.__file__).parent


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement in ``module`` reaches (relative ones resolved)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    stem = node.module
    if node.level:  # from .x / from ..x: up from the package that holds the module
        package = module.split(".") if is_package else module.split(".")[:-1]
        stem = ".".join(package[:len(package) - (node.level - 1)] + ([node.module] if node.module else []))
    return [stem] + [f"{stem}.{alias.name}" for alias in node.names]  # `from a import b`: b may be a module


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (see the module docstring)."""
    files = {_module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    graph = {}
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        enclosing = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 2)}
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in _imported(node, module, is_package):
                    parts = name.split(".")
                    prefixes = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
                    edges |= {prefix for prefix in prefixes if prefix in files} - enclosing
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None (depth-first search)."""
    finished = set()

    def visit(path):
        for target in sorted(graph.get(path[-1], ())):
            if target in path:
                return path[path.index(target):] + [target]
            if target not in finished:
                cycle = visit(path + [target])
                if cycle:
                    return cycle
        finished.add(path[-1])
        return None

    for module in sorted(graph):
        cycle = None if module in finished else visit([module])
        if cycle:
            return cycle
    return None


def _write_package(root: Path, modules: dict[str, str]) -> Path:
    package = root / "pkg"
    for name, source in {"__init__": "", **modules}.items():
        path = package / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return package


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert "cflbounds.algorithms.kernels" in graph and len(graph) > 50  # the walk found the package
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_planted_cycle_is_found_even_through_a_deferred_import(tmp_path):
    package = _write_package(tmp_path, {
        "low": "def kernel():\n    from .high import Loss\n    return Loss\n",  # the cycle hides in a function
        "high": "from .low import kernel\n\nclass Loss:\n    pass\n",
        "other": "import pkg.high\n",
    })
    cycle = find_cycle(import_graph(package))
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"pkg.low", "pkg.high"}


def test_a_cycle_through_a_package_init_is_found_and_a_parent_package_is_no_cycle(tmp_path):
    package = _write_package(tmp_path, {
        "a/__init__": "from .x import f\n",  # importing pkg.a.x runs pkg.a, which is fine
        "a/x": "from ..b import y\n\ndef f():\n    pass\n",
        "b/__init__": "",
        "b/y": "",
    })
    assert find_cycle(import_graph(package)) is None
    (package / "b" / "__init__.py").write_text("from pkg.a import f\n")  # now pkg.a.x -> pkg.b -> pkg.a -> pkg.a.x
    cycle = find_cycle(import_graph(package))
    assert cycle is not None and {"pkg.a", "pkg.a.x", "pkg.b"} <= set(cycle)
