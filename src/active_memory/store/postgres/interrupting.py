"""Stopping a PostgreSQL write in flight (:class:`PublicationControl`): its hold bound and
``abort()`` cancel the statement running on the server, and the write raises
``WriteInterrupted`` instead of the cancel's error."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, Protocol

import psycopg
from psycopg import errors as pg_errors

from active_memory.errors import WriteInterrupted
from active_memory.store.backend import PublicationControl
from active_memory.store.postgres.alarms import Alarm, call_later

__all__ = ["interruptible"]


class _Session(Protocol):
    """What of a ``PgSession`` a stop touches (named so, not imported: no import cycle)."""

    conn: psycopg.Connection[Any]
    stopped: WriteInterrupted | None


@contextmanager
def interruptible(
    session: _Session, control: PublicationControl | None, where: str
) -> Iterator[Callable[[str], None]]:
    """Lets ``control`` stop the write: ``abort()`` at any time, ``hold_s`` once the caller
    says the lock is held (the yielded function, told what the bound then counts: "held", or
    "waited for and held" when the lock is still to come). A stopped write raises
    WriteInterrupted from the statement it was in, or from the next one it tries."""
    if control is None:
        yield lambda counted: None
        return
    guard = threading.Lock()
    timer: list[Alarm] = []
    ended: list[bool] = []  # once the block has ended, the connection is no longer the write's

    def interrupt(reason: str) -> None:
        # Under the guard, cancel included: the block's end waits for a cancel under way, and
        # a later one (an abort() that read this function just before it was cleared) finds
        # the write ended. Else it could cancel whatever statement the connection, back in the
        # pool, then runs for another request (another tenant's).
        with guard:
            if session.stopped is not None or ended:
                return
            session.stopped = WriteInterrupted(where, reason)
            # Cancels the statement running now, if any (a new connection to the server: this
            # blocks briefly, never on the writers' lock).
            with suppress(psycopg.Error):
                session.conn.cancel_safe(timeout=5.0)

    def held(counted: str) -> None:
        if control.hold_s is None:
            return
        bound = control.hold_s
        reason = f"it {counted} the writers' lock for {bound:g} s, the most one request may"
        timer.append(call_later(bound, lambda: interrupt(reason)))

    control.interrupt_with(interrupt)
    try:
        yield held
    except pg_errors.QueryCanceled:
        if session.stopped is None:
            raise
        raise session.stopped from None
    finally:
        control.interrupt_with(None)
        with guard:
            ended.append(True)
        for started in timer:
            started.cancel()
