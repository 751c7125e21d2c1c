"""What a lesson has done, as frozen models: its reach, the outcomes it met, what maintenance
decided about it and how each revision was admitted.

Every number is counted from what is already recorded (run records, run logs, latched outcomes,
postmortem reports, exposure files and the store's history); nothing here is an estimate, and
a decision the records do not name for one lesson is marked ``inferred`` with the rule that
inferred it (see :mod:`active_memory.ledger.build`).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import Field

from active_memory.models.base import Model

__all__ = [
    "DecisionSource",
    "LedgerAction",
    "LessonHeading",
    "LessonLedger",
    "MaintenanceDecision",
    "RejectedDecision",
    "RevisionAdmission",
    "RevisionPath",
    "RunReach",
    "StandaloneReach",
]

LedgerAction: TypeAlias = Literal["keep", "adapt", "retire", "defer"]
# Where a decision was read: the store's history, a postmortem report, the run log's list of
# changed ids, or inferred (keep: see build.py).
DecisionSource: TypeAlias = Literal["history", "report", "run_log", "inferred"]
# How a revision came to be: published by a postmortem run, approved from the quarantine by a
# person, an import, a revert, a purge marker, or an administrator's change.
RevisionPath: TypeAlias = Literal["run", "review", "import", "revert", "purge", "admin"]


class RunReach(Model):
    """One run the lesson reached: how often, in which conversations, and how the run ended.

    ``outcome`` is the run's latched outcome (``succeeded``, ``failed``, ``cancelled``) or None
    when none was recorded. ``tool_calls_after`` counts the receipts of the receiving executions
    at or after the delivery: the tool calls the agent made once it had the card."""

    run_id: str
    outcome: str | None = None
    deliveries: int = 0
    conversations: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    revisions: tuple[int, ...] = ()
    channels: tuple[str, ...] = ()
    tool_calls_after: int = 0


class StandaloneReach(Model):
    """Deliveries outside any run record: the ``serve`` broker and hook fallback of a plain
    harness user keep one exposure file per conversation beside the store."""

    deliveries: int = 0
    conversations: int = 0
    revisions: tuple[int, ...] = ()


class MaintenanceDecision(Model):
    """One maintenance decision about the lesson in one run. ``revision`` is the revision the
    decision produced (adapt, retire) when the store recorded it; ``role`` the specialist when
    known; ``detail`` the original action a downgrade to defer replaced."""

    run_id: str
    action: LedgerAction
    source: DecisionSource
    role: str | None = None
    revision: int | None = None
    detail: str | None = None


class RejectedDecision(Model):
    """An answer about the lesson that admission refused: stage and code, never text."""

    run_id: str
    role: str | None = None
    stage: str
    code: str


class RevisionAdmission(Model):
    """How one revision entered the store. ``held`` lists the weak signals (``stage:code``)
    that sent a discovered draft to the quarantine before a person approved it."""

    revision: int
    op: str
    path: RevisionPath
    run_id: str
    generation: int
    time: str
    title: str | None = None
    held: tuple[str, ...] = ()
    held_in_run: str | None = None


class LessonHeading(Model):
    """Which lesson a report is about, as the store knows it: whether it is live, its latest
    revision (None when the store has none), its scope's kind, its title and repository (None
    when unknown, as for a lesson seen only in run records)."""

    id: str
    live: bool
    revision: int | None = None
    kind: str | None = None
    title: str | None = None
    repository: str | None = None


class LessonLedger(LessonHeading):
    """Everything recorded about one lesson id.

    ``delivered`` counts deliveries in run records (one per ``id@revision`` and conversation),
    ``conversations`` the distinct (run, conversation) pairs, ``outcomes`` the reached runs by
    latched outcome (``unknown`` when none was recorded). ``standalone`` counts exposure files.
    These counters inform people and maintenance evidence; recall ranking never reads them."""

    graph_hash: str | None = None
    node_id: str | None = None
    quarantined: bool = False
    delivered: int = 0
    conversations: int = 0
    runs: tuple[RunReach, ...] = ()
    outcomes: dict[str, int] = Field(default_factory=dict)
    standalone: StandaloneReach = Field(default_factory=StandaloneReach)
    decisions: tuple[MaintenanceDecision, ...] = ()
    rejections: tuple[RejectedDecision, ...] = ()
    revisions: tuple[RevisionAdmission, ...] = ()

    @property
    def decision_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("keep", "adapt", "retire", "defer"), 0)
        for decision in self.decisions:
            counts[decision.action] += 1
        return counts
