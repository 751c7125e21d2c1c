"""What store/ may import: the standard library, pydantic, and the layers below the store.

The store decodes rows through the lesson models, so it needs pydantic. It screens every card it
writes (publish, import, revert) with the screening layer, whose detectors stand on two
maintained packages: detect-secrets (credential formats) and disarm (the TR39 confusables
table). It needs no other third party. The stdlib-only hook fallback does not import these
modules: it reads raw rows through ``store/rows.py`` (tests/hooks/test_fallback.py checks what a
hook call loads).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import active_memory.store

STORE = Path(active_memory.store.__file__).parent
# Layers below the store (see pyproject's import-linter contract), and the store itself.
ALLOWED_PACKAGES = (
    "active_memory.bounded_input",
    "active_memory.errors",
    "active_memory.limits",
    "active_memory.repository",
    "active_memory.models",
    "active_memory.screening",
    "active_memory.store",
    "active_memory.type_checking",
)
THIRD_PARTY = {"pydantic", "pydantic_core"}
# The engines behind an extra import their own client library, and nothing else does.
EXTRAS = {
    "remote.py": {"httpx"},
    "service_http.py": {"httpx", "certifi"},
    "postgres": {"psycopg", "psycopg_pool"},
}
# What the screening detectors load, with what detect-secrets itself requires.
SCREENING_PACKAGES = ("detect-secrets", "disarm")


def _imports(source: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _allowed(name: str) -> bool:
    top = name.split(".")[0]
    if top == "__future__" or top in sys.stdlib_module_names or top in THIRD_PARTY:
        return True
    return any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED_PACKAGES)


def test_the_allowed_list_refuses_what_the_store_must_not_import() -> None:
    assert _allowed("active_memory.models.lessons")
    assert _allowed("pydantic.fields")
    for name in ("active_memory.recall.index", "active_memory.admission", "jsonschema", "click"):
        assert not _allowed(name), name


def test_store_modules_import_only_stdlib_pydantic_and_lower_layers() -> None:
    modules = sorted(STORE.glob("*.py"))
    assert {m.name for m in modules} >= {"sqlite.py", "migrations.py", "paths.py", "codec.py"}
    for module in modules:
        extra = EXTRAS.get(module.name, set())
        for name in _imports(module):
            assert _allowed(name) or name.split(".")[0] in extra, f"{module.name} imports {name}"


def test_the_postgres_engine_imports_only_psycopg_beyond_the_stores_own() -> None:
    modules = sorted((STORE / "postgres").glob("*.py"))
    assert {m.name for m in modules} >= {"store.py", "schema.py", "session.py"}
    for module in modules:
        for name in _imports(module):
            allowed = _allowed(name) or name.split(".")[0] in EXTRAS["postgres"]
            assert allowed, f"postgres/{module.name} imports {name}"


def test_store_reads_and_imports_with_no_third_party_but_pydantic(tmp_path: Path) -> None:
    # Block every third-party top-level package except pydantic, the screening packages and
    # what they require, then write, read and import through a store.
    from active_memory.store.sqlite import SqliteStore

    path = tmp_path / "lessons.sqlite3"
    SqliteStore(path).close()
    script = f"""
import importlib.abc, importlib.metadata, re, sys
allowed = {{"active_memory", "factories", "pydantic", "pydantic_core", "detect_secrets",
           "disarm", "yaml", "urllib3", "idna", "charset_normalizer", "certifi"}} | {{
    re.split(r"[^A-Za-z0-9_.-]", requirement, maxsplit=1)[0].replace("-", "_")
    for package in ("pydantic", *{SCREENING_PACKAGES!r})
    for requirement in importlib.metadata.requires(package) or ()
    if "extra ==" not in requirement
}}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        # _sysconfigdata_* is the interpreter's own build data, absent from stdlib_module_names
        stdlib = top in sys.stdlib_module_names or top.startswith("_sysconfigdata")
        if not stdlib and top not in allowed:
            raise ImportError("blocked third-party import: " + name)
        return None
sys.meta_path.insert(0, Block())
sys.path.insert(0, {str(Path(__file__).parents[1])!r})
from factories import make_draft
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.sqlite import SqliteStore
from active_memory.store.backend import RunIdentity, SnapshotRequest
with SqliteStore({str(path)!r}) as store:
    mutation = Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
    store.publish(Publication(run_id="run-1", mutations=(mutation,)))
    exported = list(store.export())
with SqliteStore({str(path)!r}, read_only=True) as store:
    request = SnapshotRequest(RunIdentity("r", repository=make_draft().scope.repository))
    print(len(store.snapshot(request).lessons))
with SqliteStore({str(path)!r}) as store:
    print(store.import_lines(exported).generation)
print(sorted({{name.split(".")[0] for name in sys.modules}} & allowed))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    count, generation, loaded = result.stdout.splitlines()
    assert (count, generation) == ("1", "1")
    assert {"active_memory", "pydantic", "pydantic_core"} <= set(ast.literal_eval(loaded))
