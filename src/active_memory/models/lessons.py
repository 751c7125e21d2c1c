"""Lessons: the card an agent sees, its scope, and the evidence kept beside it.

Every constructor validates its limits (bytes counted in UTF-8) and raises
:class:`~active_memory.errors.LessonValidationError` naming the field and the limit. Rules that
depend on a run or a checkout (references observed in this run, files that exist, source
positions, secrets) belong to admission, not here: legacy cards must stay readable even when
admission would now refuse them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

from active_memory.errors import LessonValidationError
from active_memory.limits import BROAD_WORDS, LIMITS
from active_memory.models.fields import (
    check_count,
    check_unique,
    literal_path,
    one_line,
    reject_unknown,
    require,
    require_object,
    tuple_of_str,
)
from active_memory.models.ids import validate_lesson_id
from active_memory.repository import validate_repository_key

__all__ = [
    "Evidence",
    "GraphScope",
    "Lesson",
    "LessonDraft",
    "RepositoryScope",
    "Scope",
    "scope_from_dict",
    "validate_reference",
]

_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+")
_KEYWORD = re.compile(r"[a-z0-9]+")
_GRAPH_HASH = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
# A path every literal_path rule accepts: ASCII word segments, none of them '.' or '..'.
_PLAIN_SEGMENT = r"(?!\.\.?(?:/|\Z))[\w.-]+"
_PLAIN_PATH = re.compile(rf"{_PLAIN_SEGMENT}(?:/{_PLAIN_SEGMENT})*", re.ASCII)
_REFERENCE = re.compile(r"(exec|receipt|repository|graph|source):(\S.*)")


# Field names are built only when a check fails: scopes are re-validated on every snapshot.


def _checked_paths(name: str, value: object, maximum: int) -> tuple[str, ...]:
    where = "scope." + name
    items = tuple_of_str(where, value)
    check_count(where, items, maximum)
    limit = LIMITS.path_bytes
    for index, item in enumerate(items):
        # Plain ASCII paths pass every rule; only the others need the full checks.
        if len(item) > limit or not _PLAIN_PATH.fullmatch(item):
            literal_path(f"{where}[{index}]", item)
    check_unique(where, items)
    return items


def _checked_identifiers(value: object) -> tuple[str, ...]:
    identifiers = tuple_of_str("scope.identifiers", value)
    check_count("scope.identifiers", identifiers, LIMITS.identifiers)
    low, high = LIMITS.identifier_min_chars, LIMITS.identifier_max_chars
    for index, ident in enumerate(identifiers):
        if not (low <= len(ident) <= high) or not _IDENTIFIER.fullmatch(ident):
            raise LessonValidationError(
                f"scope.identifiers[{index}]",
                f"{ident!r} must be {low}-{high} characters of [A-Za-z0-9_]",
            )
    check_unique("scope.identifiers", identifiers)
    return identifiers


def _checked_keyword_groups(value: object) -> tuple[tuple[str, ...], ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise LessonValidationError("scope.keyword_groups", "must be a list of term lists")
    groups = tuple(
        tuple_of_str(f"scope.keyword_groups[{i}]", group) for i, group in enumerate(value)
    )
    check_count("scope.keyword_groups", groups, LIMITS.keyword_groups)
    low, high = LIMITS.keyword_group_min_terms, LIMITS.keyword_group_max_terms
    lo, hi = LIMITS.keyword_min_chars, LIMITS.keyword_max_chars
    for gi, group in enumerate(groups):
        if not (low <= len(group) <= high):
            raise LessonValidationError(
                f"scope.keyword_groups[{gi}]",
                f"has {len(group)} terms; a group needs {low} to {high}",
            )
        for term in group:
            if not (lo <= len(term) <= hi) or not _KEYWORD.fullmatch(term):
                raise LessonValidationError(
                    f"scope.keyword_groups[{gi}]",
                    f"term {term!r} must be {lo}-{hi} characters of [a-z0-9]",
                )
            if term in BROAD_WORDS:
                raise LessonValidationError(
                    f"scope.keyword_groups[{gi}]",
                    f"term {term!r} is too broad to retrieve a card; use specific terms",
                )
        check_unique(f"scope.keyword_groups[{gi}]", group)
    return groups


@dataclass(frozen=True, slots=True)
class RepositoryScope:
    """A repository lesson: associations that retrieve it when a tool call touches them."""

    kind: ClassVar[Literal["repository"]] = "repository"
    repository: str
    files: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    keyword_groups: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        validate_repository_key("scope.repository", self.repository)
        set_field = object.__setattr__
        set_field(self, "files", _checked_paths("files", self.files, LIMITS.files))
        set_field(self, "folders", _checked_paths("folders", self.folders, LIMITS.folders))
        set_field(self, "identifiers", _checked_identifiers(self.identifiers))
        set_field(self, "keyword_groups", _checked_keyword_groups(self.keyword_groups))
        if not (self.files or self.folders or self.identifiers or self.keyword_groups):
            raise LessonValidationError(
                "scope",
                "a repository lesson needs at least one file, folder, identifier or keyword group",
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "repository": self.repository,
            "files": list(self.files),
            "folders": list(self.folders),
            "identifiers": list(self.identifiers),
            "keyword_groups": [list(group) for group in self.keyword_groups],
        }


@dataclass(frozen=True, slots=True)
class GraphScope:
    """A graph lesson: procedural guidance for one node of one authored graph version."""

    kind: ClassVar[Literal["graph"]] = "graph"
    graph_hash: str
    node_id: str
    repository: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.graph_hash, str) or not _GRAPH_HASH.fullmatch(self.graph_hash):
            raise LessonValidationError(
                "scope.graph_hash", f"{self.graph_hash!r} must be 64 lowercase hex characters"
            )
        one_line("scope.node_id", self.node_id, LIMITS.node_id_bytes)
        if self.repository is not None:
            validate_repository_key("scope.repository", self.repository)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "graph_hash": self.graph_hash,
            "node_id": self.node_id,
            "repository": self.repository,
        }


Scope: TypeAlias = RepositoryScope | GraphScope


_REPOSITORY_SCOPE_KEYS = frozenset(
    {"kind", "repository", "files", "folders", "identifiers", "keyword_groups"}
)
_GRAPH_SCOPE_KEYS = frozenset({"kind", "graph_hash", "node_id", "repository"})
_EVIDENCE_KEYS = frozenset({"run_id", "references", "reason", "source_commit"})


def scope_from_dict(data: Mapping[str, Any]) -> Scope:
    kind = require(require_object(data, "scope"), "kind", "scope")
    if kind == "repository":
        if data.keys() == _REPOSITORY_SCOPE_KEYS:
            # Every field present and none unknown (what the store writes): the constructor's
            # checks are all that is left.
            return RepositoryScope(
                data["repository"],
                data["files"],
                data["folders"],
                data["identifiers"],
                data["keyword_groups"],
            )
        reject_unknown(data, _REPOSITORY_SCOPE_KEYS, "scope")
        return RepositoryScope(
            repository=require(data, "repository", "scope"),
            files=data.get("files", ()),
            folders=data.get("folders", ()),
            identifiers=data.get("identifiers", ()),
            keyword_groups=data.get("keyword_groups", ()),
        )
    if kind == "graph":
        reject_unknown(data, _GRAPH_SCOPE_KEYS, "scope")
        return GraphScope(
            graph_hash=require(data, "graph_hash", "scope"),
            node_id=require(data, "node_id", "scope"),
            repository=data.get("repository"),
        )
    raise LessonValidationError("scope.kind", f"{kind!r} must be 'repository' or 'graph'")


def validate_reference(field_name: str, value: object) -> str:
    ref = one_line(field_name, value, LIMITS.reference_bytes)
    if not _REFERENCE.fullmatch(ref):
        raise LessonValidationError(
            field_name,
            f"{ref!r} must be exec:<id>, receipt:<seq>, repository:<path>, graph:<node> "
            "or source:<commit>",
        )
    return ref


@dataclass(frozen=True, slots=True)
class Evidence:
    """Why a lesson exists: stored beside the card, never injected into an agent."""

    run_id: str
    references: tuple[str, ...]
    reason: str
    source_commit: str | None = None

    def __post_init__(self) -> None:
        one_line("evidence.run_id", self.run_id, LIMITS.run_id_bytes)
        refs = tuple_of_str("evidence.references", self.references)
        object.__setattr__(self, "references", refs)
        low, high = LIMITS.references_min, LIMITS.references_max
        if not (low <= len(refs) <= high):
            raise LessonValidationError(
                "evidence.references", f"has {len(refs)} entries; {low} to {high} are required"
            )
        limit = LIMITS.reference_bytes
        for index, ref in enumerate(refs):
            # Printable ASCII within the limit is one line of that many bytes; the rest (and any
            # failure) goes through validate_reference for its exact message.
            if not (
                len(ref) <= limit
                and ref.isascii()
                and ref.isprintable()
                and _REFERENCE.fullmatch(ref)
            ):
                validate_reference(f"evidence.references[{index}]", ref)
        check_unique("evidence.references", refs)
        one_line("evidence.reason", self.reason, LIMITS.reason_bytes)
        if self.source_commit is not None and (
            not isinstance(self.source_commit, str) or not _COMMIT.fullmatch(self.source_commit)
        ):
            raise LessonValidationError(
                "evidence.source_commit",
                f"{self.source_commit!r} must be a full lowercase hex commit id or null",
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "references": list(self.references),
            "reason": self.reason,
            "source_commit": self.source_commit,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        require_object(data, "evidence")
        if data.keys() == _EVIDENCE_KEYS:
            return cls(data["run_id"], data["references"], data["reason"], data["source_commit"])
        reject_unknown(data, _EVIDENCE_KEYS, "evidence")
        return cls(
            run_id=require(data, "run_id", "evidence"),
            references=require(data, "references", "evidence"),
            reason=require(data, "reason", "evidence"),
            source_commit=data.get("source_commit"),
        )


def _check_content(scope: object, title: object, recommendation: object, evidence: object) -> None:
    """The rules a draft and a stored lesson share, kept in one place so both hold the same."""
    if not isinstance(scope, (RepositoryScope, GraphScope)):
        raise LessonValidationError("scope", "must be a RepositoryScope or GraphScope")
    if not isinstance(evidence, Evidence):
        raise LessonValidationError("evidence", "must be an Evidence")
    one_line("title", title, LIMITS.title_bytes)
    one_line("recommendation", recommendation, LIMITS.recommendation_bytes)


@dataclass(frozen=True, slots=True)
class LessonDraft:
    """A lesson's content before the host gives it an id and a revision."""

    scope: Scope
    title: str
    recommendation: str
    evidence: Evidence

    def __post_init__(self) -> None:
        _check_content(self.scope, self.title, self.recommendation, self.evidence)

    def card_dict(self) -> dict[str, Any]:
        """The injected part (title, recommendation, scope), without evidence."""
        return {
            "title": self.title,
            "recommendation": self.recommendation,
            "scope": self.scope.to_dict(),
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self.card_dict(), "evidence": self.evidence.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LessonDraft:
        require_object(data, "lesson")
        reject_unknown(data, {"title", "recommendation", "scope", "evidence"}, "")
        return cls(
            scope=scope_from_dict(require(data, "scope", "")),
            title=require(data, "title", ""),
            recommendation=require(data, "recommendation", ""),
            evidence=Evidence.from_dict(require(data, "evidence", "")),
        )


@dataclass(frozen=True, slots=True)
class Lesson:
    """A stored lesson: host-assigned id, host-owned revision (≥ 1), and its content."""

    id: str
    revision: int
    scope: Scope
    title: str
    recommendation: str
    evidence: Evidence

    def __post_init__(self) -> None:
        validate_lesson_id("id", self.id)
        if isinstance(self.revision, bool) or not isinstance(self.revision, int):
            raise LessonValidationError("revision", "must be an integer")
        if self.revision < 1:
            raise LessonValidationError("revision", f"is {self.revision}; revisions start at 1")
        _check_content(self.scope, self.title, self.recommendation, self.evidence)

    @property
    def key(self) -> str:
        """``id@revision``: what the exposure ledger and delivery manifest record."""
        return f"{self.id}@{self.revision}"

    @property
    def draft(self) -> LessonDraft:
        return LessonDraft(self.scope, self.title, self.recommendation, self.evidence)

    @classmethod
    def from_draft(cls, lesson_id: str, revision: int, draft: LessonDraft) -> Lesson:
        return cls(lesson_id, revision, draft.scope, draft.title, draft.recommendation,
                   draft.evidence)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "revision": self.revision, **self.draft.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Lesson:
        body = {
            k: v for k, v in require_object(data, "lesson").items() if k not in ("id", "revision")
        }
        draft = LessonDraft.from_dict(body)
        return cls.from_draft(require(data, "id", ""), require(data, "revision", ""), draft)
