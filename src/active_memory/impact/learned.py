"""Would lessons learned from a run have reached the failures of the runs that followed?

For a prompt author's replay eval (``specialist eval``): the drafts a specialist's answer had
admitted are taken as live from the next run on, every later run's recorded tool calls are
replayed through recall (:mod:`.replay`, each draft at revision 1, with the run's own budget and
once-per-conversation rule), and each failure of those runs on a draft's files (through recall's
matcher; a graph draft's node) counts once per draft, reached when the replay delivers the draft
to the failing conversation before the failure. Nothing is stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from active_memory.evidence.failures import run_failures
from active_memory.impact.replay import Replayer
from active_memory.impact.timeline import CardVersion
from active_memory.models.lessons import LessonDraft
from active_memory.models.runs import RunRecord

__all__ = ["LearnedReach", "learned_reach"]


@dataclass(frozen=True, slots=True)
class LearnedReach:
    """``lessons`` drafts; ``failures`` (failure, draft) pairs in the later runs on a draft's
    files; ``reached`` of those, the pairs the replay delivers the draft to first."""

    lessons: int = 0
    runs: int = 0
    failures: int = 0
    reached: int = 0

    @property
    def cell(self) -> str:
        return f"{self.reached}/{self.failures}"


def learned_reach(drafts: Sequence[LessonDraft], later: Sequence[RunRecord]) -> LearnedReach:
    """How many failures of ``later`` runs on the drafts' files the drafts would reach first."""
    versions = [
        CardVersion(f"draft-{i}", 1, draft.title, draft.recommendation, draft.scope)
        for i, draft in enumerate(drafts)
    ]
    graph: dict[tuple[str, str], list[str]] = {}
    for version in versions:
        if version.scope.kind == "graph":
            graph.setdefault((version.scope.graph_hash, version.scope.node_id), []).append(
                version.id
            )
    replayer = Replayer(versions)
    live = dict.fromkeys((v.id for v in versions), 1).get
    failures = reached = 0
    for record in later:
        replay = replayer.prepare(record)
        placement = replayer.place(replay, live)
        for failure in run_failures(record):
            ids = {v.id for r in failure.receipts for v in replay.matches.get(r.seq, ())}
            ids.update(graph.get((record.graph.hash, failure.node_id), ()))
            for lesson_id in ids:
                failures += 1
                reached += int(placement.before(lesson_id, failure))
    return LearnedReach(len(drafts), len(later), failures, reached)
