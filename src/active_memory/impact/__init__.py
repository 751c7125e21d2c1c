"""Does a lesson help? Its impact measured from recorded runs and the store's history.

``measure_impact(store, records)`` replays every run's recorded tool calls through recall's
matcher with the store as it was at the run's start and as it is now, and returns an
:class:`ImpactReport`: per lesson, the failures on its files and whether its card reached the
failing conversation first, repeat rates with and without it, and the lessons never delivered or
delivered often with no later failure. Recall never reads these figures.
"""

from active_memory.impact.measure import (
    ImpactStore,
    measure_impact,
    measure_sources,
    run_generations,
)
from active_memory.impact.models import (
    FailureImpact,
    ImpactReport,
    ImpactTotals,
    LessonImpact,
    MissReason,
    RepeatRate,
    RunImpact,
)

__all__ = [
    "FailureImpact",
    "ImpactReport",
    "ImpactStore",
    "ImpactTotals",
    "LessonImpact",
    "MissReason",
    "RepeatRate",
    "RunImpact",
    "measure_impact",
    "measure_sources",
    "run_generations",
]
