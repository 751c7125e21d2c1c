"""Calls due after a delay, from one thread for the whole process.

A write with a hold bound (``interrupting.py``) asks to be stopped if it is still running when
the bound runs out, and almost always finishes first. ``threading.Timer`` starts a thread for
each such request and another joins it when cancelled: about 75 us of the service's CPU a
publication. Here one daemon thread sleeps until the earliest call is due; setting one is a push
on a heap, cancelling one a flag under the alarm's own lock.

Once :meth:`Alarm.cancel` returns, its call has ended or will never start: the hold bound's call
cancels the statement running on a session's connection, and run after the write was done with
it, it would cancel whatever statement (another request's, another tenant's) the connection
carries once back in the pool. A cancelled alarm lets go of its call at once (the call holds
the write's session), and the heap sheds cancelled alarms once they are most of it, rather
than keeping each until it comes due: a hold bound of seconds at thousands of writes a second.
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

# Cancelled alarms the heap may hold before it is swept, if they are also most of it.
_SWEEP_FROM = 256


def _nothing() -> None:
    pass


class Alarm:
    """A call set by :func:`call_later`; :meth:`cancel` before it is due and it never runs."""

    __slots__ = ("_clock", "_running", "call", "cancelled")

    def __init__(self, call: Callable[[], None], clock: _Clock) -> None:
        self.call = call
        self.cancelled = False
        self._clock = clock
        self._running = threading.Lock()  # held while the call runs

    def cancel(self) -> None:
        """Stop the call from running; if it is running now, return once it has ended."""
        with self._running:
            if self.cancelled:
                return
            self.cancelled = True
            self.call = _nothing  # what the call holds is freed now, not when it comes due
        self._clock.cancelled()


class _Clock:
    def __init__(self) -> None:
        self._reset()
        if hasattr(os, "register_at_fork"):
            # A fork copies the lock as it was: held, if the alarm thread held it then, and
            # nobody in the child would ever release it.
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._due: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()
        self._changed = threading.Condition(threading.Lock())
        self._owner = 0  # the process whose thread serves the heap (none after a fork)
        self._cancelled = 0  # cancelled alarms still in the heap, about

    def call_later(self, delay_s: float, call: Callable[[], None]) -> Alarm:
        alarm = Alarm(call, self)
        with self._changed:
            if self._owner != os.getpid():  # first use, or a child forked from a user
                self._due.clear()
                self._cancelled = 0
                self._owner = os.getpid()
                threading.Thread(
                    target=self._serve, name="active-memory-alarms", daemon=True
                ).start()
            heapq.heappush(self._due, (time.monotonic() + delay_s, next(self._order), alarm))
            if self._due[0][2] is alarm:  # due before every other: the thread sleeps less
                self._changed.notify()
        return alarm

    def cancelled(self) -> None:
        with self._changed:
            self._cancelled += 1
            if self._cancelled >= _SWEEP_FROM and 2 * self._cancelled >= len(self._due):
                self._due = [entry for entry in self._due if not entry[2].cancelled]
                heapq.heapify(self._due)
                self._cancelled = 0

    def _serve(self) -> None:
        while True:
            with self._changed:
                while True:
                    while self._due and self._due[0][2].cancelled:
                        heapq.heappop(self._due)  # cancelled ones leave as they come due
                        self._cancelled = max(0, self._cancelled - 1)
                    wait = self._due[0][0] - time.monotonic() if self._due else None
                    if wait is not None and wait <= 0:
                        _, _, alarm = heapq.heappop(self._due)
                        break
                    self._changed.wait(wait)
            # Outside the heap's lock: a call may take its time (a cancel opens a connection).
            # Under the alarm's: a cancel waits for it. A call's failure is its own, whatever
            # it raises (a SystemExit too): the thread lives on, and every later hold bound
            # with it.
            with alarm._running, suppress(BaseException):
                if not alarm.cancelled:
                    alarm.call()


_CLOCK = _Clock()


def call_later(delay_s: float, call: Callable[[], None]) -> Alarm:
    """Run ``call`` on the process's alarm thread ``delay_s`` seconds from now, unless the
    returned alarm is cancelled first."""
    return _CLOCK.call_later(delay_s, call)
