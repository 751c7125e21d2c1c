"""Planning one publication from validated specialist results, and dispatching it safely.

Ids for new lessons are assigned here, in a fixed order (specialist order, then proposal order),
so a deterministic id source gives the same ids however the specialists' tasks interleaved.
Once assigned, an id stays with its proposal across conflict retries unless the store refuses
that very id.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from active_memory.agents.prompts import SPECIALISTS
from active_memory.agents.specialists import Validated
from active_memory.models.changes import Mutation, Publication
from active_memory.postmortem.report import ChangeOp, LessonChange
from active_memory.store.backend import (
    ActiveMemoryBackend,
    PublicationControl,
    PublicationReceipt,
)

__all__ = ["IdBook", "Plan", "dispatch", "plan_publication"]


class IdBook:
    """Host-assigned ids for discovery proposals, keyed by (specialist, proposal position)."""

    def __init__(self, new_id: Callable[[], str]) -> None:
        self._new_id = new_id
        self._ids: dict[tuple[str, int], str] = {}

    def id_for(self, specialist: str, position: int) -> str:
        key = (specialist, position)
        if key not in self._ids:
            self._ids[key] = self._new_id()
        return self._ids[key]

    def forget(self, lesson_id: str) -> bool:
        """Drop an id the store refused, so the next plan assigns a fresh one."""
        for key, value in list(self._ids.items()):
            if value == lesson_id:
                del self._ids[key]
                return True
        return False


@dataclass(frozen=True, slots=True)
class Plan:
    """One publication, the report entry of each mutation and which specialist owns each id."""

    publication: Publication
    changes: tuple[LessonChange, ...]
    owners: Mapping[str, str]


def _change(specialist: str, mutation: Mutation) -> LessonChange:
    op: ChangeOp = "create" if mutation.expected_revision == 0 else "adapt"
    if mutation.op == "retire":
        op = "retire"
    title = mutation.draft.title if mutation.draft is not None else None
    return LessonChange(
        op=op,
        id=mutation.id,
        specialist=specialist,
        expected_revision=mutation.expected_revision,
        title=title,
    )


def plan_publication(run_id: str, results: Mapping[str, Validated], ids: IdBook) -> Plan:
    """All pending mutations as one batch: maintenance first, then new lessons, in
    specialist order."""
    mutations: list[Mutation] = []
    changes: list[LessonChange] = []
    owners: dict[str, str] = {}
    for name in SPECIALISTS:
        result = results.get(name)
        if result is None:
            continue
        own = list(result.mutations)
        for position, proposal in enumerate(result.proposals):
            lesson_id = ids.id_for(name, position)
            own.append(
                Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=proposal.draft)
            )
        for mutation in own:
            mutations.append(mutation)
            changes.append(_change(name, mutation))
            owners[mutation.id] = name
    publication = Publication(run_id=run_id, mutations=tuple(mutations))
    return Plan(publication=publication, changes=tuple(changes), owners=owners)


async def dispatch(
    backend: ActiveMemoryBackend, publication: Publication, control: PublicationControl
) -> PublicationReceipt:
    """Publish in a worker thread. The backend checks ``control`` just before it writes; a
    write already dispatched is drained to its end even if this task is cancelled, so the
    store is never left with a half-known result."""
    write = asyncio.ensure_future(asyncio.to_thread(backend.publish, publication, control))
    try:
        return await asyncio.shield(write)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await asyncio.wait({write})
        raise
