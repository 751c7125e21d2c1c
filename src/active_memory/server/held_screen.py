"""What the service keeps for review when a client asks it to hold proposals.

A client's ``signals`` are a claim, and a token that could hold any draft under any claim could
have a person approve a card the publication screen refuses, believing the claim. So the service
screens every held draft itself, with the publication screen's detectors
(:func:`~active_memory.screening.cards.screen_card`) and, for a graph lesson, the graph advice
that needs no graph (:func:`~active_memory.admission.graph_advice.judge_graph_card` without the
graph: the service has none), and keeps ITS signals, never the client's:

* a draft with a strong signal is refused (``ScreenRefused``: 422 ``screened``), as a
  publication of it would be;
* a draft with no signal at all is refused too (``PublicationError``: 422 ``refused``): nothing
  holds it back, so it is published, not held;
* the rest are held with the weak signals the service found.

A batch is held all or none, as the store holds it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from active_memory.admission.graph_advice import judge_graph_card
from active_memory.errors import PublicationError, ScreenRefused
from active_memory.models.lessons import GraphScope, LessonDraft
from active_memory.screening.cards import screen_card
from active_memory.screening.verdict import is_weak
from active_memory.store.quarantine_rows import QuarantineEntry

__all__ = ["held_signals", "screened_for_hold"]


def held_signals(draft: LessonDraft) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The strong and the weak ``stage:code`` signals the service finds in ``draft`` (both
    empty: clean). Graph advice only ever quarantines, as in admission."""
    codes = screen_card(draft)
    strong = tuple(code for code in codes if not is_weak(code))
    weak = tuple(code for code in codes if is_weak(code))
    scope = draft.scope
    if isinstance(scope, GraphScope):
        card = {"title": draft.title, "recommendation": draft.recommendation}
        weak += judge_graph_card(card, scope.node_id, None).signals
    return strong, weak


def screened_for_hold(entries: Iterable[QuarantineEntry]) -> tuple[QuarantineEntry, ...]:
    """``entries`` with the service's own (weak) signals, or the refusal of the whole batch:
    strong signals first (ScreenRefused naming each such id and its codes), then drafts with
    none."""
    screened = [(entry, *held_signals(entry.draft)) for entry in entries]
    strong = [(entry.id, codes) for entry, codes, _ in screened if codes]
    if strong:
        raise ScreenRefused(strong)
    clean = [entry.id for entry, _, weak in screened if not weak]
    if clean:
        raise PublicationError(
            f"the service finds no signal to hold {', '.join(map(repr, clean))} for; a proposal "
            "that trips no screen is not held for review: publish it"
        )
    return tuple(replace(entry, signals=weak) for entry, _, weak in screened)
