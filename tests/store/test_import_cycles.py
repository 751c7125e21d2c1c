"""No import cycle between the store's modules, counting the imports lint-imports does not see.

The layers contract (``pyproject.toml``) excludes ``TYPE_CHECKING`` imports, and an import
inside a function only runs late, so a cycle made of those passes ``lint-imports`` and still
ties modules together (issue 27 found sqlite -> init_receipts -> quarantine -> sqlite, two of
the links under ``TYPE_CHECKING``). This reads every import statement of ``store/`` wherever
it stands.
"""

from __future__ import annotations

import ast
from pathlib import Path

import active_memory.store

STORE = Path(active_memory.store.__file__).parent
PACKAGE = "active_memory.store"


def _module_names() -> dict[str, Path]:
    names: dict[str, Path] = {}
    for path in STORE.rglob("*.py"):
        parts = path.relative_to(STORE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join((PACKAGE, *parts))] = path
    return names


def _imports(source: str, known: dict[str, Path]) -> set[str]:
    """The store modules ``source`` imports, at module level, under TYPE_CHECKING or in a
    function body alike."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            if node.module in known:
                found.add(node.module)
            # ``from active_memory.store import admin`` imports the module ``admin``.
            found |= {f"{node.module}.{a.name}" for a in node.names} & known.keys()
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that ends where it starts, or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        for imported in sorted(graph[module]):
            cycle = visit(imported, [*path, module])
            if cycle is not None:
                return cycle
        done.add(module)
        return None

    for module in sorted(graph):
        cycle = visit(module, [])
        if cycle is not None:
            return cycle
    return None


def _graph() -> dict[str, set[str]]:
    known = _module_names()
    return {
        name: _imports(path.read_text(encoding="utf-8"), known) - {name}
        for name, path in known.items()
    }


def test_the_store_modules_import_each_other_without_a_cycle_even_for_types() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or ())


def test_the_check_counts_imports_under_type_checking_and_in_functions() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from active_memory.store.quarantine import QuarantineEntry\n"
        "def later() -> None:\n"
        "    from active_memory.store import admin\n"
    )
    assert _imports(source, _module_names()) == {
        "active_memory.store.quarantine",
        "active_memory.store",
        "active_memory.store.admin",
    }


def test_a_type_only_import_back_is_reported_as_a_cycle() -> None:
    graph = _graph()
    # quarantine.py imports the SQLite store at run time; naming QuarantineEntry from there
    # again (as sqlite.py once did, under TYPE_CHECKING) would close the cycle.
    graph["active_memory.store.sqlite"].add("active_memory.store.quarantine")
    assert _cycle(graph) == [
        "active_memory.store.quarantine",
        "active_memory.store.sqlite",
        "active_memory.store.quarantine",
    ]
