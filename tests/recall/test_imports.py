"""The hook path's modules stay cheap to import: the helper's store fallback loads them on every
tool call, so none may pull in the models (pydantic), the broker's machinery or logging."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys
before = set(sys.modules)
import active_memory.recall.index, active_memory.recall.signals
added = {name.split('.')[0] for name in set(sys.modules) - before}
print(sorted(added - set(sys.stdlib_module_names) - {'active_memory'}))
"""


def test_signals_and_index_import_only_the_standard_library() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=60, check=True)  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_recall_does_not_import_the_hook_adapters() -> None:
    # hooks/ builds on recall/, never the reverse: a cycle would tie the matcher to harnesses.
    import active_memory.recall

    folder = Path(active_memory.recall.__file__).parent
    offenders = [
        module.name
        for module in folder.glob("*.py")
        if "active_memory.hooks" in module.read_text(encoding="utf-8")
    ]
    assert offenders == []


HOOK_PATH = (
    "active_memory.recall.card", "active_memory.recall.exchange", "active_memory.recall.exposure",
    "active_memory.recall.index", "active_memory.recall.recall_session",
    "active_memory.recall.render", "active_memory.recall.shell", "active_memory.recall.signals",
    "active_memory.hooks.base", "active_memory.hooks.claude", "active_memory.hooks.codex",
    "active_memory.hooks.copilot", "active_memory.hooks.pi", "active_memory.hooks.dispatch",
    "active_memory.hooks.fallback", "active_memory.hooks.index_cache",
    "active_memory.hooks.private_dir", "active_memory.store.rows",
)  # fmt: skip
# What the package's own __init__ loads is left out: these modules must add nothing heavy.
HOOK_PROBE = f"""
import sys
sys.path.insert(0, sys.argv[1])
import active_memory
before = set(sys.modules)
import {", ".join(HOOK_PATH)}
print(" ".join(sorted(set(sys.modules) - before)))
"""


def test_the_hook_path_imports_neither_the_models_nor_heavy_standard_modules() -> None:
    import active_memory

    # -I -S as the installed hook runs: no site packages, so nothing is loaded beforehand.
    source = str(Path(active_memory.__file__).parents[1])
    done = subprocess.run([sys.executable, "-I", "-S", "-c", HOOK_PROBE, source],
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    added = set(done.stdout.split())
    assert set(HOOK_PATH) <= added
    # re and shlex load when a call carries a shell command, not with the modules.
    heavy = {"pydantic", "asyncio", "threading", "logging", "dataclasses", "pathlib", "json",
             "hashlib", "sqlite3", "re", "shlex", "enum", "typing", "unicodedata"}  # fmt: skip
    assert sorted(name for name in added if name.split(".")[0] in heavy) == []
    assert sorted(name for name in added if name.startswith("active_memory.models")) == []
