"""The ``active-memory`` console script: load the root group, then run the command.

A command's module is imported only when it runs (:mod:`active_memory.cli.lazy`), and that
import is most of its start-up. A Ctrl-C while the root group or a command's module loads is
still the user's interrupt, not a crash: it ends with one line and exit 130 instead of a
traceback. Once the command runs, it reports its own interruption.

A plain ``store path``, which scripts call to find the store, is answered before the command
line loads at all (:mod:`active_memory.cli.store_location`).
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130
INTERRUPTED_WHILE_STARTING = "error: interrupted while starting; nothing was done"


def run() -> None:
    try:
        from active_memory.cli.store_location import answer_plain_form

        answer = answer_plain_form(sys.argv[1:])
        if answer is not None:
            sys.stdout.write(answer + "\n")
            return
        from active_memory.cli.main import main
    except KeyboardInterrupt:
        sys.stderr.write(INTERRUPTED_WHILE_STARTING + "\n")
        raise SystemExit(EXIT_INTERRUPTED) from None
    main()
