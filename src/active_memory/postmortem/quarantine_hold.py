"""Keeping quarantined discoveries for review once the postmortem has published.

A discovery that admission quarantined (weak signals only) is never published. After the
publication round, each one still held by a specialist that did not fail gets a host-assigned
lesson id and is written, draft and evidence, to the store's quarantine table
(:mod:`active_memory.store.quarantine`: SQLite, PostgreSQL or the memory service), where
``active-memory lessons review`` finds it. A dry run, a read-only backend, or a failed write
keeps nothing; the report and the
run log count the proposals all the same (``kept`` says which).
"""

from __future__ import annotations

import asyncio
import logging

from active_memory.agents.prompts import SPECIALISTS
from active_memory.errors import StoreError
from active_memory.postmortem.report import QuarantineNote
from active_memory.postmortem.state import ReviewState
from active_memory.store.quarantine import QuarantineEntry, quarantine_for

__all__ = ["hold_quarantined"]

_log = logging.getLogger(__name__)


def _entries(state: ReviewState) -> list[QuarantineEntry]:
    entries: list[QuarantineEntry] = []
    for name in SPECIALISTS:
        result = state.results.get(name)
        if result is None or name in state.failures:
            continue
        for position, held in enumerate(result.quarantined):
            entries.append(
                QuarantineEntry(
                    id=state.ids.id_for(f"{name}#quarantine", position),
                    run_id=state.record.run_id,
                    role=name,
                    signals=held.signals,
                    draft=held.proposal.draft,
                    time="",
                )
            )
    return entries


def _write(state: ReviewState, entries: list[QuarantineEntry]) -> bool:
    quarantine = quarantine_for(state.options.backend)
    if quarantine is None:
        return False
    quarantine.hold(entries)  # the run's own backend: the postmortem's caller closes it
    return True


async def hold_quarantined(state: ReviewState) -> None:
    """Write every held proposal to the quarantine (not in a dry run) and note each one."""
    entries = _entries(state)
    if not entries:
        return
    kept = False
    if not state.options.dry_run:
        try:
            kept = await asyncio.to_thread(_write, state, entries)
        except (StoreError, OSError) as error:
            _log.warning("quarantined proposals could not be kept for review: %s", error)
    state.quarantined = [
        QuarantineNote(id=entry.id, specialist=entry.role, signals=entry.signals, kept=kept)
        for entry in entries
    ]
