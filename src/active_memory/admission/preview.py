"""What a card's text would trip, for a prompt author: the card rules and the screens.

``active-memory contracts screen`` calls :func:`preview_card` with a title, a recommendation and
optionally repository associations, and prints the ``stage:code`` of every problem admission
would find in them: the screens (``secret:…``, ``injection:…``; weak ones quarantine, the rest
refuse) and the card rules (``card:title_too_long``, ``card:recommendation_not_one_line``,
``card:source_position``, ``card:files_too_many``…, all refusals). Evidence, references and the
checkout are not judged: they belong to a run, not to a card's text.
"""

from __future__ import annotations

from active_memory.admission.cards import card_code
from active_memory.admission.source import Associations
from active_memory.errors import LessonValidationError
from active_memory.models.lessons import Card, GraphScope, RepositoryScope, Scope
from active_memory.screening.positions import find_position
from active_memory.screening.verdict import Screening, screen_texts

__all__ = ["preview_card"]

_GRAPH = GraphScope(graph_hash="0" * 64, node_id="preview")
_TITLE = "Placeholder title"
_RECOMMENDATION = "Placeholder recommendation."


def _scope(associations: Associations | None) -> Scope:
    if associations is None:
        return _GRAPH
    return RepositoryScope(
        repository="repo:preview",
        files=associations.files,
        folders=associations.folders,
        identifiers=associations.identifiers,
        keyword_groups=associations.keyword_groups,
    )


def _card_codes(
    title: str | None, recommendation: str | None, associations: Associations | None
) -> list[str]:
    checks: list[tuple[str, str, Associations | None]] = []
    if title is not None:
        checks.append((title, _RECOMMENDATION, None))
    if recommendation is not None:
        checks.append((_TITLE, recommendation, None))
    if associations is not None:
        checks.append((_TITLE, _RECOMMENDATION, associations))
    codes: list[str] = []
    for check_title, check_recommendation, check_associations in checks:
        try:
            Card(
                scope=_scope(check_associations),
                title=check_title,
                recommendation=check_recommendation,
            )
        except LessonValidationError as error:
            codes.append(f"card:{card_code(error)}")
    if any(find_position(text) for text in (title, recommendation) if text is not None):
        codes.append("card:source_position")
    return codes


def preview_card(
    title: str | None = None,
    recommendation: str | None = None,
    associations: Associations | None = None,
) -> Screening:
    """Every ``stage:code`` admission would find in this card text (the fields given), the
    screens first, then the card rules."""
    card = [text for text in (title, recommendation) if text is not None]
    others = list(associations.strings()) if associations is not None else []
    screening = screen_texts(card, others)
    codes = _card_codes(title, recommendation, associations)
    return Screening(tuple(dict.fromkeys([*screening.codes, *codes])))
