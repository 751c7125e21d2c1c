"""A pytest of its own, in a new process, for the tests that check the suite's own machinery
(its conftest, its markers): only the plugins those runs use are loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# Each plugin loaded is start-up time (langsmith's alone was ~40% of it), and xdist would start
# workers of its own.
_UNUSED = ("cacheprovider", "xdist", "langsmith_plugin", "hypothesispytest", "inline_snapshot",
           "anyio", "asyncio", "timeout", "respx")  # fmt: skip
NO_PLUGINS = tuple(part for name in _UNUSED for part in ("-p", f"no:{name}"))


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``pytest -q ARGS FOLDER`` run from ``folder``, its output captured as text.

    Its temporary folders go beside ``folder``: left at pytest's default, each inner run would
    start by pruning the oldest numbered folders of /tmp/pytest-of-<user>, the outer suite's
    among them (seconds to minutes of deleting while the suite runs)."""
    basetemp = folder.parent / f"{folder.name}-basetemp"
    command = [sys.executable, "-m", "pytest", "-q", *NO_PLUGINS, f"--basetemp={basetemp}",
               *args, str(folder)]  # fmt: skip
    return subprocess.run(
        command, capture_output=True, text=True, cwd=folder, timeout=120, check=False
    )
