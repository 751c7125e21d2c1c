"""The change vocabulary: maintenance decisions, discovery proposals, admission rejections, and
the mutations of a checked publication."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Self, TypeAlias

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from active_memory.limits import LIMITS
from active_memory.models.base import Model
from active_memory.models.fields import Check, Entries, OneLine
from active_memory.models.ids import LessonId
from active_memory.models.lessons import LessonDraft

__all__ = ["Decision", "DecisionAction", "Mutation", "Proposal", "Publication", "Rejection"]

DecisionAction: TypeAlias = Literal["keep", "adapt", "retire", "defer"]


def _expected_revision_problem(value: int) -> str | None:
    if value < 0:
        return "must be 0 or more"
    if value > LIMITS.revision_max:
        return f"must be at most {LIMITS.revision_max}"
    return None


class Decision(Model):
    """A maintenance specialist's verdict on one supplied lesson.

    The host binds ``id`` to the frozen revision it supplied; models never return revisions.
    ``replacement`` is required for ``adapt`` and forbidden otherwise.
    """

    error_root: ClassVar[str] = "decision"

    id: LessonId
    action: DecisionAction
    reason: Annotated[str, OneLine(LIMITS.reason_bytes)]
    references: Annotated[tuple[str, ...], Entries(LIMITS.references_max)] = ()
    # Validated even when left out, so the rule below also sees a missing replacement.
    replacement: LessonDraft | None = Field(default=None, validate_default=True)

    @field_validator("replacement")
    @classmethod
    def _replacement_only_for_adapt(
        cls, replacement: LessonDraft | None, info: ValidationInfo
    ) -> LessonDraft | None:
        action = info.data.get("action")
        if action is not None and (action == "adapt") != (replacement is not None):
            raise PydanticCustomError("replacement", "is required for 'adapt' and only for 'adapt'")
        return replacement


class Proposal(Model):
    """A discovery specialist's new lesson, before admission."""

    error_root: ClassVar[str] = "proposal"

    draft: LessonDraft
    node_id: str | None = None
    repository_specific: bool = True


class Rejection(Model):
    """One admission refusal. Never carries the lesson text, so it is safe to log."""

    error_root: ClassVar[str] = "rejection"

    stage: str
    role: str
    code: str
    index: int
    id: str | None = None


class Mutation(Model):
    """One change in a checked batch.

    ``upsert`` with ``expected_revision == 0`` creates ``id``; otherwise it replaces the live
    revision it names. ``retire`` tombstones the id at the revision it names. The host assigns
    the next revision; callers never choose one.
    """

    error_root: ClassVar[str] = "mutation"

    op: Literal["upsert", "retire"]
    id: LessonId
    expected_revision: Annotated[int, Check(_expected_revision_problem, "revision")]
    draft: LessonDraft | None = Field(default=None, validate_default=True)

    @field_validator("draft")
    @classmethod
    def _upsert_has_a_draft(
        cls, draft: LessonDraft | None, info: ValidationInfo
    ) -> LessonDraft | None:
        if info.data.get("op") == "upsert" and draft is None:
            raise PydanticCustomError("draft", "an upsert needs a draft")
        return draft

    @model_validator(mode="after")
    def _retire_names_a_revision(self) -> Self:
        if self.op == "retire" and (self.draft is not None or self.expected_revision == 0):
            raise PydanticCustomError(
                "retire", "a retire names an existing revision (≥ 1) and carries no draft"
            )
        return self


class Publication(Model):
    """A checked batch: every mutation commits together or none does."""

    error_root: ClassVar[str] = "publication"

    run_id: str
    mutations: Annotated[tuple[Mutation, ...], Entries()] = ()

    @field_validator("mutations")
    @classmethod
    def _one_mutation_per_id(cls, mutations: tuple[Mutation, ...]) -> tuple[Mutation, ...]:
        seen: set[str] = set()
        for mutation in mutations:
            if mutation.id in seen:
                raise PydanticCustomError(
                    "duplicate", f"repeats {mutation.id!r}; entries must be unique"
                )
            seen.add(mutation.id)
        return mutations
