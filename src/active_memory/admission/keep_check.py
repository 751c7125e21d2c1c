"""Before admission: which decisions of a maintenance answer would be refused as gone?

A repository keep (or an adapt that carries the card's associations over unchanged) of a card
whose file, folder or identifier the checkout no longer has is refused ``source:association_gone``
when provenance says the checkout may supersede the card, and deferred otherwise. A refused
decision leaves its lesson untouched, so the dead card stays live; the specialist's session
therefore shows the model these decisions once, in its repair turn, to adapt or retire instead.

What counts as gone is admission's own verdict, not a second implementation of it:
:func:`gone_decisions` runs :func:`~.validate.admit_maintenance` (pure) on the answer and reads
its ``source:association_gone`` refusals, so the stages before the source stage, the searched
files and the provenance rule (a deferral is not a refusal, and is not repaired) are exactly
those admission applies to the final answer. Messages name lesson ids, actions and the code,
never card or answer text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from active_memory.admission.validate import AdmissionContext, admit_maintenance
from active_memory.models.lessons import Lesson

__all__ = ["GONE_HEADING", "gone_decisions", "gone_problems"]

_GONE = ("source", "association_gone")

GONE_HEADING = "Your answer keeps lessons whose files are gone from the checkout:"


def gone_decisions(
    answer: Mapping[str, Any],
    role: str,
    supplied: Sequence[Lesson],
    context: AdmissionContext,
    *,
    read_paths: frozenset[str] | None = None,
) -> tuple[tuple[str, str], ...]:
    """``(lesson id, action)`` of each decision admission refuses as ``source:association_gone``,
    in answer order."""
    result = admit_maintenance(answer, role, supplied, context, read_paths=read_paths)
    decisions = answer.get("decisions")
    gone: list[tuple[str, str]] = []
    for rejection in result.rejections:
        if (rejection.stage, rejection.code) != _GONE or rejection.id is None:
            continue
        # The item reached the source stage, so it is a contract-shaped decision.
        assert isinstance(decisions, list)
        raw = decisions[rejection.index]
        gone.append((rejection.id, str(raw["action"])))
    return tuple(gone)


def gone_problems(gone: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """One line per decision ``gone`` (what :func:`gone_decisions` found), for the session's
    repair turn."""
    return tuple(
        f"{lesson_id}: {action} refused (source:association_gone): the card names a file, "
        "folder or identifier the current checkout does not have; adapt the card to what the "
        "checkout has now, or retire it"
        for lesson_id, action in gone
    )
