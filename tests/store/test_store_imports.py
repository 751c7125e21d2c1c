"""store/ must stay importable by a stdlib-only helper: stdlib plus four of our modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import active_memory.store

STORE = Path(active_memory.store.__file__).parent
# screening.cards (admission's secret and injection detectors, for import and revert) is
# stdlib-only too; the subprocess test below imports the store with third parties blocked.
ALLOWED = {
    "active_memory.errors",
    "active_memory.limits",
    "active_memory.models.changes",
    "active_memory.models.ids",
    "active_memory.models.lessons",
    "active_memory.store.backend",
    "active_memory.screening.cards",
}


def _imports(source: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_store_modules_import_only_stdlib_and_the_allowed_modules() -> None:
    modules = sorted(STORE.glob("*.py"))
    assert {m.name for m in modules} >= {"sqlite.py", "migrations.py", "paths.py"}
    for module in modules:
        for name in _imports(module):
            top = name.split(".")[0]
            if top == "__future__" or top in sys.stdlib_module_names:
                continue
            in_store = name.startswith("active_memory.store")
            assert name in ALLOWED or in_store, f"{module.name} imports {name}"


def test_store_reads_and_imports_without_third_party_packages(tmp_path: Path) -> None:
    # Block every non-stdlib top-level package except active_memory, then read a store; the
    # read path must not even load the import screen, and an import must work with it.
    from active_memory.store.sqlite import SqliteStore

    path = tmp_path / "lessons.sqlite3"
    SqliteStore(path).close()
    script = f"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top not in sys.stdlib_module_names and top != "active_memory":
            raise ImportError("blocked third-party import: " + name)
        return None
sys.meta_path.insert(0, Block())
from active_memory.store.sqlite import SqliteStore
from active_memory.store.backend import RunIdentity, SnapshotRequest
with SqliteStore({str(path)!r}, read_only=True) as store:
    print(store.snapshot(SnapshotRequest(RunIdentity("r"))).generation)
print("active_memory.screening.cards" in sys.modules)
with SqliteStore({str(path)!r}) as store:
    print(store.import_lines([]).generation)
print("active_memory.screening.cards" in sys.modules)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "False", "0", "True"]
