"""What a postmortem did: frozen per-specialist reports, their totals, and their JSON form.

A report never holds lesson text beyond the titles of the lessons it published (or would
publish, in a dry run): rejections are counts by admission stage, decisions counts by action,
errors one line naming what failed. The same report is returned to the host, printed by the CLI
(``report.model_dump(mode="json")`` for ``--json``) and projected onto the run log's allow-list.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
)

from active_memory.models.base import Model
from active_memory.roles import ROLE_ROWS

__all__ = [
    "ACTIONS",
    "TOKEN_COUNTS",
    "ChangeOp",
    "CheckoutStatus",
    "DowngradeNote",
    "LessonChange",
    "ModelTraffic",
    "PostmortemReport",
    "PostmortemStatus",
    "QuarantineNote",
    "SpecialistReport",
    "SpecialistStatus",
    "checkout_note",
]

SpecialistStatus: TypeAlias = Literal[
    "published",
    "nothing_to_do",
    "failed",
    "timed_out",
    "cancelled",
    "conflict",
    "skipped",
    "dry_run",
]
PostmortemStatus: TypeAlias = Literal[
    "completed",
    "partial",
    "failed",
    "skipped",
    "cancelled",
    "timed_out",
    "conflict",
    "checkout_changed",
    "dry_run",
]
ChangeOp: TypeAlias = Literal["create", "adapt", "retire"]
CheckoutStatus: TypeAlias = Literal["git", "not_git", "uninspectable", "none"]
ACTIONS: tuple[str, ...] = ("keep", "adapt", "retire", "defer")
# A specialist's token counts, in the order its JSON form, the report's totals and the run log
# carry them.
TOKEN_COUNTS: tuple[str, ...] = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)
_SUCCESS: frozenset[str] = frozenset({"published", "nothing_to_do", "skipped", "dry_run"})
_REPOSITORY_SPECIALISTS = tuple(row.name for row in ROLE_ROWS if row.scope == "repository")
_UNVERIFIABLE: Mapping[str, str] = MappingProxyType(
    {
        "not_git": "the checkout is not a git work tree",
        "uninspectable": "the checkout could not be inspected with git",
        "none": "the record names no checkout",
    }
)


def checkout_note(checkout: CheckoutStatus | None) -> str | None:
    """Why repository lessons could not be verified, in one sentence; None when they could
    (or the checkout was never inspected). Admission rejects every repository proposal as
    ``source:no_checkout`` and defers repository adapt/retire then, which alone says little."""
    what = _UNVERIFIABLE.get(checkout or "git")
    if what is None:
        return None
    return (
        f"{what}, so repository lessons cannot be verified: repository proposals are rejected "
        "(source:no_checkout) and adapt/retire of repository lessons are deferred"
    )


def _frozen(counts: Mapping[str, int]) -> Mapping[str, int]:
    return MappingProxyType(dict(sorted(counts.items())))


def _read_only(values: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(values))


def _as_tuple(value: object) -> object:
    # Built from lists as often as from tuples; strict validation takes only tuples.
    return tuple(value) if type(value) is list else value


# Counts by name, sorted and read-only, serialised as a plain object.
Counts = Annotated[Mapping[str, int], AfterValidator(_frozen)]
Digests = Annotated[Mapping[str, str], AfterValidator(_read_only)]
_NO_COUNTS: Mapping[str, int] = MappingProxyType({})


def _no_counts() -> Mapping[str, int]:
    # A factory: pydantic deep-copies a plain default it cannot hash, and a read-only mapping
    # cannot be copied (nor needs to be).
    return _NO_COUNTS


class DowngradeNote(Model):
    """An accepted adapt or retire the host turned into ``defer`` (provenance, related adapt)."""

    id: str
    action: str
    reason: str


class QuarantineNote(Model):
    """A discovered lesson held for review instead of published: the id it waits under, its
    specialist and the weak signals it tripped (``stage:code``, never text). ``kept`` is False
    when the store keeps no quarantine (a dry run, a read-only store) or could not write it."""

    id: str
    specialist: str
    signals: Annotated[tuple[str, ...], BeforeValidator(_as_tuple)] = ()
    kept: bool = False


class LessonChange(Model):
    """One mutation published (or, in a dry run, that would be published).

    ``revision`` is the revision the store assigned; None when nothing was written.
    """

    op: ChangeOp
    id: str
    specialist: str
    expected_revision: int
    revision: int | None = None
    title: str | None = None


class ModelTraffic(Model):
    """Where a postmortem's or a trial's model traffic went, as
    :class:`~active_memory.postmortem.binding.Route` says, and the model the server said
    answered (None when it said none)."""

    provider: str | None = None
    lane: str | None = None
    host: str | None = None
    model: str | None = None
    answered_model: str | None = None


class SpecialistReport(Model):
    """One specialist's part of a postmortem.

    ``decisions`` counts applied actions (after host downgrades) by keep/adapt/retire/defer;
    ``rejections`` counts admission refusals by stage; ``retries`` counts provider retries and
    ``conflict_retries`` re-invocations after a revision conflict; ``investigation_max_tokens``
    and ``answer_max_tokens`` the output caps its turns asked for (beside the tokens used);
    ``mutations`` what it published or would publish; ``text_calls`` the turns whose call the
    model wrote as text (taken as calls on a lane that reads them); ``answered_model`` the model
    the server said answered. ``skipped_reason`` says why a specialist that could not succeed
    on this run was not started (None when its scope was off, or it ran). ``keep_ids`` lists every
    lesson whose applied decision is keep: a keep publishes nothing, so this is the only record of
    it (the ledger counts a lesson's keeps from it). ``input_tokens`` counts every prompt token of
    its sessions; ``cache_read_tokens`` is the part a provider's prompt cache served and
    ``cache_write_tokens`` the part written to it (so the uncached input is ``input_tokens -
    cache_read_tokens``).
    """

    specialist: str
    status: SpecialistStatus
    batches: int = 0
    decisions: Counts = Field(default_factory=_no_counts)
    keep_ids: Annotated[tuple[str, ...], BeforeValidator(_as_tuple)] = ()
    downgrades: Annotated[tuple[DowngradeNote, ...], BeforeValidator(_as_tuple)] = ()
    proposals_accepted: int = 0
    quarantined: int = 0
    rejections: Counts = Field(default_factory=_no_counts)
    mutations: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # The output caps its turns asked for (the largest over its sessions; 0: no session).
    investigation_max_tokens: int = 0
    answer_max_tokens: int = 0
    retries: int = 0
    conflict_retries: int = 0
    text_calls: int = 0
    answered_model: str | None = None
    elapsed_ms: int = 0
    error: str | None = None
    error_code: str | None = None
    skipped_reason: str | None = None

    @field_serializer("decisions")
    def _every_action(self, decisions: Mapping[str, int]) -> dict[str, int]:
        return {action: decisions.get(action, 0) for action in ACTIONS}

    @field_serializer("rejections")
    def _plain_counts(self, counts: Mapping[str, int]) -> dict[str, int]:
        return dict(counts)

    @property
    def ok(self) -> bool:
        return self.status in _SUCCESS

    @property
    def rejected(self) -> int:
        return sum(self.rejections.values())

    @property
    def tokens(self) -> dict[str, int]:
        """The :data:`TOKEN_COUNTS` by name."""
        return {name: getattr(self, name) for name in TOKEN_COUNTS}


class PostmortemReport(ModelTraffic):
    """The whole postmortem: its status, each specialist, the changes and the store generations.

    ``reason`` explains a skipped, refused or failed postmortem in one line. ``provider``,
    ``lane``, ``host`` (the server's ``host[:port]``, None when no SDK adapter served) and
    ``model`` say where the model traffic went; ``answered_model`` is the model the server said
    answered (None when no specialist heard from it). ``prompt_sha256`` and
    ``contract_sha256`` name the exact prompt and contract versions, per specialist.
    ``checkout`` is what inspecting the record's checkout found (None when it was not
    inspected); :attr:`notes` explain its consequences for the repository specialists. The JSON
    form (``model_dump(mode="json")``) adds ``notes`` and the ``totals`` of every specialist.
    """

    run_id: str
    status: PostmortemStatus
    reason: str | None = None
    dry_run: bool = False
    source_node: str | None = None
    generation_before: int | None = None
    generation_after: int | None = None
    elapsed_ms: int = 0
    checkout: CheckoutStatus | None = None
    specialists: Annotated[tuple[SpecialistReport, ...], BeforeValidator(_as_tuple)] = ()
    changes: Annotated[tuple[LessonChange, ...], BeforeValidator(_as_tuple)] = ()
    quarantined: Annotated[tuple[QuarantineNote, ...], BeforeValidator(_as_tuple)] = ()
    prompt_sha256: Digests = Field(default_factory=lambda: _read_only({}))
    contract_sha256: Digests = Field(default_factory=lambda: _read_only({}))

    @field_serializer("prompt_sha256", "contract_sha256")
    def _plain_digests(self, digests: Mapping[str, str]) -> dict[str, str]:
        return dict(digests)

    @model_serializer(mode="wrap")
    def _with_totals(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        out["notes"] = list(self.notes)
        out["totals"] = {
            "decisions": dict(self.decisions),
            "proposals_accepted": self.proposals_accepted,
            "rejections": dict(self.rejections),
            "mutations": len(self.changes),
            "published": len(self.published),
            **self.tokens,
        }
        return out

    @property
    def ok(self) -> bool:
        """True when nothing failed: every specialist published, had nothing to do or was off."""
        return self.status in ("completed", "skipped", "dry_run")

    def specialist(self, name: str) -> SpecialistReport:
        for report in self.specialists:
            if report.specialist == name:
                return report
        raise KeyError(f"no specialist {name!r} in this report")

    @property
    def notes(self) -> tuple[str, ...]:
        """Plain sentences on what limited the review although nothing failed."""
        ran = any(
            s.specialist in _REPOSITORY_SPECIALISTS and s.status != "skipped"
            for s in self.specialists
        )
        note = checkout_note(self.checkout) if ran else None
        notes = [note] if note is not None else []
        notes.extend(
            f"{s.specialist} {s.skipped_reason}" for s in self.specialists if s.skipped_reason
        )
        return tuple(notes)

    @property
    def tokens(self) -> dict[str, int]:
        """The :data:`TOKEN_COUNTS` of every specialist, summed, by name."""
        return {name: sum(s.tokens[name] for s in self.specialists) for name in TOKEN_COUNTS}

    # The same totals by attribute, as a caller of this public model has read them (beside
    # ``retries`` and ``rejections``).
    @property
    def input_tokens(self) -> int:
        return self.tokens["input_tokens"]

    @property
    def output_tokens(self) -> int:
        return self.tokens["output_tokens"]

    @property
    def cache_read_tokens(self) -> int:
        return self.tokens["cache_read_tokens"]

    @property
    def cache_write_tokens(self) -> int:
        return self.tokens["cache_write_tokens"]

    @property
    def retries(self) -> int:
        return sum(s.retries for s in self.specialists)

    @property
    def rejections(self) -> Mapping[str, int]:
        """Admission rejections of every specialist, by stage."""
        totals: dict[str, int] = {}
        for report in self.specialists:
            for stage, count in report.rejections.items():
                totals[stage] = totals.get(stage, 0) + count
        return _frozen(totals)

    @property
    def decisions(self) -> Mapping[str, int]:
        totals = dict.fromkeys(ACTIONS, 0)
        for report in self.specialists:
            for action, count in report.decisions.items():
                totals[action] = totals.get(action, 0) + count
        return MappingProxyType(totals)

    @property
    def proposals_accepted(self) -> int:
        return sum(s.proposals_accepted for s in self.specialists)

    @property
    def published(self) -> tuple[LessonChange, ...]:
        return tuple(change for change in self.changes if change.revision is not None)
