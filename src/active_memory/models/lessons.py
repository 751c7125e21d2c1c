"""Lessons: the card an agent sees, its scope, and the evidence kept beside it.

Every model validates its limits (bytes counted in UTF-8) and raises
:class:`~active_memory.errors.LessonValidationError` naming the field path and the limit. Rules
that depend on a run or a checkout (references observed in this run, files that exist, source
positions, secrets) belong to admission, not here: legacy cards must stay readable even when
admission would now refuse them.

Serialise with ``model_dump(mode="json")`` (a scope carries its ``kind``); read back with
``Lesson.parse(data)`` or ``Lesson.parse_json(text)``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal, Self, TypeAlias, TypeVar

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from active_memory.errors import LessonValidationError
from active_memory.limits import BROAD_WORDS, LIMITS
from active_memory.models.base import Model
from active_memory.models.fields import (
    Check,
    Entries,
    Identifier,
    LiteralPath,
    OneLine,
    RepositoryKey,
    one_line,
    one_line_problem,
)
from active_memory.models.ids import LessonId

__all__ = [
    "Card",
    "Evidence",
    "GraphScope",
    "KeywordGroup",
    "Lesson",
    "LessonDraft",
    "Recommendation",
    "Reference",
    "RepositoryScope",
    "Scope",
    "Title",
    "validate_reference",
]

_KEYWORD = re.compile(r"[a-z0-9]+")
_GRAPH_HASH = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_REFERENCE = re.compile(r"(exec|receipt|repository|graph|source):(\S.*)")
# Printable ASCII within the byte limit, in one of the shapes: passes every reference rule.
_PLAIN_REFERENCE = re.compile(
    rf"(?=[ -~]{{1,{LIMITS.reference_bytes}}}\Z)(exec|receipt|repository|graph|source):\S.*"
)
_REFERENCE_SHAPES = (
    "must be exec:<id>, receipt:<seq>, repository:<path>, graph:<node> or source:<commit>"
)


def _keyword_group_problem(group: tuple[str, ...]) -> str | None:
    low, high = LIMITS.keyword_group_min_terms, LIMITS.keyword_group_max_terms
    if not (low <= len(group) <= high):
        return f"has {len(group)} terms; a group needs {low} to {high}"
    lo, hi = LIMITS.keyword_min_chars, LIMITS.keyword_max_chars
    for term in group:
        if not (lo <= len(term) <= hi) or not _KEYWORD.fullmatch(term):
            return f"term {term!r} must be {lo}-{hi} characters of [a-z0-9]"
        if term in BROAD_WORDS:
            return f"term {term!r} is too broad to retrieve a card; use specific terms"
    if len(set(group)) != len(group):
        return next(
            f"repeats {term!r}; entries must be unique"
            for index, term in enumerate(group)
            if term in group[:index]
        )
    return None


def _reference_problem(ref: str) -> str | None:
    # Printable ASCII within the limit is one line of that many bytes.
    if not (len(ref) <= LIMITS.reference_bytes and ref.isascii() and ref.isprintable()):
        problem = one_line_problem(ref, LIMITS.reference_bytes)
        if problem:
            return problem
    if _REFERENCE.fullmatch(ref):
        return None
    return f"{ref!r} {_REFERENCE_SHAPES}"


def _graph_hash_problem(value: str) -> str | None:
    if _GRAPH_HASH.fullmatch(value):
        return None
    return f"{value!r} must be 64 lowercase hex characters"


def _commit_problem(value: str) -> str | None:
    if _COMMIT.fullmatch(value):
        return None
    return f"{value!r} must be a full lowercase hex commit id or null"


def _revision_problem(value: int) -> str | None:
    if value < 1:
        return f"is {value}; revisions start at 1"
    if value > LIMITS.revision_max:
        return f"is {value}; revisions go up to {LIMITS.revision_max}"
    return None


Title = Annotated[str, OneLine(LIMITS.title_bytes)]
Recommendation = Annotated[str, OneLine(LIMITS.recommendation_bytes)]
KeywordGroup = Annotated[tuple[str, ...], Entries(), Check(_keyword_group_problem, "keywords")]
"""2-4 unique specific terms of ``[a-z0-9]``; a card matches when all of them occur."""
Reference = Annotated[str, Check(_reference_problem, "reference", accept=_PLAIN_REFERENCE)]
"""Evidence: ``exec:<id>``, ``receipt:<seq>``, ``repository:<path>``, ``graph:<node>`` or
``source:<commit>``, one line within the reference byte limit."""
_Paths = tuple[LiteralPath, ...]


def validate_reference(field_name: str, value: object) -> str:
    """``value`` if it is a well-formed evidence reference, else LessonValidationError."""
    ref = one_line(field_name, value, LIMITS.reference_bytes)
    problem = _reference_problem(ref)
    if problem:
        raise LessonValidationError(field_name, problem)
    return ref


class RepositoryScope(Model):
    """A repository lesson: associations that retrieve it when a tool call touches them."""

    error_root: ClassVar[str] = "scope"

    kind: Literal["repository"] = "repository"
    repository: RepositoryKey
    files: Annotated[_Paths, Entries(LIMITS.files, unique=True)] = ()
    folders: Annotated[_Paths, Entries(LIMITS.folders, unique=True)] = ()
    identifiers: Annotated[tuple[Identifier, ...], Entries(LIMITS.identifiers, unique=True)] = ()
    keyword_groups: Annotated[tuple[KeywordGroup, ...], Entries(LIMITS.keyword_groups)] = ()

    @model_validator(mode="after")
    def _has_an_association(self) -> Self:
        if not (self.files or self.folders or self.identifiers or self.keyword_groups):
            raise PydanticCustomError(
                "no_association",
                "a repository lesson needs at least one file, folder, identifier or keyword group",
            )
        return self


class GraphScope(Model):
    """A graph lesson: procedural guidance for one node of one authored graph version."""

    error_root: ClassVar[str] = "scope"

    kind: Literal["graph"] = "graph"
    graph_hash: Annotated[str, Check(_graph_hash_problem, "graph_hash", accept=_GRAPH_HASH)]
    node_id: Annotated[str, OneLine(LIMITS.node_id_bytes)]
    repository: RepositoryKey | None = None


Scope: TypeAlias = Annotated[RepositoryScope | GraphScope, Field(discriminator="kind")]


class Evidence(Model):
    """Why a lesson exists: stored beside the card, never injected into an agent."""

    error_root: ClassVar[str] = "evidence"

    run_id: Annotated[str, OneLine(LIMITS.run_id_bytes)]
    references: Annotated[
        tuple[Reference, ...],
        Entries(LIMITS.references_max, minimum=LIMITS.references_min, unique=True),
    ]
    reason: Annotated[str, OneLine(LIMITS.reason_bytes)]
    source_commit: Annotated[str, Check(_commit_problem, "commit", accept=_COMMIT)] | None = None


_Content = TypeVar("_Content", bound=Model)


def _carried(target: type[_Content], source: Model, **given: Any) -> _Content:
    """A ``target`` holding ``source``'s fields of the same names, and ``given``: a card, its
    draft and its lesson share their content fields, so one rule moves them between the three
    (a field added to all of them is carried without a list to update)."""
    fields = {name: getattr(source, name) for name in target.model_fields if name not in given}
    return target(**fields, **given)


class Card(Model):
    """The injected part of a lesson (title, recommendation, scope), without its evidence: what
    an agent may be shown, and what the store keeps in its ``body`` column."""

    scope: Scope
    title: Title
    recommendation: Recommendation

    def draft(self, evidence: Evidence) -> LessonDraft:
        return _carried(LessonDraft, self, evidence=evidence)


class LessonDraft(Model):
    """A lesson's content before the host gives it an id and a revision."""

    scope: Scope
    title: Title
    recommendation: Recommendation
    evidence: Evidence

    @property
    def card(self) -> Card:
        """The injected part (title, recommendation, scope), without evidence."""
        return _carried(Card, self)


class Lesson(Model):
    """A stored lesson: host-assigned id, host-owned revision (≥ 1), and its content."""

    id: LessonId
    revision: Annotated[int, Check(_revision_problem, "revision")]
    scope: Scope
    title: Title
    recommendation: Recommendation
    evidence: Evidence

    @property
    def key(self) -> str:
        """``id@revision``: what the exposure ledger and delivery manifest record."""
        return f"{self.id}@{self.revision}"

    @property
    def draft(self) -> LessonDraft:
        return _carried(LessonDraft, self)

    @classmethod
    def from_draft(cls, lesson_id: str, revision: int, draft: LessonDraft) -> Self:
        return _carried(cls, draft, id=lesson_id, revision=revision)
