"""The ``active-memory`` console script: load the root group, then run the command.

A command's module is imported only when it runs (:mod:`active_memory.cli.lazy`), and that
import is most of its start-up. A Ctrl-C while the root group or a command's module loads is
still the user's interrupt, not a crash: it ends with one line and exit 130 instead of a
traceback. Once the command runs, it reports its own interruption.

A plain ``store path``, which scripts call to find the store, is answered before the command
line loads at all (:mod:`active_memory.cli.store_location`).

While a command starts, the cyclic garbage collector is off: loading modules allocates classes,
functions and compiled patterns that live as long as the process, so every collection then
walked a growing heap and freed nothing (about a tenth of a command's start-up CPU). When the
command to run is known (:func:`end_start_up`, called by the lazy group that resolves it), the
collector runs as usual. (Not ``gc.freeze()`` as well: frozen objects are hidden from
``gc.get_referrers``, which Hypothesis and debuggers rely on.)
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable

EXIT_INTERRUPTED = 130
INTERRUPTED_WHILE_STARTING = "error: interrupted while starting; nothing was done"

# Whether run() turned the collector off: end_start_up() turns it back on only then, so a
# caller that runs the command line in its own process (CliRunner in tests) keeps its setting.
_collector_paused: list[bool] = []


def end_start_up() -> None:
    """The command's modules are loaded: collect as usual from here on."""
    if _collector_paused:
        _collector_paused.clear()
        gc.enable()


def run() -> None:
    run_paused(_run)


def run_paused(start: Callable[[], None]) -> None:
    """Call ``start`` (which runs the command line) with the collector off until
    :func:`end_start_up`; also what ``python -m active_memory.cli.main`` runs."""
    if gc.isenabled():
        gc.disable()
        _collector_paused.append(True)
    try:
        start()
    finally:
        end_start_up()  # a command line that ended before a command ran (--help, a usage error)


def _run() -> None:
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
