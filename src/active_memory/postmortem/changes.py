"""Before/current lesson changes: what other runs published after this run froze its snapshot.

Maintenance decides against the *current* revisions, read immediately before the postmortem, but
agents of this run only ever saw what was delivered (the manifest) from the frozen snapshot. The
difference is handed to the maintenance specialists separately from the manifest, so advice that
appeared later is never mistaken for evidence that a worker used it.

"Before" is the run's frozen snapshot when the host has it (the in-process API), else the
revisions named in the delivery manifest. A lesson's scope comes from its card; for an id known
only from the manifest, from its channel (hook deliveries are repository cards, prompt
deliveries graph guidance).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from active_memory.agents.specialists import ScopeKind
from active_memory.models.lessons import Lesson
from active_memory.models.runs import Delivery

__all__ = ["lesson_changes", "visible_set"]

_CHANNEL_SCOPE: dict[str, ScopeKind] = {"hook": "repository", "prompt": "graph"}


def visible_set(lessons: Iterable[Lesson], kind: ScopeKind) -> frozenset[tuple[str, int]]:
    """The ``(id, revision)`` pairs of ``kind`` a specialist can see: what a conflict compares."""
    return frozenset(
        (lesson.id, lesson.revision) for lesson in lessons if lesson.scope.kind == kind
    )


def lesson_changes(
    current: Sequence[Lesson],
    deliveries: Sequence[Delivery] = (),
    before: Sequence[Lesson] | None = None,
) -> dict[ScopeKind, list[dict[str, Any]]]:
    """Changes per scope kind, each ``{id, before_revision, current_revision, change}``.

    ``change`` is ``revised`` (another revision is current), ``retired`` (no longer live in
    scope) or ``new`` (published after the snapshot froze; only known with ``before``).
    Entries are sorted by id.
    """
    now = {lesson.id: lesson for lesson in current}
    earlier: dict[str, tuple[int, ScopeKind]] = {}
    if before is not None:
        for lesson in before:
            earlier[lesson.id] = (lesson.revision, lesson.scope.kind)
    else:
        for delivery in deliveries:
            seen = earlier.get(delivery.lesson_id)
            if seen is None or delivery.revision > seen[0]:
                channel = _CHANNEL_SCOPE.get(delivery.channel, "repository")
                earlier[delivery.lesson_id] = (delivery.revision, channel)

    out: dict[ScopeKind, list[dict[str, Any]]] = {"graph": [], "repository": []}
    for lesson_id in sorted(set(earlier) | (set(now) if before is not None else set())):
        found = now.get(lesson_id)
        previous = earlier.get(lesson_id)
        if found is not None and previous is not None and found.revision == previous[0]:
            continue
        kind: ScopeKind
        if previous is None:
            assert found is not None
            kind = found.scope.kind
            entry = _entry(lesson_id, None, found.revision, "new")
        elif found is None:
            kind = previous[1]
            entry = _entry(lesson_id, previous[0], None, "retired")
        else:
            kind = found.scope.kind
            entry = _entry(lesson_id, previous[0], found.revision, "revised")
        out[kind].append(entry)
    return out


def _entry(
    lesson_id: str, before_revision: int | None, current_revision: int | None, change: str
) -> dict[str, Any]:
    return {
        "id": lesson_id,
        "before_revision": before_revision,
        "current_revision": current_revision,
        "change": change,
    }
