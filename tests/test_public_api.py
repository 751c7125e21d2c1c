import subprocess
import sys

import pytest

import active_memory


def test_every_public_name_is_exported_and_resolves() -> None:
    for name in active_memory.__all__:
        assert getattr(active_memory, name) is not None, name
    assert len(set(active_memory.__all__)) == len(active_memory.__all__)


def test_public_names_come_from_private_modules_not_redefined() -> None:
    assert active_memory.Lesson.__module__ == "active_memory.models.lessons"
    assert active_memory.RevisionConflict.__module__ == "active_memory.errors.core"
    assert active_memory.Session.__module__ == "active_memory.agents.tool_loop"


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        _ = active_memory.NoSuchThing


def test_importing_the_package_loads_no_third_party_library() -> None:
    # The hook helper's store fallback imports the package on every tool call.
    code = (
        "import sys, active_memory; "
        "heavy = {'jsonschema', 'tenacity', 'git', 'click', 'anthropic', 'openai', 'httpx2'}; "
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_hook_console_script_loads_no_other_module_of_the_package() -> None:
    # `active-memory-hook` imports the package first: it must not pull recall, store or agents.
    code = (
        "import sys, active_memory.hooks.helper; "
        "print(sorted(m for m in sys.modules if m.startswith('active_memory')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(
        ["active_memory", "active_memory.hooks", "active_memory.hooks.helper"]
    )


def _error_classes_in_source() -> set[str]:
    """Every public class in src that derives from ActiveMemoryError, read from the source."""
    import ast
    from pathlib import Path

    bases: dict[str, set[str]] = {}
    for path in Path(active_memory.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names = {
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                }
                bases.setdefault(node.name, set()).update(names)
    errors = {"ActiveMemoryError"}
    while grown := {name for name, base in bases.items() if base & errors} - errors:
        errors |= grown
    return {name for name in errors if not name.startswith("_")}


def test_every_error_the_package_raises_is_exported() -> None:
    # A caller can catch by name what the package raises: ModelRefused, ReplayChanged and
    # others were once reachable only through private modules.
    # NotServed is a LessonNotFound the MCP server answers as a tool error: no caller sees it.
    assert _error_classes_in_source() - set(active_memory.__all__) == {"NotServed"}
    assert {"ModelRefused", "MalformedAnswer", "ReplayChanged", "QuarantineNotFound",
            "RunLogError", "InitRefused"} <= _error_classes_in_source()  # fmt: skip


def test_star_import_gives_the_public_names_and_nothing_private() -> None:
    namespace: dict[str, object] = {}
    exec("from active_memory import *", namespace)
    names = set(namespace) - {"__builtins__"}
    assert names == set(active_memory.__all__)
    assert namespace["ReplayChanged"] is active_memory.ReplayChanged


def test_the_type_checkers_block_and_the_lookup_table_name_the_same_modules() -> None:
    # Written twice: as imports type checkers read, and as the table a first use imports from.
    import ast
    from pathlib import Path

    tree = ast.parse(Path(active_memory.__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If))
    imported = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == active_memory._EXPORTS
