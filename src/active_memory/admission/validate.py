"""Host admission: what a specialist's answer may change, decided by pure functions.

The model proposes; the host decides. :func:`admit_maintenance` and :func:`admit_discovery` run
the stages of :data:`~active_memory.admission.stages.STAGES` in order and return frozen results:
what was accepted, and one :class:`~active_memory.models.changes.Rejection` per refusal (stage,
role, code, index, id; never any lesson text). They never raise on a bad answer; they raise
:class:`~active_memory.errors.AdmissionError` only when the host's own inputs contradict each other.

Whole-answer stages: ``shape`` (contract and size; an error inside one item, or an item
identical to an earlier one, refuses that item alone), ``coverage`` (maintenance: one decision
per supplied id, no duplicates, nothing foreign; a malformed decision still counts for the id it
names; any problem fails that reconciliation and nothing is accepted) and the opt-out half of
``scope``. Every later stage judges one item; an item stops at its first failing stage. For
maintenance a refused decision leaves its lesson untouched.

An item that passes every stage but trips only weak signals (a random-looking string, a
download that is not run, a credential file read without a destination, a shell start-up file,
a word mixing scripts) is quarantined, neither accepted nor refused: a discovery comes back in
``DiscoveryResult.quarantined`` for the host to keep for review, a maintenance decision is
deferred with the downgrade reason ``quarantined`` (its lesson stays as it is).

A repository keep (and an adapt's associations left unchanged from the card) whose file, folder
or identifier is gone from the checkout comes back :class:`~.items.Unconfirmed`: refused as
``source:association_gone`` when :func:`~active_memory.provenance.destructive_changes_allowed`
says the checkout may supersede the card, else deferred with that verdict's reason; a repository
keep with no checkout to look in is deferred too, never kept blindly.

After the stages the host applies two downgrades (recorded, not rejections): repository adapt and
retire become ``defer`` unless :func:`~active_memory.provenance.destructive_changes_allowed`
says the checkout justifies them; and when an adapt is refused or deferred, the same answer's
retirements are deferred too, since consolidation may have folded the retired advice into the
replacement that did not publish.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from active_memory.admission.coverage import coverage_rejections, readable_id, safe_id
from active_memory.admission.items import (
    ItemContext,
    Quarantined,
    Refusal,
    Unconfirmed,
    check_decision,
    check_discovery,
)
from active_memory.admission.references import RunEvidence
from active_memory.admission.shape import shape_rejections
from active_memory.admission.stages import role_spec
from active_memory.errors import AdmissionError
from active_memory.models.changes import Decision, DecisionAction, Mutation, Proposal, Rejection
from active_memory.models.config import ActiveMemoryConfig
from active_memory.models.lessons import Lesson
from active_memory.models.runs import RunRecord
from active_memory.provenance import (
    CheckoutState,
    CheckoutVerifier,
    Verdict,
    destructive_changes_allowed,
)
from active_memory.roles import Role, RoleRow

__all__ = [
    "MAX_ANSWER_BYTES",
    "AdmissionContext",
    "AdmittedProposal",
    "BoundDecision",
    "DiscoveryResult",
    "Downgrade",
    "MaintenanceResult",
    "QuarantinedProposal",
    "admit",
    "admit_discovery",
    "admit_maintenance",
]

MAX_ANSWER_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class AdmissionContext:
    """Everything admission may consult besides the answer itself."""

    run: RunRecord
    config: ActiveMemoryConfig
    checkout: CheckoutState | None = None
    verifier: CheckoutVerifier | None = None
    max_answer_bytes: int = MAX_ANSWER_BYTES

    @property
    def repository(self) -> str | None:
        """The repository key new repository lessons are scoped to."""
        if self.run.checkout is not None:
            return self.run.checkout.repository
        return self.checkout.repository if self.checkout is not None else None


@dataclass(frozen=True, slots=True)
class BoundDecision:
    """An accepted decision bound to the frozen revision the host supplied.

    ``applied`` is what publishes: the requested action, or ``defer`` after a host downgrade.
    """

    index: int
    decision: Decision
    revision: int
    applied: DecisionAction

    @property
    def id(self) -> str:
        return self.decision.id


@dataclass(frozen=True, slots=True)
class Downgrade:
    """A host-side change of an accepted decision to ``defer``, with a stable reason code."""

    index: int
    id: str
    action: DecisionAction
    reason: str


@dataclass(frozen=True, slots=True)
class MaintenanceResult:
    role: Role
    run_id: str
    complete: bool
    decisions: tuple[BoundDecision, ...]
    mutations: tuple[Mutation, ...]
    downgrades: tuple[Downgrade, ...]
    rejections: tuple[Rejection, ...]


@dataclass(frozen=True, slots=True)
class AdmittedProposal:
    index: int
    proposal: Proposal


@dataclass(frozen=True, slots=True)
class QuarantinedProposal:
    """A discovery held for review: it passed every stage but tripped weak ``signals``."""

    index: int
    proposal: Proposal
    signals: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DiscoveryResult:
    role: Role
    run_id: str
    proposals: tuple[AdmittedProposal, ...]
    rejections: tuple[Rejection, ...]
    quarantined: tuple[QuarantinedProposal, ...] = ()

    @property
    def complete(self) -> bool:
        """False when the whole answer was refused (its shape, or a disabled scope): index -1.
        A refused item, malformed or not, leaves the rest of the answer judged."""
        return all(rejection.index >= 0 for rejection in self.rejections)


def _scope_enabled(spec: RoleRow, config: ActiveMemoryConfig) -> bool:
    return config.graph if spec.scope == "graph" else config.repository


def _check_supplied(spec: RoleRow, supplied: Sequence[Lesson]) -> dict[str, Lesson]:
    by_id: dict[str, Lesson] = {}
    for lesson in supplied:
        if lesson.scope.kind != spec.scope:
            raise AdmissionError(
                f"lesson {lesson.id!r} has {lesson.scope.kind} scope and cannot be supplied to "
                f"{spec.name!r}; supply only {spec.scope} lessons"
            )
        if lesson.id in by_id:
            raise AdmissionError(f"lesson {lesson.id!r} is supplied twice to {spec.name!r}")
        by_id[lesson.id] = lesson
    return by_id


def _item_context(
    spec: RoleRow, context: AdmissionContext, read_paths: frozenset[str] | None
) -> ItemContext:
    checkout = context.checkout
    return ItemContext(
        spec=spec,
        run=context.run,
        evidence=RunEvidence.of(context.run),
        verifier=context.verifier,
        repository=context.repository,
        source_commit=checkout.source_commit if checkout is not None else None,
        read_paths=read_paths,
    )


def _verdict(context: AdmissionContext, lesson: Lesson) -> Verdict:
    if context.checkout is None:
        return Verdict(False, "no_checkout")
    return destructive_changes_allowed(context.checkout, lesson.evidence.source_commit)


def _downgrade(
    spec: RoleRow,
    context: AdmissionContext,
    supplied: Mapping[str, Lesson],
    decisions: Sequence[object],
    bound: Sequence[BoundDecision],
    rejections: Sequence[Rejection],
) -> tuple[list[BoundDecision], list[Downgrade]]:
    """Turn accepted decisions the host cannot stand behind into ``defer``, recording why."""
    applied = list(bound)
    downgrades: list[Downgrade] = []

    def defer(position: int, reason: str) -> None:
        item = applied[position]
        downgrades.append(Downgrade(item.index, item.id, item.applied, reason))
        applied[position] = BoundDecision(item.index, item.decision, item.revision, "defer")

    if spec.scope == "repository":
        for position, item in enumerate(applied):
            if item.applied in ("adapt", "retire"):
                verdict = _verdict(context, supplied[item.id])
                if not verdict.allowed:
                    defer(position, verdict.reason)
    refused = {rejection.index for rejection in rejections}
    adapt_lost = (
        any(d.action == "adapt" for d in downgrades)
        or any(item.decision.action == "adapt" and item.applied == "defer" for item in bound)
        or any(
            isinstance(raw, Mapping) and raw.get("action") == "adapt" and index in refused
            for index, raw in enumerate(decisions)
        )
    )
    if adapt_lost:
        for position, item in enumerate(applied):
            if item.applied == "retire":
                defer(position, "related_adapt_not_applied")
    return applied, sorted(downgrades, key=lambda d: d.index)


def admit_maintenance(
    answer: object,
    role: str,
    supplied: Sequence[Lesson],
    context: AdmissionContext,
    *,
    read_paths: frozenset[str] | None = None,
) -> MaintenanceResult:
    """Admit one maintenance batch: ``supplied`` are the lessons (at their frozen revisions)
    the specialist was shown; its answer must decide each exactly once. ``read_paths`` are the
    checkout files its session read (None when it had no tools over the checkout): a cited
    file outside them is refused as ``cited_file_unread``."""
    spec = role_spec(role)
    if not spec.maintenance:
        raise AdmissionError(f"{role!r} is a discovery role; use admit_discovery")
    by_id = _check_supplied(spec, supplied)
    run_id = context.run.run_id

    def failed(rejections: Sequence[Rejection]) -> MaintenanceResult:
        return MaintenanceResult(spec.name, run_id, False, (), (), (), tuple(rejections))

    shape = shape_rejections(answer, spec, context.max_answer_bytes)
    if any(rejection.index < 0 for rejection in shape):
        return failed(shape)
    assert isinstance(answer, Mapping)
    decisions: list[object] = list(answer["decisions"])
    ids = [readable_id(item) for item in decisions]
    # A malformed decision is refused alone, under the id it names when it is well-formed.
    shaped = {r.index: r.model_copy(update={"id": safe_id(ids[r.index])}) for r in shape}
    duplicates = {index for index, r in shaped.items() if r.code == "duplicate_item"}
    counted = [(index, i) for index, i in enumerate(ids) if index not in duplicates]
    coverage = coverage_rejections(spec, counted, by_id)
    if coverage:
        return failed([*shaped.values(), *coverage])
    if not _scope_enabled(spec, context.config):
        return failed([Rejection(stage="scope", role=spec.name, code="scope_disabled", index=-1)])

    items = _item_context(spec, context, read_paths)
    rejections: list[Rejection] = [r for r in shaped.values() if r.code != "duplicate_item"]
    bound: list[BoundDecision] = []
    held: list[Downgrade] = []
    for index, raw in enumerate(decisions):
        if index in shaped:
            continue
        assert isinstance(raw, Mapping)
        lesson = by_id[raw["id"]]
        checked = check_decision(raw, lesson, items)
        if isinstance(checked, Unconfirmed):
            verdict = _verdict(context, lesson)
            if checked.reason == "association_gone" and verdict.allowed:
                checked = Refusal("source", "association_gone")
            else:
                reason = "no_checkout" if verdict.allowed else verdict.reason
                held.append(Downgrade(index, lesson.id, checked.decision.action, reason))
                bound.append(BoundDecision(index, checked.decision, lesson.revision, "defer"))
                continue
        if isinstance(checked, Quarantined):
            assert isinstance(checked.item, Decision)
            held.append(Downgrade(index, lesson.id, checked.item.action, "quarantined"))
            bound.append(BoundDecision(index, checked.item, lesson.revision, "defer"))
            continue
        if isinstance(checked, Refusal):
            rejections.append(
                Rejection(
                    stage=checked.stage,
                    role=spec.name,
                    code=checked.code,
                    index=index,
                    id=lesson.id,
                )
            )
            continue
        bound.append(BoundDecision(index, checked, lesson.revision, checked.action))

    bound, downgrades = _downgrade(spec, context, by_id, decisions, bound, rejections)
    rejections += [shaped[index] for index in sorted(duplicates)]
    rejections.sort(key=lambda rejection: rejection.index)
    downgrades = sorted([*held, *downgrades], key=lambda d: d.index)
    mutations: list[Mutation] = []
    for item in bound:
        if item.applied == "adapt":
            mutations.append(
                Mutation(
                    op="upsert",
                    id=item.id,
                    expected_revision=item.revision,
                    draft=item.decision.replacement,
                )
            )
        elif item.applied == "retire":
            mutations.append(Mutation(op="retire", id=item.id, expected_revision=item.revision))
    return MaintenanceResult(
        role=spec.name,
        run_id=run_id,
        complete=True,
        decisions=tuple(bound),
        mutations=tuple(mutations),
        downgrades=tuple(downgrades),
        rejections=tuple(rejections),
    )


def admit_discovery(
    answer: object,
    role: str,
    context: AdmissionContext,
    *,
    read_paths: frozenset[str] | None = None,
) -> DiscoveryResult:
    """Admit a discovery answer: every lesson that passes every stage becomes a Proposal.
    ``read_paths`` as for :func:`admit_maintenance`."""
    spec = role_spec(role)
    if spec.maintenance:
        raise AdmissionError(f"{role!r} is a maintenance role; use admit_maintenance")
    run_id = context.run.run_id
    shape = shape_rejections(answer, spec, context.max_answer_bytes)
    if any(rejection.index < 0 for rejection in shape):
        return DiscoveryResult(spec.name, run_id, (), shape)
    if not _scope_enabled(spec, context.config):
        return DiscoveryResult(
            spec.name,
            run_id,
            (),
            (Rejection(stage="scope", role=spec.name, code="scope_disabled", index=-1),),
        )
    assert isinstance(answer, Mapping)
    items = _item_context(spec, context, read_paths)
    admitted: list[AdmittedProposal] = []
    rejections: list[Rejection] = list(shape)
    held: list[QuarantinedProposal] = []
    shaped = {rejection.index for rejection in shape}
    for index, raw in enumerate(answer["lessons"]):
        if index in shaped:
            continue
        checked = check_discovery(raw, items)
        if isinstance(checked, Refusal):
            rejections.append(
                Rejection(stage=checked.stage, role=spec.name, code=checked.code, index=index)
            )
        elif isinstance(checked, Quarantined):
            assert isinstance(checked.item, Proposal)
            held.append(QuarantinedProposal(index, checked.item, checked.signals))
        else:
            admitted.append(AdmittedProposal(index, checked))
    rejections.sort(key=lambda rejection: rejection.index)
    return DiscoveryResult(spec.name, run_id, tuple(admitted), tuple(rejections), tuple(held))


def admit(
    answer: object,
    role: str,
    context: AdmissionContext,
    supplied: Sequence[Lesson] = (),
    *,
    read_paths: frozenset[str] | None = None,
) -> MaintenanceResult | DiscoveryResult:
    """Dispatch on ``role``: maintenance roles need ``supplied``; discovery roles take none."""
    if role_spec(role).maintenance:
        return admit_maintenance(answer, role, supplied, context, read_paths=read_paths)
    if supplied:
        raise AdmissionError(f"{role!r} is a discovery role and takes no supplied lessons")
    return admit_discovery(answer, role, context, read_paths=read_paths)
