"""Calls due after a delay, from one thread for the whole process.

A write with a hold bound (``interrupting.py``) asks to be stopped if it is still running when
the bound runs out, and almost always finishes first. ``threading.Timer`` starts a thread for
each such request and another joins it when cancelled: about 75 us of the service's CPU a
publication. Here one daemon thread sleeps until the earliest call is due; setting one is a push
on a heap, cancelling one a flag.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable
from contextlib import suppress

__all__ = ["Alarm", "call_later"]


class Alarm:
    """A call set by :func:`call_later`; :meth:`cancel` before it is due and it never runs."""

    __slots__ = ("call", "cancelled")

    def __init__(self, call: Callable[[], None]) -> None:
        self.call = call
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Clock:
    def __init__(self) -> None:
        self._due: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()
        self._changed = threading.Condition(threading.Lock())
        self._owner = 0  # the process whose thread serves the heap (none after a fork)

    def call_later(self, delay_s: float, call: Callable[[], None]) -> Alarm:
        alarm = Alarm(call)
        with self._changed:
            if self._owner != os.getpid():  # first use, or a child forked from a user
                self._due.clear()
                self._owner = os.getpid()
                threading.Thread(
                    target=self._serve, name="active-memory-alarms", daemon=True
                ).start()
            heapq.heappush(self._due, (time.monotonic() + delay_s, next(self._order), alarm))
            if self._due[0][2] is alarm:  # due before every other: the thread sleeps less
                self._changed.notify()
        return alarm

    def _serve(self) -> None:
        while True:
            with self._changed:
                while True:
                    while self._due and self._due[0][2].cancelled:
                        heapq.heappop(self._due)  # cancelled ones leave as they come due
                    wait = self._due[0][0] - time.monotonic() if self._due else None
                    if wait is not None and wait <= 0:
                        _, _, alarm = heapq.heappop(self._due)
                        break
                    self._changed.wait(wait)
            # Outside the lock: a call may take its time (a cancel opens a connection). A
            # call's failure is its own: the calls after it still run.
            with suppress(Exception):
                alarm.call()


_CLOCK = _Clock()


def call_later(delay_s: float, call: Callable[[], None]) -> Alarm:
    """Run ``call`` on the process's alarm thread ``delay_s`` seconds from now, unless the
    returned alarm is cancelled first."""
    return _CLOCK.call_later(delay_s, call)
