"""Rows to lessons and back: the card JSON (body) and the evidence JSON, stored apart.

The body is exactly what an agent may be shown (title, recommendation, scope); evidence lives
in its own column so no reader can inject it by accident. JSON is canonical (sorted keys, no
spaces) so equal content is byte-equal and sizes are stable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from active_memory.errors import LessonValidationError
from active_memory.models.lessons import Evidence, GraphScope, Lesson, LessonDraft, scope_from_dict

__all__ = [
    "EncodedDraft",
    "RecordError",
    "canonical_json",
    "decode_draft",
    "decode_lesson",
    "encode_draft",
]


_CARD_KEYS = frozenset({"title", "recommendation", "scope"})


class RecordError(ValueError):
    """A stored row cannot be turned back into a valid lesson."""


def canonical_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


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
    return EncodedDraft(
        kind=scope.kind,
        repository=scope.repository,
        graph_hash=scope.graph_hash if isinstance(scope, GraphScope) else None,
        node_id=scope.node_id if isinstance(scope, GraphScope) else None,
        body=canonical_json(draft.card_dict()),
        evidence=canonical_json(draft.evidence.to_dict()),
    )


def decode_draft(body: object, evidence: object) -> LessonDraft:
    """Parse and re-validate stored JSON; RecordError says what is wrong."""
    if not isinstance(body, str) or not isinstance(evidence, str):
        raise RecordError("body or evidence is missing")
    try:
        card = json.loads(body)
        proof = json.loads(evidence)
        if not isinstance(card, dict) or not isinstance(proof, dict):
            raise RecordError("body and evidence must be JSON objects")
        if card.keys() == _CARD_KEYS:
            # The shape encode_draft writes: build the parts directly instead of merging the
            # dicts for LessonDraft.from_dict; every constructor still runs every check.
            return LessonDraft(
                scope=scope_from_dict(card["scope"]),
                title=card["title"],
                recommendation=card["recommendation"],
                evidence=Evidence.from_dict(proof),
            )
        return LessonDraft.from_dict({**card, "evidence": proof})
    except json.JSONDecodeError as error:
        raise RecordError(f"invalid JSON ({error.msg})") from None
    except LessonValidationError as error:
        raise RecordError(f"fails lesson validation ({error})") from None
    except (TypeError, KeyError, AttributeError) as error:
        raise RecordError(f"has an unexpected shape ({error})") from None


def decode_lesson(
    lesson_id: str,
    revision: int,
    body: object,
    evidence: object,
    *,
    kind: object,
    repository: object,
    graph_hash: object,
    node_id: object,
) -> Lesson:
    """A live row as a Lesson; the indexed scope columns must agree with the body's scope."""
    draft = decode_draft(body, evidence)
    scope = draft.scope
    if isinstance(scope, GraphScope):
        expected: tuple[object, ...] = ("graph", scope.repository, scope.graph_hash, scope.node_id)
    else:
        expected = ("repository", scope.repository, None, None)
    if (kind, repository, graph_hash, node_id) != expected:
        raise RecordError("its scope columns disagree with its body")
    try:
        return Lesson.from_draft(lesson_id, revision, draft)
    except LessonValidationError as error:
        raise RecordError(f"fails lesson validation ({error})") from None
