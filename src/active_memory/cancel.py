"""One cancellation token for a postmortem: evidence paging, provider sessions and publication.

A host may cancel from any thread (a signal handler, its own event loop), so the flag is a
``threading.Event``; coroutines that wait for it are woken on their own loop through
``call_soon_threadsafe``, because an ``asyncio.Event`` must only be set from its loop.
"""

from __future__ import annotations

import asyncio
import threading

__all__ = ["CancelToken"]


class CancelToken:
    """Set once with :meth:`cancel`; every reader stops at its next check."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(event.set)

    def is_set(self) -> bool:
        return self._event.is_set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        """Return once the token is cancelled."""
        event = asyncio.Event()
        with self._lock:
            if self._event.is_set():
                return
            entry = (asyncio.get_running_loop(), event)
            self._waiters.append(entry)
        try:
            await event.wait()
        finally:
            with self._lock:
                if entry in self._waiters:
                    self._waiters.remove(entry)
