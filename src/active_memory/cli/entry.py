"""The ``active-memory`` console script: load the commands, then run them.

Loading every command takes most of a second, and a Ctrl-C in that second is still the user's
interrupt, not a crash: it ends with one line and exit 130 instead of a traceback. Once the
commands run, each reports its own interruption.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


def run() -> None:
    try:
        from active_memory.cli.main import main
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted while starting; nothing was done\n")
        raise SystemExit(EXIT_INTERRUPTED) from None
    main()
