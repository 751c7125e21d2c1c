"""Rows to lessons and back: the card JSON (body) and the evidence JSON, stored apart.

The body is exactly what an agent may be shown (a :class:`Card`: title, recommendation, scope);
evidence lives in its own column so no reader can inject it by accident. JSON is canonical
(sorted keys, no spaces) so equal content is byte-equal and sizes are stable.

Reading validates every row completely, in pydantic-core straight from the stored JSON text: a
damaged row is a RecordError, never a silently wrong lesson. :class:`DecodedRows` remembers the
lessons it decoded by their exact stored row, so a snapshot re-reading rows that did not change
since the last one pays for a comparison, not for a second validation.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from active_memory.models.base import first_problem
from active_memory.models.ids import lesson_id_problem
from active_memory.models.lessons import Card, Evidence, GraphScope, Lesson, LessonDraft

__all__ = [
    "LIVE_COLUMNS",
    "DecodedContent",
    "DecodedRows",
    "EncodedDraft",
    "RecordError",
    "canonical_json",
    "decode_draft",
    "decode_lesson",
    "encode_draft",
]

_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")

# The columns of a live row, in the order decode_lesson and DecodedRows read them.
LIVE_COLUMNS = "id, revision, body, evidence, kind, repository, graph_hash, node_id"


class RecordError(ValueError):
    """A stored row cannot be turned back into a valid lesson."""


def _digest(content: tuple[str, str]) -> bytes:
    body, evidence = content
    return hashlib.sha256(f"{len(body)}:{body}{evidence}".encode()).digest()


# What ``json.dumps`` would build on every call with these arguments: one encoder, made once
# (a publication encodes two documents a card). ``encode`` keeps no state between calls.
_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def canonical_json(value: Any) -> str:
    return _CANONICAL.encode(value)


@dataclass(frozen=True, slots=True)
class EncodedDraft:
    kind: str
    repository: str | None
    graph_hash: str | None
    node_id: str | None
    body: str
    evidence: str

    @property
    def body_bytes(self) -> int:
        return len(self.body.encode("utf-8"))

    @property
    def size(self) -> int:
        """Stored content bytes (card + evidence), what the total-bytes limit counts."""
        return self.body_bytes + len(self.evidence.encode("utf-8"))


def encode_draft(draft: LessonDraft) -> EncodedDraft:
    scope = draft.scope
    content = draft.model_dump(mode="json")
    evidence = content.pop("evidence")
    return EncodedDraft(
        kind=scope.kind,
        repository=scope.repository,
        graph_hash=scope.graph_hash if isinstance(scope, GraphScope) else None,
        node_id=scope.node_id if isinstance(scope, GraphScope) else None,
        body=canonical_json(content),
        evidence=canonical_json(evidence),
    )


def _parsed(model: type[Card] | type[Evidence], text: str, column: str) -> Any:
    try:
        return model.model_validate_json(text)
    except ValidationError as error:
        detail = error.errors(include_url=False)[0]
        if detail["type"] == "json_invalid":
            raise RecordError(f"has invalid JSON in its {column} ({detail['msg']})") from None
        problem = first_problem(error, model.error_root, model=model)
        # A rule may quote the stored value ('…' must be …): the lesson's text stays out.
        rule = problem.problem
        if detail["type"] != "extra_forbidden":
            rule = _QUOTED.sub("…", rule)
        raise RecordError(f"fails lesson validation ({problem.field}: {rule})") from None


def _content(body: object, evidence: object) -> tuple[Card, Evidence]:
    if not isinstance(body, str) or not isinstance(evidence, str):
        raise RecordError("has no body or no evidence")
    return _parsed(Card, body, "body"), _parsed(Evidence, evidence, "evidence")


def decode_draft(body: object, evidence: object) -> LessonDraft:
    """Parse and validate stored JSON; RecordError says what is wrong."""
    return _draft(*_content(body, evidence))


def _draft(card: Card, proof: Evidence) -> LessonDraft:
    # The card and the evidence are validated completely, and a draft is exactly their
    # fields: assembled without checking them a second time (as decode_lesson does).
    return LessonDraft.model_construct(
        scope=card.scope, title=card.title, recommendation=card.recommendation, evidence=proof
    )


def decode_lesson(row: tuple[object, ...], contents: DecodedContent | None = None) -> Lesson:
    """A ``LIVE_COLUMNS`` row as a Lesson; the indexed scope columns must agree with the body.
    With ``contents``, the card and evidence come from (and go to) its memory."""
    lesson_id, revision, body, evidence, kind, repository, graph_hash, node_id = row
    if not isinstance(lesson_id, str) or lesson_id_problem(lesson_id):
        raise RecordError(f"has an id that is not a lesson id ({lesson_id!r})")
    if type(revision) is not int or revision < 1:
        raise RecordError(f"has a revision that is not an integer >= 1 ({revision!r})")
    card, proof = _content(body, evidence) if contents is None else contents.parts(body, evidence)
    scope = card.scope
    if isinstance(scope, GraphScope):
        expected: tuple[object, ...] = ("graph", scope.repository, scope.graph_hash, scope.node_id)
    else:
        expected = ("repository", scope.repository, None, None)
    if (kind, repository, graph_hash, node_id) != expected:
        raise RecordError("has scope columns that disagree with its body")
    # Every part is validated above (the card and evidence completely, id and revision by the
    # rules of their fields), so the lesson is assembled without checking them a second time.
    return Lesson.model_construct(
        id=lesson_id,
        revision=revision,
        scope=scope,
        title=card.title,
        recommendation=card.recommendation,
        evidence=proof,
    )


class DecodedRows:
    """Lessons decoded from live rows, remembered by the exact row they came from.

    A row equal to one decoded before (same id, revision, body, evidence and scope columns)
    yields the same frozen Lesson without validating it again; any difference decodes afresh.
    At most ``capacity`` rows are remembered (twice the store's live-lesson limit: 20,000 by
    default, for the life of the store object); past that the memory starts over. A purged
    lesson is forgotten (:meth:`forget`) and never remembered again.
    """

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._seen: dict[object, tuple[tuple[object, ...], Lesson]] = {}
        self._purged: set[object] = set()

    def lesson(self, row: tuple[object, ...]) -> Lesson:
        """The Lesson of a ``LIVE_COLUMNS`` row; RecordError when the row is not valid."""
        seen = self._seen.get(row[0])
        if seen is not None and seen[0] == row:
            return seen[1]
        lesson = decode_lesson(row)
        if row[0] in self._purged:  # a row read before its purge, decoded after it
            return lesson
        if len(self._seen) >= self._capacity:
            self._seen.clear()
        self._seen[row[0]] = (row, lesson)
        return lesson

    def forget(self, lesson_id: str) -> None:
        """Drop ``lesson_id`` (purged: its text must not stay in memory) for good."""
        self._seen.pop(lesson_id, None)
        self._purged.add(lesson_id)


class DecodedContent:
    """Stored content (a body and its evidence) decoded once, remembered by its exact text.

    A live lesson's content is also its latest revision in the history, stored as the same
    canonical text: a command that lists the live lessons and then reads every history
    (``lessons impact``) validates each live revision once. Text that differs decodes afresh;
    content that is not valid is never remembered. At most ``capacity`` contents are
    remembered (twice the store's live-lesson limit: 20,000 by default, for the life of the
    store object, so per tenant in the memory service); past that the memory starts over. A
    purge forgets the purged lesson's contents (:meth:`forget`); only their digests are kept,
    so a read that began before the purge and decodes after it does not remember them again.
    """

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._seen: dict[tuple[str, str], tuple[Card, Evidence]] = {}
        self._purged: set[bytes] = set()

    def parts(self, body: object, evidence: object) -> tuple[Card, Evidence]:
        """The validated card and evidence of ``body`` and ``evidence``; RecordError as
        :func:`decode_draft` raises it."""
        if not isinstance(body, str) or not isinstance(evidence, str):
            return _content(body, evidence)  # raises
        key = (body, evidence)
        found = self._seen.get(key)
        if found is None:
            found = _content(body, evidence)
            if self._purged and _digest(key) in self._purged:
                return found
            if len(self._seen) >= self._capacity:
                self._seen.clear()
            self._seen[key] = found
        return found

    def forget(self, contents: Iterable[tuple[str, str]]) -> None:
        """Drop each (body, evidence) of a purged lesson, and never remember it again."""
        for key in contents:
            self._seen.pop(key, None)
            self._purged.add(_digest(key))

    def draft(self, body: object, evidence: object) -> LessonDraft:
        """:func:`decode_draft` through this memory."""
        return _draft(*self.parts(body, evidence))
