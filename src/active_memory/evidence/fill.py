"""Excerpts that use their room: a record cap that grows when the records are few and long.

The transcript budget cuts each record to a cap fixed before reading (a sixteenth of the budget,
less with many executions), which keeps memory bounded by the budget whatever the history. When
the excerpts then hold less than 97 % of their room and some records were cut, the
transcripts are read again with the spare room shared among the cut records: one execution with
a few long tool outputs fills the budget instead of a tenth of it. At most three more reads, each
bounded like the first; the read that shows the most stands.
"""

from __future__ import annotations

from collections.abc import Sequence

from active_memory.evidence.budget import json_size
from active_memory.evidence.history import Excerpt, TranscriptReading, collect_excerpts
from active_memory.models.runs import Execution

__all__ = ["collect_to_fill"]

FILLED = 0.97  # over the nine tenths asked: the room is the budget less the rest of the payload
_MORE_READS = 3


def collect_to_fill(
    executions: Sequence[Execution],
    reading: TranscriptReading,
    *,
    room: int,
    record_bytes: int,
) -> tuple[Excerpt, ...]:
    """:func:`collect_excerpts` into ``room`` bytes, the record cap raised while that fills it.
    The read that shows the most is kept; a cap that reclaims records the last good one kept is
    halved back towards it."""
    kept: tuple[Excerpt, ...] = ()
    kept_used, kept_dropped, good = -1, 0, record_bytes
    for _ in range(1 + _MORE_READS):
        excerpts = collect_excerpts(
            executions, reading, budget_bytes=room, record_bytes=record_bytes
        )
        used = sum(json_size(excerpt.model_dump(mode="json")) for excerpt in excerpts)
        dropped = sum(excerpt.records_dropped for excerpt in excerpts)
        if used > kept_used:
            kept, kept_used = excerpts, used
        if kept_used >= 0 and dropped > kept_dropped and excerpts is not kept:
            record_bytes = (good + record_bytes) // 2
            if record_bytes - good < 64:
                break
            continue
        kept_dropped, good = dropped, record_bytes
        cut = sum(excerpt.records_cut for excerpt in excerpts)
        if not cut or used >= FILLED * room or record_bytes >= room:
            break
        # Most of the spare room: the budget's estimates run a little over the JSON.
        record_bytes = min(room, record_bytes + (room - used) * 19 // 20 // cut)
    return kept
