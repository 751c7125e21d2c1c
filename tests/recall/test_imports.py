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
