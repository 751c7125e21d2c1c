"""signals and index stay free of third-party imports: the hook helper's fallback uses them."""

from __future__ import annotations

import subprocess
import sys

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
    from pathlib import Path

    import active_memory.recall

    folder = Path(active_memory.recall.__file__).parent
    offenders = [
        module.name
        for module in folder.glob("*.py")
        if "active_memory.hooks" in module.read_text(encoding="utf-8")
    ]
    assert offenders == []
