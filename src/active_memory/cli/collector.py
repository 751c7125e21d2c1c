"""The cyclic garbage collector paused while a command builds one large result.

``lessons impact`` over 1,000 runs and 10,000 lessons holds a few hundred thousand objects at
once (the run records, both replays, the report and its JSON tree). None of them forms a
reference cycle, so reference counting frees each; but their allocation keeps triggering the
collector, whose full passes walk every one of them again: a third of the command's CPU time.
Paused for the command's work, the collector runs again when it ends, and collects then what
cycles the work left (a caught exception's traceback).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector inside the block; it resumes however the block ends (a
    collector that was already paused stays paused)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
