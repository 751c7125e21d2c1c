"""The coverage stage: a maintenance answer decides every supplied id exactly once, and no other.

Any problem fails that specialist's reconciliation (nothing is accepted): ``missing_id``,
``duplicate_id`` (two different decisions on one id; identical ones are one decision, refused
as ``shape:duplicate_item`` before coverage counts) and ``foreign_id``. A logged id is only ever
a well-formed lesson id, never arbitrary model text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from active_memory.errors import LessonValidationError
from active_memory.models.changes import Rejection
from active_memory.models.ids import validate_lesson_id
from active_memory.models.lessons import Lesson
from active_memory.roles import RoleRow

__all__ = ["coverage_rejections", "readable_id", "safe_id"]


def safe_id(value: object) -> str | None:
    """The id to log for a decision: only a well-formed lesson id, never arbitrary model text."""
    try:
        return validate_lesson_id("id", value)
    except LessonValidationError:
        return None


def readable_id(item: object) -> str | None:
    """The id an item decides, when it has one at all (its shape may be wrong otherwise)."""
    if isinstance(item, Mapping) and isinstance(item.get("id"), str):
        return str(item["id"])
    return None


def coverage_rejections(
    spec: RoleRow, ids: Sequence[tuple[int, str | None]], supplied: Mapping[str, Lesson]
) -> tuple[Rejection, ...]:
    """``ids``: (index, id) of every decision that counts; an id that cannot be read counts for
    no lesson, so the lesson it should have decided is reported missing."""
    rejections: list[Rejection] = []

    def reject(code: str, index: int, lesson_id: str | None) -> None:
        rejections.append(
            Rejection(stage="coverage", role=spec.name, code=code, index=index, id=lesson_id)
        )

    seen: Counter[str] = Counter()
    for index, decision_id in ids:
        if decision_id is None:
            continue
        if decision_id not in supplied:
            reject("foreign_id", index, safe_id(decision_id))
            continue
        seen[decision_id] += 1
        if seen[decision_id] > 1:
            reject("duplicate_id", index, decision_id)
    for lesson_id in supplied:
        if lesson_id not in seen:
            reject("missing_id", -1, lesson_id)
    return tuple(rejections)
