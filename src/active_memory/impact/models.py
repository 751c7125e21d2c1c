"""Whether a lesson helps, as frozen models: the failures on its files, whether its card reached
the failing conversation first, and the repeat rate with and without it.

Every figure is counted from recorded runs and the store's history (see
:mod:`active_memory.impact.measure`); the counterfactual columns (``would_then``,
``would_today``) replay the recorded tool calls through recall's own matcher, budget and
once-per-conversation rule. A delivery is not proof the model read the card.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import Field

from active_memory.ledger.models import LessonHeading
from active_memory.models.base import Model

__all__ = [
    "FailureImpact",
    "ImpactReport",
    "ImpactTotals",
    "LessonImpact",
    "MissReason",
    "RepeatRate",
    "RunImpact",
]

FailureKind: TypeAlias = Literal["execution_error", "verifier_rejection"]
# Why the card did not reach a failing conversation first:
# before_it_existed: the run started before the lesson's first revision was published;
# budget_cut: recall matched it but the hook budget was spent on higher-ranked cards;
# other_conversation: the run delivered it, to another conversation only;
# after_the_failure: it reached the conversation, but after the failing call;
# not_delivered: it existed and matched, and the record shows no delivery (recall was off,
# or the calls ran outside the hook).
MissReason: TypeAlias = Literal[
    "before_it_existed", "budget_cut", "other_conversation", "after_the_failure", "not_delivered"
]


class FailureImpact(Model):
    """One failure on the lesson's files, folders, identifiers or node.

    ``existed``: a revision was live when the run started. ``delivered``: the record shows the
    card reached the failing conversation before the failure, ``tool_calls_before`` calls before
    it. ``would_then`` / ``would_today``: replaying the run's calls through the store as it was
    at the run's start / as it is now delivers it before the failure. ``learned_here``: the
    run whose postmortem published the lesson's first revision."""

    run_id: str
    execution: str
    node_id: str
    kind: FailureKind
    existed: bool
    learned_here: bool = False
    delivered: bool
    tool_calls_before: int | None = None
    revision: int | None = None
    would_then: bool
    would_today: bool
    missed: MissReason | None = None


class RunImpact(Model):
    """One run the lesson took part in (a call matched it, or the run delivered it): whether
    it existed at the run's start (``revision``), the recorded deliveries and how many came
    before a failure on its files, and whether a call of the run matched it (``applied``) and a
    failure on its files followed (``failed``)."""

    run_id: str
    revision: int | None = None
    deliveries: int = 0
    before_failure: int = 0
    applied: bool = False
    failed: bool = False


class RepeatRate(Model):
    """Runs where the lesson applied (recall matched it), and how many of them failed on it."""

    runs: int = 0
    failed: int = 0

    @property
    def rate(self) -> float | None:
        return self.failed / self.runs if self.runs else None


class LessonImpact(LessonHeading):
    """Everything measured about one lesson over the runs read.

    ``delivered``/``not_delivered``/``before``: repeat rates in runs where the lesson existed
    and the record shows a delivery, where it existed and was not delivered, and in runs before
    it existed (the baseline). ``never_delivered``: it existed in ``runs_since`` runs and none
    delivered it. ``quiet``: delivered in at least the ``often`` runs asked for, and no later
    failure on its files: a candidate for retirement or a narrower association."""

    deliveries: int = 0
    delivered_runs: int = 0
    runs_since: int = 0
    runs: tuple[RunImpact, ...] = ()
    failures: tuple[FailureImpact, ...] = ()
    delivered: RepeatRate = RepeatRate()
    not_delivered: RepeatRate = RepeatRate()
    before: RepeatRate = RepeatRate()
    missed: dict[str, int] = Field(default_factory=dict)
    never_delivered: bool = False
    quiet: bool = False

    @property
    def delivered_before_failures(self) -> int:
        """Failures the card reached first: a card delivered many times before the same
        failure is a card to adapt."""
        return sum(1 for failure in self.failures if failure.delivered)


class ImpactTotals(Model):
    """Over every lesson: failures read, failures on some lesson's files, how many of those a
    card reached first, and the repeat rates summed over lessons."""

    runs: int = 0
    lessons: int = 0
    failures: int = 0
    failures_on_lessons: int = 0
    delivered_before: int = 0
    would_today: int = 0
    delivered: RepeatRate = RepeatRate()
    not_delivered: RepeatRate = RepeatRate()
    before: RepeatRate = RepeatRate()
    missed: dict[str, int] = Field(default_factory=dict)
    never_delivered: int = 0
    quiet: int = 0


class ImpactReport(Model):
    """``lessons impact``: per lesson (sorted by id) and in total; ``runs`` in replay order."""

    runs: tuple[str, ...] = ()
    lessons: tuple[LessonImpact, ...] = ()
    totals: ImpactTotals = ImpactTotals()
    often: int = 3
