"""The execution listing within the budget: every execution a line, until that alone overflows.

An execution's identity (``ref``, node, occurrence, attempt, status) is what every reference a
specialist cites hangs on, so it is the last thing the budget gives up. Many executions are
first listed without their times, conversation and node kind (the graph names the kind). When
even that listing passes its room, the executions a lesson is most likely made of are listed
(failed ones, retries, a verifier's, the first and the latest) and the rest are counted by node
in ``executions_left_out``: nothing is silently missing.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from active_memory.evidence.budget import json_size
from active_memory.evidence.truncation import CutLog

__all__ = ["COMPACT_KEYS", "fit_listing", "listing_order", "listing_rank"]

# What a compact line keeps: the identity a reference needs, why it is unusual, its completion
# (which final trimming cuts and drops like any other).
COMPACT_KEYS = ("ref", "node", "occurrence", "attempt", "status", "unavailable", "completion")
_COMPACT_REASON = "many executions: listed without times, conversation and node kind"
_LEFT_OUT_REASON = (
    "execution listing over the budget: the rest counted by node in executions_left_out"
)


def _line_size(item: dict[str, Any]) -> int:
    return json_size({key: value for key, value in item.items() if key != "completion"}) + 1


def listing_rank(item: dict[str, Any], index: int, count: int, verifiers: frozenset[str]) -> int:
    """0 for the executions listed first (the first, the latest, a verifier's: its rejection
    is what a lesson answers), 1 for failed and retried ones, 2 for the rest."""
    if index in (0, count - 1) or item.get("node") in verifiers:
        return 0
    if item.get("status") != "completed" or item.get("attempt", 1) > 1:
        return 1
    return 2


def listing_order(items: list[dict[str, Any]], verifiers: frozenset[str]) -> list[int]:
    """Positions of ``items`` in the order they keep their line: by :func:`listing_rank`, then
    from both ends of the run inwards (a run's opening and its latest failures both count),
    then in record order."""
    count = len(items)

    def key(index: int) -> tuple[int, int, int]:
        rank = listing_rank(items[index], index, count, verifiers)
        return rank, min(index, count - 1 - index), index

    return sorted(range(count), key=key)


def _restore(
    items: list[dict[str, Any]], compact: list[dict[str, Any]], order: list[int], spare: int
) -> int:
    """Give whole entries back, in ``order``, while ``spare`` bytes allow; how many compact."""
    compacted = len(compact)
    for index in order:
        extra = _line_size(items[index]) - _line_size(compact[index])
        if extra > spare:
            break
        spare -= extra
        compact[index] = items[index]
        compacted -= 1
    return compacted


def fit_listing(
    items: list[dict[str, Any]],
    room: int,
    log: CutLog,
    verifiers: frozenset[str] = frozenset(),
    *,
    whole_room: int | None = None,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``items`` (full execution entries, in record order) fitted into ``room`` bytes (their
    completions not counted: final trimming weighs those), and the count left out per node.
    Entries are made compact only as far as ``whole_room`` (default ``room``) requires: the
    executions listed first keep their whole entry while it fits."""
    sizes = [_line_size(item) for item in items]
    if sum(sizes) <= (room if whole_room is None else whole_room):
        return items, {}
    count = len(items)
    order = listing_order(items, verifiers)
    compact = [{key: item[key] for key in COMPACT_KEYS if key in item} for item in items]
    sizes = [_line_size(item) for item in compact]
    if sum(sizes) <= room:
        spare = (room if whole_room is None else min(room, whole_room)) - sum(sizes)
        compacted = _restore(items, compact, order, spare)
        log.add("executions", _COMPACT_REASON, count=compacted)
        return compact, {}
    log.add("executions", _COMPACT_REASON, count=count)
    # The left-out counts take room too: a node name and a number each.
    nodes = {item["node"] for item in compact}
    left = room - json_size({node: count for node in nodes}) - 32
    chosen: list[int] = []
    for index in order:
        if sizes[index] > left:
            break
        left -= sizes[index]
        chosen.append(index)
    keep = set(chosen)
    listed = [item for index, item in enumerate(compact) if index in keep]
    omitted = [item for index, item in enumerate(compact) if index not in keep]
    log.add("executions", _LEFT_OUT_REASON, count=len(omitted),
            size=sum(_line_size(item) for item in omitted))  # fmt: skip
    return listed, dict(sorted(Counter(item["node"] for item in omitted).items()))
