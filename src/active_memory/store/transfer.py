"""Export and import as JSON lines: one lesson or tombstone per line, sorted by id.

A live line is ``Lesson.model_dump(mode="json")``; a tombstone line is ``{"id", "revision",
"retired": true, "kind"}``. Import keeps each line's revision (so ``id@revision`` keys recorded
elsewhere stay meaningful) and is all or nothing:

* every line is parsed and validated before the store is touched (LessonValidationError names
  the line), including admission's secret and injection screen: a card admission would refuse
  never enters the store by the back door;
* an id the store does not hold is created at the line's revision (a tombstone line reserves
  the id, so a restored store still refuses to recreate it);
* an id whose stored content equals the line (card and evidence) is left alone, whatever the
  revision numbers, so importing the same export twice changes nothing;
* a retired id is never recreated, even with ``replace``;
* an id whose live content differs is a conflict unless ``replace`` is set, which writes the
  line's content (or tombstone) as the next revision, like a publication would.

Conflicts are collected for every line and raised together as ImportConflict.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from active_memory.bounded_input import parse_json
from active_memory.errors import InputRefused, LessonValidationError
from active_memory.limits import LIMITS
from active_memory.models.ids import validate_lesson_id
from active_memory.models.lessons import Lesson, LessonDraft
from active_memory.store.codec import canonical_json, encode_draft
from active_memory.store.results import HistoryOp, Tombstone
from active_memory.store.sql import SqlConnection
from active_memory.store.writes import Change, read_states, rows_by_id

__all__ = ["ImportEntry", "ImportPlan", "lesson_line", "parse_lines", "plan_import"]

_TOMBSTONE_KEYS = {"id", "revision", "retired", "kind"}


def lesson_line(item: Lesson | Tombstone) -> str:
    return canonical_json(item.model_dump(mode="json"))


@dataclass(frozen=True, slots=True)
class ImportEntry:
    line: int
    id: str
    revision: int
    kind: str
    draft: LessonDraft | None  # None: a tombstone line


def parse_lines(lines: Iterable[str]) -> tuple[ImportEntry, ...]:
    """Every non-blank line as an entry, or LessonValidationError naming the first bad line.

    A card that admission would refuse for a secret or a planted instruction is a bad line: the
    problem codes are named, never the card's text.
    """
    # The screens load on use: every store opens through this module's importers, and the
    # detectors' patterns are most of a reading command's start-up.
    from active_memory.screening.cards import screen_card

    entries: list[ImportEntry] = []
    first_seen: dict[str, int] = {}
    for number, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text:
            continue
        where = f"line {number}"
        try:
            data = parse_json(text, what=where)
        except InputRefused as refused:
            raise LessonValidationError(where, refused.problem) from None
        if not isinstance(data, dict):
            raise LessonValidationError(where, "must be a JSON object")
        try:
            entry = _entry(number, data)
        except LessonValidationError as error:
            raise LessonValidationError(f"{where}: {error.field}", error.problem) from None
        problems = screen_card(entry.draft) if entry.draft is not None else ()
        if problems:
            raise LessonValidationError(
                where,
                f"refused by the admission screen ({', '.join(problems)}); remove or correct "
                "that lesson, nothing was imported",
            )
        if entry.id in first_seen:
            raise LessonValidationError(
                f"{where}: id", f"{entry.id!r} already appears on line {first_seen[entry.id]}"
            )
        first_seen[entry.id] = number
        entries.append(entry)
    return tuple(entries)


def _entry(number: int, data: dict[str, Any]) -> ImportEntry:
    retired = data.get("retired", False)
    if retired is True:
        unknown = sorted(set(data) - _TOMBSTONE_KEYS)
        if unknown or set(data) != _TOMBSTONE_KEYS:
            raise LessonValidationError(
                "tombstone", f"must have exactly the keys {sorted(_TOMBSTONE_KEYS)}"
            )
        revision = data["revision"]
        if (
            isinstance(revision, bool)
            or not isinstance(revision, int)
            or not 1 <= revision <= LIMITS.revision_max
        ):
            raise LessonValidationError(
                "revision", f"{revision!r} must be an integer from 1 to {LIMITS.revision_max}"
            )
        if data["kind"] not in ("repository", "graph"):
            raise LessonValidationError("kind", f"{data['kind']!r} must be repository or graph")
        lesson_id = validate_lesson_id("id", data["id"])
        return ImportEntry(number, lesson_id, revision, data["kind"], None)
    if retired is not False:
        raise LessonValidationError("retired", f"{retired!r} must be true or false")
    lesson = Lesson.parse({k: v for k, v in data.items() if k != "retired"})
    return ImportEntry(number, lesson.id, lesson.revision, lesson.scope.kind, lesson.draft)


@dataclass(slots=True)
class ImportPlan:
    changes: list[Change] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)


def plan_import(
    conn: SqlConnection, entries: tuple[ImportEntry, ...], *, replace: bool
) -> ImportPlan:
    """Decide each entry against the store; run inside the import's write transaction."""
    states = read_states(conn, (entry.id for entry in entries))
    stored = _live_content(conn, [e.id for e in entries if e.id in states])
    plan = ImportPlan()
    for entry in entries:
        state = states.get(entry.id)
        if state is None:
            op: HistoryOp = "upsert" if entry.draft is not None else "retire"
            plan.changes.append(
                Change(entry.id, op, entry.revision, entry.kind, entry.draft, create=True)
            )
            (plan.created if entry.draft is not None else plan.retired).append(entry.id)
        elif state.deleted:
            if entry.draft is None:
                plan.unchanged.append(entry.id)
            else:
                plan.conflicts.append(
                    (entry.id, f"is retired (revision {state.revision}) and cannot be recreated")
                )
        elif entry.draft is not None and _content(entry.draft) == stored.get(entry.id):
            plan.unchanged.append(entry.id)
        elif not replace:
            what = "is retired in the file" if entry.draft is None else "has different content"
            plan.conflicts.append(
                (entry.id, f"{what} but live at revision {state.revision} here; use --replace")
            )
        else:
            op = "upsert" if entry.draft is not None else "retire"
            keeps_scope = entry.draft is not None and state.holds_scope_of(entry.draft)
            change = Change(
                entry.id, op, state.revision + 1, state.kind, entry.draft, keeps_scope=keeps_scope
            )
            plan.changes.append(change)
            (plan.replaced if entry.draft is not None else plan.retired).append(entry.id)
    return plan


def _content(draft: LessonDraft) -> tuple[str, str]:
    encoded = encode_draft(draft)
    return encoded.body, encoded.evidence


def _live_content(conn: SqlConnection, ids: list[str]) -> dict[str, tuple[str, str]]:
    content: dict[str, tuple[str, str]] = {}
    for lesson_id, body, evidence in rows_by_id(conn, "id, body, evidence", ids, live_only=True):
        content[lesson_id] = (body, evidence)
    return content
