"""The lesson ledger: what each lesson has done, counted from what is already recorded.

``lesson_ledger(id, store, sources)`` and ``ledgers(store, sources)`` fold run records (delivery
manifests, receipts), latched outcomes, run logs, postmortem reports, exposure files and the
store's history into :class:`LessonLedger` models; ``load_sources(paths)`` finds those files.
Recall never reads a ledger: relevance alone ranks cards.
"""

from active_memory.ledger.build import LedgerStore, ledgers, lesson_ledger
from active_memory.ledger.models import (
    LessonHeading,
    LessonLedger,
    MaintenanceDecision,
    RejectedDecision,
    RevisionAdmission,
    RunReach,
    StandaloneReach,
)
from active_memory.ledger.reach import LessonReach, reach_of
from active_memory.ledger.sources import (
    LedgerSources,
    ReportSummary,
    load_exposures,
    load_sources,
    store_sources,
)

__all__ = [
    "LedgerSources",
    "LedgerStore",
    "LessonHeading",
    "LessonLedger",
    "LessonReach",
    "MaintenanceDecision",
    "RejectedDecision",
    "ReportSummary",
    "RevisionAdmission",
    "RunReach",
    "StandaloneReach",
    "ledgers",
    "lesson_ledger",
    "load_exposures",
    "load_sources",
    "reach_of",
    "store_sources",
]
