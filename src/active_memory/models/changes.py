"""The change vocabulary: maintenance decisions, discovery proposals, admission rejections, and
the mutations of a checked publication."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from active_memory.errors import LessonValidationError
from active_memory.limits import LIMITS
from active_memory.models.fields import check_count, check_unique, one_line, tuple_of_str
from active_memory.models.ids import validate_lesson_id
from active_memory.models.lessons import LessonDraft

__all__ = ["Decision", "DecisionAction", "Mutation", "Proposal", "Publication", "Rejection"]

DecisionAction: TypeAlias = Literal["keep", "adapt", "retire", "defer"]
_ACTIONS = ("keep", "adapt", "retire", "defer")


@dataclass(frozen=True, slots=True)
class Decision:
    """A maintenance specialist's verdict on one supplied lesson.

    The host binds ``id`` to the frozen revision it supplied; models never return revisions.
    ``replacement`` is required for ``adapt`` and forbidden otherwise.
    """

    id: str
    action: DecisionAction
    reason: str
    references: tuple[str, ...] = ()
    replacement: LessonDraft | None = None

    def __post_init__(self) -> None:
        validate_lesson_id("decision.id", self.id)
        if self.action not in _ACTIONS:
            raise LessonValidationError("decision.action", f"{self.action!r} not in {_ACTIONS}")
        one_line("decision.reason", self.reason, LIMITS.reason_bytes)
        refs = tuple_of_str("decision.references", self.references)
        object.__setattr__(self, "references", refs)
        check_count("decision.references", refs, LIMITS.references_max)
        if (self.action == "adapt") != (self.replacement is not None):
            raise LessonValidationError(
                "decision.replacement", "is required for 'adapt' and only for 'adapt'"
            )


@dataclass(frozen=True, slots=True)
class Proposal:
    """A discovery specialist's new lesson, before admission."""

    draft: LessonDraft
    node_id: str | None = None
    repository_specific: bool = True


@dataclass(frozen=True, slots=True)
class Rejection:
    """One admission refusal. Never carries the lesson text, so it is safe to log."""

    stage: str
    role: str
    code: str
    index: int
    id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "role": self.role,
            "code": self.code,
            "index": self.index,
            "id": self.id,
        }


@dataclass(frozen=True, slots=True)
class Mutation:
    """One change in a checked batch.

    ``upsert`` with ``expected_revision == 0`` creates ``id``; otherwise it replaces the live
    revision it names. ``retire`` tombstones the id at the revision it names. The host assigns
    the next revision; callers never choose one.
    """

    op: Literal["upsert", "retire"]
    id: str
    expected_revision: int
    draft: LessonDraft | None = None

    def __post_init__(self) -> None:
        validate_lesson_id("mutation.id", self.id)
        if self.op not in ("upsert", "retire"):
            raise LessonValidationError("mutation.op", f"{self.op!r} must be upsert or retire")
        if isinstance(self.expected_revision, bool) or not isinstance(self.expected_revision, int):
            raise LessonValidationError("mutation.expected_revision", "must be an integer")
        if self.expected_revision < 0:
            raise LessonValidationError("mutation.expected_revision", "must be 0 or more")
        if self.op == "upsert" and self.draft is None:
            raise LessonValidationError("mutation.draft", "an upsert needs a draft")
        if self.op == "retire" and (self.draft is not None or self.expected_revision == 0):
            raise LessonValidationError(
                "mutation", "a retire names an existing revision (≥ 1) and carries no draft"
            )


@dataclass(frozen=True, slots=True)
class Publication:
    """A checked batch: every mutation commits together or none does."""

    run_id: str
    mutations: tuple[Mutation, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mutations", tuple(self.mutations))
        check_unique("publication.mutations", (m.id for m in self.mutations))
