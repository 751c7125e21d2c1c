"""Fair shares of the postmortem deadline: one specialist cannot spend the others' time.

The specialists run at once, often against one server that answers one request at a time, so
one that loops or hangs until the shared deadline leaves the others nothing. Each running
specialist therefore gets an equal share of the time left as its own deadline, never past the
whole deadline; when one settles (finished, failed or cut at its share), the time it left
unused is split equally among those still running. A specialist that ran out of its share ends
like one that met the deadline (``timed_out``); the others keep theirs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

__all__ = ["FairShares"]


class FairShares:
    """The current deadline of each of ``names`` (absolute, :func:`time.monotonic` clock)."""

    def __init__(self, names: Iterable[str], *, started: float, deadline: float) -> None:
        self._whole = deadline
        self._running = set(names)
        share = (deadline - started) / len(self._running) if self._running else 0.0
        self._own = {name: started + share for name in self._running}

    def deadline(self, name: str) -> float:
        """``name``'s own deadline now: its share and what others left it, within the whole."""
        return min(self._whole, self._own[name])

    def of(self, name: str) -> Callable[[], float]:
        """A reader of ``name``'s deadline, for a session to look at whenever it waits."""
        return functools.partial(self.deadline, name)

    def settle(self, name: str, at: float) -> None:
        """``name`` ended at ``at``: what it did not use goes in equal parts to the others."""
        if name not in self._running:
            return
        self._running.discard(name)
        unused = max(0.0, self.deadline(name) - at)
        for other in self._running:
            self._own[other] += unused / len(self._running)
