"""The backend interface: a scoped snapshot and a checked publication.

SQLite implements it for local runs, PostgreSQL for a team (one schema per tenant) and the
memory service's client over HTTPS; a multi-tenant engine derives the tenant, repository and graph
scope from the run identity itself, never from request fields alone. docs/changing.md says how to
add another.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias, get_args, runtime_checkable

from active_memory.models.changes import Publication
from active_memory.models.lessons import Lesson

__all__ = [
    "ActiveMemoryBackend",
    "PublicationControl",
    "PublicationReceipt",
    "RunIdentity",
    "ScreenedBy",
    "Snapshot",
    "SnapshotRequest",
]

# Who screened every draft of a publication before it reached ``publish``: admission (the
# postmortem; memory init screens again, its drafts wait on disk), or a person's review of a
# quarantined proposal, which screens strong signals itself and accepts the weak ones it was held
# for. See PublicationControl.screened_by.
ScreenedBy: TypeAlias = Literal["admission", "review"]


@dataclass(frozen=True, slots=True)
class RunIdentity:
    """Who is asking: the run and the scopes it was accepted for."""

    run_id: str
    repository: str | None = None
    graph_hash: str | None = None


@dataclass(frozen=True, slots=True)
class SnapshotRequest:
    """Which lessons a run may see.

    Repository lessons of ``identity.repository`` when ``repository`` is on; graph lessons of
    ``identity.graph_hash`` (unqualified, or qualified by the same repository) when ``graph`` is on.
    """

    identity: RunIdentity
    repository: bool = True
    graph: bool = True


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A complete, frozen set of live lessons, sorted by id, at one store generation.

    ``lessons`` is a read-only sequence: a tuple, or (from a store) rows verified when read and
    decoded into lessons on first access.
    """

    generation: int
    lessons: Sequence[Lesson]

    def by_id(self) -> dict[str, Lesson]:
        return {lesson.id: lesson for lesson in self.lessons}


@dataclass(slots=True)
class PublicationControl:
    """Checked immediately before a write is dispatched: cancellation and an absolute deadline;
    and whether the drafts were screened already.

    ``deadline`` is a ``time.monotonic()`` value. Once ``cancel()`` is called or the deadline
    passes, no new publication starts; one already dispatched runs to completion.

    A local store's ``publish`` screens every draft of the batch (``screening.cards``) before
    its transaction and refuses the whole batch with ScreenRefused when one trips a signal,
    strong or weak. ``screened_by`` is the named opt-out for a host that screened every draft
    itself on this same path, so they are not screened twice: ``"admission"`` (the postmortem
    publishes only what admission accepted) or ``"review"`` (a person approved a quarantined
    proposal). It never crosses the wire: the memory service screens every publication it
    receives, whatever its client claims.

    ``hold_s`` bounds how long a write may hold the store's writers' lock; past it, and on
    ``abort()`` while the write waits for or holds the lock, a store that can stop a running
    write (PostgreSQL) stops it, rolls it back and raises WriteInterrupted. The memory service
    uses both: the bound per request, and ``abort`` when the client goes away.
    """

    deadline: float | None = None
    cancelled: bool = field(default=False)
    screened_by: ScreenedBy | None = None
    hold_s: float | None = None
    _interrupt: Callable[[str], None] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _aborted: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Any value but None switches the screen off, so a typo or a flag from an untyped host
        # must fail here rather than publish unscreened.
        if self.screened_by is not None and self.screened_by not in get_args(ScreenedBy):
            raise ValueError(
                f"PublicationControl.screened_by must be one of {get_args(ScreenedBy)} or None"
            )

    def cancel(self) -> None:
        self.cancelled = True

    def abort(self, reason: str) -> None:
        """Cancel, and stop the write in flight, if any (see ``hold_s``). May block briefly
        while the store asks its server to stop the statement: call it off an event loop."""
        self.cancelled = True
        self._aborted = reason
        interrupt = self._interrupt
        if interrupt is not None:
            interrupt(reason)

    def interrupt_with(self, interrupt: Callable[[str], None] | None) -> None:
        """Set (or, with None, clear) how ``abort()`` stops the write in flight: the store's
        business, for the duration of its write transaction."""
        self._interrupt = interrupt
        if interrupt is not None and self._aborted is not None:
            interrupt(self._aborted)

    def refusal(self) -> str | None:
        """Why a publication may not start now, or None when it may."""
        if self.cancelled:
            return "cancelled"
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return "deadline passed"
        return None


@dataclass(frozen=True, slots=True)
class PublicationReceipt:
    """What a committed batch did: the new generation and each id's new revision."""

    generation: int
    revisions: dict[str, int]
    retired: tuple[str, ...] = ()


@runtime_checkable
class ActiveMemoryBackend(Protocol):
    def snapshot(self, request: SnapshotRequest) -> Snapshot:
        """Return every live lesson in scope, or raise SnapshotError; never a partial set."""
        ...

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        """Commit every mutation or none.

        Raises RevisionConflict naming each id whose expected revision does not match (a
        tombstoned id always conflicts), ScreenRefused naming each draft the secret and
        injection screen flags (unless ``control.screened_by`` says it was screened already),
        PublicationError for a malformed or over-capacity batch, PublicationFenced when
        ``control`` refuses before dispatch.
        """
        ...

    def generation(self) -> int:
        """The store-wide generation: how many batches have committed."""
        ...
