"""The secret, personal-data and injection screen for every card that is written to a store.

Admission checks what specialists propose. A card can also arrive by ``lessons import`` (a
file anyone may have edited), come back by ``lessons revert`` (an old revision written before
today's detectors), be published by a host through the library's ``publish`` or the memory
service's ``POST /v1/publish`` (anyone holding a leaked token), or by memory init from a
session folder on disk; every one of those paths passes this screen before it writes
(:func:`screen_card` for one draft, :func:`screen_publication` for a batch). It applies
admission's own detectors to the same fields: secrets and personal data in every string a
specialist writes (title, recommendation, reason, references, associations) plus the host
identifiers (run id, node id) for credential formats, and instructions in the title and
recommendation, the text future agents are shown.

Like admission it is pure and returns codes, never text, so a refusal can name what is wrong
without repeating the secret or the planted instruction. A card that bypasses admission has no
quarantine to wait in, so weak signals (:data:`~active_memory.screening.verdict.WEAK_SIGNALS`)
refuse it here too. The hook helper never imports this module (it reads rows through
``store.rows``), so the detectors may use third-party packages.
"""

from __future__ import annotations

from collections.abc import Iterable

from active_memory.models.changes import Mutation
from active_memory.models.lessons import GraphScope, LessonDraft
from active_memory.screening.verdict import screen_texts

__all__ = ["screen_card", "screen_publication"]


def _authored_strings(draft: LessonDraft) -> tuple[str, ...]:
    scope = draft.scope
    evidence = draft.evidence
    strings = [draft.title, draft.recommendation, evidence.reason, *evidence.references]
    if not isinstance(scope, GraphScope):
        strings += [*scope.files, *scope.folders, *scope.identifiers]
        strings += [term for group in scope.keyword_groups for term in group]
    return tuple(strings)


def _identifiers(draft: LessonDraft) -> tuple[str, ...]:
    scope = draft.scope
    node = (scope.node_id,) if isinstance(scope, GraphScope) else ()
    return (draft.evidence.run_id, *node)


def screen_card(draft: LessonDraft) -> tuple[str, ...]:
    """Every problem admission would refuse or quarantine ``draft`` for, as ``stage:code``
    (empty: clean).

    Codes are unique, secrets first (``secret:github_token``), then personal data
    (``personal:email``), then instructions (``injection:override_instructions``); see
    docs/admission.md for the lists.
    """
    card = (draft.title, draft.recommendation)
    others = _authored_strings(draft)[2:]
    return screen_texts(card, others, _identifiers(draft)).codes


def screen_publication(mutations: Iterable[Mutation]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each mutation whose draft :func:`screen_card` flags, as ``(lesson id, codes)`` in batch
    order (empty: every draft is clean; a retirement carries no draft and is never flagged)."""
    flagged: list[tuple[str, tuple[str, ...]]] = []
    for mutation in mutations:
        if mutation.draft is not None:
            codes = screen_card(mutation.draft)
            if codes:
                flagged.append((mutation.id, codes))
    return tuple(flagged)
