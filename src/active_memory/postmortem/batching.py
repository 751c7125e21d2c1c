"""Maintenance batches: every supplied lesson in exactly one complete batch, bounded in bytes.

Lessons are never trimmed from a specialist's evidence, so a batch is sized by the serialized
cards (and their before/current changes) it carries: at most ``LESSON_SHARE`` of the evidence
budget, leaving the rest for the run's own evidence. Lessons are taken in id order, so the same
snapshot always gives the same batches, and a batch boundary never splits a card. A single card
too large for a batch is an error naming it: that specialist's reconciliation fails rather than
silently dropping the lesson.

:func:`maintenance_batches` is what a maintenance specialist receives: each batch with the change
entries of its own lessons, and the first batch also those of lessons no longer live (nothing
else would carry them). The postmortem and the single-specialist trial both use it, so a trial
session sees exactly what the postmortem's would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from active_memory.agents.specialists import Batch
from active_memory.errors import EvidenceError
from active_memory.models.lessons import Lesson
from active_memory.models.runs import canonical_json

__all__ = ["LESSON_SHARE", "batch_capacity", "card_size", "maintenance_batches", "plan_batches"]

# The supplied cards may use half the evidence budget; transcripts, completions and receipts are
# trimmed to fit the other half.
LESSON_SHARE = 0.5
_SEPARATOR_BYTES = 1


def batch_capacity(budget_bytes: int) -> int:
    """Bytes of serialized cards (and changes) one batch may carry under ``budget_bytes``."""
    return int(budget_bytes * LESSON_SHARE)


def card_size(lesson: Lesson, change: Mapping[str, Any] | None = None) -> int:
    """Serialized bytes a lesson adds to a batch's evidence, with its change entry if any."""
    size = len(canonical_json(lesson.model_dump(mode="json")).encode("utf-8")) + _SEPARATOR_BYTES
    if change is not None:
        size += len(canonical_json(dict(change)).encode("utf-8")) + _SEPARATOR_BYTES
    return size


def plan_batches(
    lessons: Sequence[Lesson],
    budget_bytes: int,
    changes: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[tuple[Lesson, ...], ...]:
    """Split ``lessons`` (sorted by id here) into consecutive batches that fit the budget.

    ``changes`` maps a lesson id to its before/current change entry, which travels with it.
    Raises :class:`EvidenceError` naming the first lesson that alone exceeds a batch.
    """
    capacity = batch_capacity(budget_bytes)
    by_change = changes or {}
    batches: list[tuple[Lesson, ...]] = []
    current: list[Lesson] = []
    used = 0
    for lesson in sorted(lessons, key=lambda item: item.id):
        size = card_size(lesson, by_change.get(lesson.id))
        if size > capacity:
            raise EvidenceError(
                f"lesson {lesson.id!r} needs {size} bytes of evidence on its own, more than a "
                f"maintenance batch may carry ({capacity} of the {budget_bytes}-byte budget); "
                "raise the evidence budget"
            )
        if current and used + size > capacity:
            batches.append(tuple(current))
            current, used = [], 0
        current.append(lesson)
        used += size
    if current:
        batches.append(tuple(current))
    return tuple(batches)


def maintenance_batches(
    lessons: Sequence[Lesson], changes: Sequence[Mapping[str, Any]], budget_bytes: int
) -> tuple[Batch, ...]:
    """The batches of ``lessons`` under ``budget_bytes``, each carrying its change entries.

    Changes of lessons no longer live (retired since the run froze its snapshot) travel with the
    first batch; without any lesson there is no batch, so they are not sent at all.
    Raises :class:`EvidenceError` as :func:`plan_batches` does.
    """
    by_id = {str(change["id"]): change for change in changes}
    live = {lesson.id for lesson in lessons}
    orphans = tuple(change for change in changes if change["id"] not in live)
    planned = plan_batches(lessons, budget_bytes, by_id)
    return tuple(
        Batch(
            lessons=batch,
            changes=tuple(by_id[lesson.id] for lesson in batch if lesson.id in by_id)
            + (orphans if position == 0 else ()),
        )
        for position, batch in enumerate(planned)
    )
