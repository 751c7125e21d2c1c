"""Lesson ids: ``lesson-<ULID>``, assigned by the host, never by a model."""

from __future__ import annotations

import re
import secrets
import time
from typing import Annotated

from active_memory.errors import LessonValidationError
from active_memory.models.fields import Check

__all__ = ["LessonId", "lesson_id_problem", "new_lesson_id", "validate_lesson_id"]

_LESSON_ID = re.compile(r"lesson-[0-9A-HJKMNP-TV-Z]{26}")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_lesson_id(now_ms: int | None = None) -> str:
    """A host-assigned ``lesson-<ULID>``: 48-bit millisecond time then 80 random bits."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms << 80) | secrets.randbits(80)
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "lesson-" + "".join(reversed(chars))


def lesson_id_problem(value: str) -> str | None:
    if _LESSON_ID.fullmatch(value):
        return None
    return f"{value!r} is not a lesson id (lesson-<ULID>)"


def validate_lesson_id(field_name: str, value: object) -> str:
    if not isinstance(value, str) or not _LESSON_ID.fullmatch(value):
        raise LessonValidationError(field_name, f"{value!r} is not a lesson id (lesson-<ULID>)")
    return value


LessonId = Annotated[str, Check(lesson_id_problem, "lesson_id")]
"""A host-assigned ``lesson-<ULID>``."""
