"""Stable codes for card-rule refusals.

The card limits themselves live in :mod:`active_memory.models.lessons` and raise
:class:`~active_memory.errors.LessonValidationError`; :func:`card_code` turns one into a stable
rejection code such as ``title_too_long`` without carrying the offending text.
"""

from __future__ import annotations

import re

from active_memory.errors import LessonValidationError

__all__ = ["card_code"]

_PROBLEMS: tuple[tuple[str, str], ...] = (
    ("UTF-8 bytes", "too_long"),
    ("; the limit is", "too_many"),
    ("are required", "count"),
    ("one line", "not_one_line"),
    ("must not be empty", "empty"),
    ("entries must be unique", "duplicate"),
    ("too broad", "too_broad"),
    ("terms; a group needs", "group_size"),
    ("at least one file, folder, identifier", "no_association"),
    ("is required for 'adapt'", "replacement_mismatch"),
)


def card_code(error: LessonValidationError) -> str:
    """A stable code for a card-rule refusal: the field (without prefixes or indices) and the
    kind of problem, e.g. ``title_too_long``, ``files_too_many``, ``keyword_groups_too_broad``.
    """
    field = re.sub(r"\[\d+\]", "", error.field)
    field = field.rsplit(".", 1)[-1] or "card"
    for needle, kind in _PROBLEMS:
        if needle in error.problem:
            return kind if kind in ("no_association", "replacement_mismatch") else f"{field}_{kind}"
    return f"{field}_invalid"
