"""One specialist over many runs, and how an edit changed what admission accepts.

:func:`evaluate` runs every planned batch of specialist ``name`` on one run (through
:func:`~.specialist_trial.try_specialist`, so exactly as a postmortem would, never publishing)
and folds the sessions into an :class:`EvalRow`: admitted items, rejections by stage and code,
maintenance decisions by action, tokens and time. :func:`compare_rows` diffs two rows of the
same run (a baseline and a candidate): the admitted items each has alone, the rejection
counts before and after, and each side's status; a side that failed admitted only what its
batches before the failure did, so such a diff is a failure to report, never "no change".
:func:`with_reach` adds to a row what its admitted lessons would have reached in the runs that
followed (:func:`active_memory.impact.learned.learned_reach`): failures on their files that a
replay delivers them to first.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from active_memory.impact.learned import LearnedReach, learned_reach
from active_memory.models.base import dataclass_json
from active_memory.models.lessons import LessonDraft
from active_memory.models.runs import RunRecord
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.specialist_trial import try_specialist

__all__ = ["ACCEPTED", "EvalDiff", "EvalRow", "compare_rows", "evaluate", "with_reach"]

# The status of a row whose every batch ran and was admitted; any other status is a failure.
ACCEPTED = "accepted"


@dataclass(frozen=True)
class EvalRow:
    run: str
    status: str
    admitted: tuple[str, ...]
    rejections: Counter[str] = field(default_factory=Counter)
    decisions: Counter[str] = field(default_factory=Counter)
    input_tokens: int = 0
    output_tokens: int = 0
    elapsed_ms: int = 0
    error: str | None = None
    # The lessons the admitted items would publish: for the reach, never printed.
    drafts: tuple[LessonDraft, ...] = field(default=(), repr=False)
    reach: LearnedReach | None = None

    def to_dict(self) -> dict[str, object]:
        data = dataclass_json(replace(self, drafts=()))
        del data["drafts"]
        return data


@dataclass(frozen=True)
class EvalDiff:
    run: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    rejections_before: Counter[str]
    rejections_after: Counter[str]
    status_before: str = ACCEPTED
    status_after: str = ACCEPTED
    error_before: str | None = None
    error_after: str | None = None
    reach_before: LearnedReach | None = None
    reach_after: LearnedReach | None = None

    @property
    def failed(self) -> bool:
        """Either side failed or was refused: the items and counts compare nothing."""
        return self.status_before != ACCEPTED or self.status_after != ACCEPTED

    @property
    def changed(self) -> bool:
        return (
            bool(self.added or self.removed)
            or self.rejections_before != self.rejections_after
            or self.status_before != self.status_after
            or _reached(self.reach_before) != _reached(self.reach_after)
        )

    def to_dict(self) -> dict[str, object]:
        data = dataclass_json(self)
        # The verdict first, as a reader scans a row: which run, then whether it changed.
        return {"run": data.pop("run"), "changed": self.changed, "failed": self.failed, **data}


def _reached(reach: LearnedReach | None) -> tuple[int, int] | None:
    """What a reach compares by: failures reached first, of all (not how many lessons)."""
    return None if reach is None else (reach.reached, reach.failures)


async def evaluate(run: str, record: RunRecord, name: str, options: PostmortemOptions) -> EvalRow:
    """Every batch of ``name`` on ``record``; a failed or refused batch names the row's status
    and error, and what the batches before it spent still counts."""
    started = time.monotonic()
    admitted: list[str] = []
    drafts: list[LessonDraft] = []
    rejections: Counter[str] = Counter()
    decisions: Counter[str] = Counter()
    tokens = [0, 0]
    status, error = ACCEPTED, None
    batch, batches = 0, 1
    while batch < batches:
        result = await try_specialist(record, name, options, batch=batch)
        batches = result.batches
        admitted.extend(result.admitted)
        drafts.extend(result.drafts)
        rejections.update(f"{r.stage}:{r.code}" for r in result.rejections)
        decisions.update(item.rsplit(" ", 1)[1] for item in result.admitted if _is_decision(name))
        tokens[0] += result.input_tokens
        tokens[1] += result.output_tokens
        if result.error is not None or not result.complete:
            status = str(result.status)
            error = result.error or result.error_code
            break
        batch += 1
    return EvalRow(
        run=run,
        status=status,
        admitted=tuple(admitted),
        rejections=rejections,
        decisions=decisions,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        elapsed_ms=int((time.monotonic() - started) * 1000),
        error=error,
        drafts=tuple(drafts),
    )


def with_reach(row: EvalRow, later: Sequence[RunRecord]) -> EvalRow:
    """The row with what its admitted lessons would reach in the ``later`` runs."""
    return replace(row, reach=learned_reach(row.drafts, later))


def _is_decision(name: str) -> bool:
    return name.endswith("_maintenance")


def compare_rows(before: EvalRow, after: EvalRow) -> EvalDiff:
    """What ``after`` admits that ``before`` did not, and the reverse, with both rejection
    counts and statuses; items are compared as a multiset, in the order each row lists them."""
    left, right = Counter(before.admitted), Counter(after.admitted)
    added = [
        item for item in dict.fromkeys(after.admitted) for _ in range(right[item] - left[item])
    ]
    removed = [
        item for item in dict.fromkeys(before.admitted) for _ in range(left[item] - right[item])
    ]
    return EvalDiff(
        run=after.run,
        added=tuple(added),
        removed=tuple(removed),
        rejections_before=before.rejections,
        rejections_after=after.rejections,
        status_before=before.status,
        status_after=after.status,
        error_before=before.error,
        error_after=after.error,
        reach_before=before.reach,
        reach_after=after.reach,
    )
