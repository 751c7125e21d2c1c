"""What a command loads: it runs in a fresh interpreter (a test process has imported everything
already), its output discarded, and reports which of the given modules it left loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["command_stderr", "loaded_by", "loaded_by_command", "probe"]


def probe(code: str) -> object:
    """The JSON value ``code`` prints last, run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout.rstrip("\n").rpartition("\n")[2])


def loaded_by(code: str, names: Sequence[str]) -> list[str]:
    """Those of ``names`` (a module, or a package with any of its modules) loaded after
    ``code`` runs in a fresh interpreter, sorted."""
    code = (
        f"{code}\n"
        "import json, sys\n"
        f"names = {tuple(names)!r}\n"
        "print(json.dumps(sorted(n for n in names if any(m == n or m.startswith(n + '.')"
        " for m in sys.modules))))\n"
    )
    found = probe(code)
    assert isinstance(found, list)
    return found


def _command(argv: Sequence[str], before: str = "") -> str:
    """Code that runs ``active-memory ARGV`` after ``before``, its output kept in ``out`` and
    ``err`` (StringIO) rather than printed."""
    return (
        f"{before}\n"
        "import contextlib, io, sys\n"
        f"sys.argv = ['active-memory', *{list(argv)!r}]\n"
        "from active_memory.cli.main import main\n"
        "out, err = io.StringIO(), io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), "
        "contextlib.suppress(SystemExit):\n"
        "    main()\n"
    )


def loaded_by_command(argv: Sequence[str], names: Sequence[str]) -> list[str]:
    """Those of ``names`` that ``active-memory ARGV`` loads (see :func:`loaded_by`)."""
    return loaded_by(_command(argv), names)


def command_stderr(argv: Sequence[str], *, before: str = "") -> object:
    """What ``active-memory ARGV`` writes to stderr in a fresh interpreter, after ``before``."""
    return probe(_command(argv, before) + "import json\nprint(json.dumps(err.getvalue()))")
