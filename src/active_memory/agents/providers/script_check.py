"""What the two providers that answer from a script share: closing one checks that every
answer it holds was asked for (:class:`~.scripted.ScriptedProvider` and
:class:`~.replay.ReplayProvider` fail loudly on a session that made fewer calls)."""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["ChecksConsumption"]


class ChecksConsumption(ABC):
    """A provider whose ``close``/``aclose`` raise when answers were left unasked for."""

    @abstractmethod
    def assert_consumed(self) -> None:
        """Raise :class:`~active_memory.errors.ReplayMismatch` naming what was never asked for."""

    def close(self) -> None:
        self.assert_consumed()

    async def aclose(self) -> None:
        self.close()
