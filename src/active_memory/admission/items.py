"""The per-item stages, as pure functions (the shape stage is :mod:`.shape`).

:func:`check_decision` and :func:`check_discovery` take one contract-shaped item and return
either the accepted value (a bound :class:`~active_memory.models.changes.Decision` or a
:class:`~active_memory.models.changes.Proposal`) or a :class:`Refusal` naming the first stage that
failed. Secrets and personal data are looked for in every string of an item (the store keeps
all of them); instruction-like content only in the card text that future agents are shown. An
item that passes every stage but trips only weak signals (:mod:`active_memory.screening.verdict`)
comes back as :class:`Quarantined`: admissible, but for a person to approve before it is
published.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from active_memory.admission.cards import card_code
from active_memory.admission.references import (
    Reference,
    RunEvidence,
    attribution_problem,
    parse_references,
    reference_problem,
)
from active_memory.admission.run_mentions import names_run_evidence
from active_memory.admission.source import (
    Associations,
    association_problem,
    carried_association_gone,
    citation_problem,
    cited_paths,
    unread_problem,
)
from active_memory.admission.stages import Stage
from active_memory.errors import LessonValidationError
from active_memory.models.changes import Decision, Proposal
from active_memory.models.fields import identifier_problem, literal_path_problem
from active_memory.models.lessons import (
    Evidence,
    GraphScope,
    Lesson,
    LessonDraft,
    RepositoryScope,
    Scope,
)
from active_memory.models.runs import RunRecord
from active_memory.provenance import CheckoutVerifier
from active_memory.roles import RoleRow
from active_memory.screening.positions import find_position

__all__ = [
    "ItemContext",
    "Quarantined",
    "Refusal",
    "Unconfirmed",
    "check_decision",
    "check_discovery",
]


@dataclass(frozen=True, slots=True)
class Refusal:
    stage: Stage
    code: str


@dataclass(frozen=True, slots=True)
class Quarantined:
    """An item that passed every stage but tripped weak signals (``stage:code``)."""

    item: Decision | Proposal
    signals: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Unconfirmed:
    """A repository decision that passed every stage but carries associations of the stored card
    the checkout does not confirm: ``association_gone`` (one no longer exists) or ``no_checkout``
    (a keep with no checkout to look in). The caller holds the checkout's provenance and decides:
    refused as ``source:association_gone`` when the checkout may supersede the card, else
    deferred, never kept blindly."""

    decision: Decision
    reason: Literal["association_gone", "no_checkout"]


@dataclass(frozen=True, slots=True)
class ItemContext:
    """``read_paths``: the checkout files the specialist's session read (``read_file``) or saw
    lines of (``search_text``); None when the session had no tools over the checkout, so
    "read what you cite" cannot be checked."""

    spec: RoleRow
    run: RunRecord
    evidence: RunEvidence
    verifier: CheckoutVerifier | None
    repository: str | None
    source_commit: str | None
    read_paths: frozenset[str] | None = None

    @property
    def node_ids(self) -> tuple[str, ...]:
        return tuple(node.id for node in self.run.graph.nodes)


def _references_refusal(
    texts: Sequence[str], ctx: ItemContext
) -> tuple[tuple[Reference, ...], Refusal | None]:
    references, problem = parse_references(texts)
    if problem is None:
        problem = reference_problem(references, ctx.evidence, graph_node_ids=ctx.node_ids)
    return references, (Refusal("references", problem) if problem else None)


def _association_shape_refusal(associations: Associations | None) -> Refusal | None:
    """The card rule for association strings, checked before the checkout is asked: a path that
    is not literal and root-relative (``./a.py``, ``docs/``, ``src/../a.py``, ``src\\a.py``) or an
    identifier outside its grammar (``x``) is refused as ``files_invalid``/``folders_invalid``/
    ``identifiers_invalid``, not as missing or absent, which would send the model looking for it.
    The root (``.``, ``./``, empty) is left to the source stage, which calls it too broad."""
    if associations is None:
        return None
    checks = (
        ("files", associations.files, literal_path_problem),
        ("folders", [p for p in associations.folders if p.strip("/") not in ("", ".")],
         literal_path_problem),
        ("identifiers", associations.identifiers, identifier_problem),
    )  # fmt: skip
    for field, values, problem_of in checks:
        for value in values:
            problem = problem_of(value)
            if problem:
                return Refusal("card", card_code(LessonValidationError(field, problem)))
    return None


def _source_refusal(
    ctx: ItemContext,
    references: Sequence[Reference],
    associations: Associations | None,
    *,
    require_citation: bool,
) -> Refusal | None:
    cited = cited_paths(references)
    if not cited and not require_citation:
        return None
    refusal = _association_shape_refusal(associations)
    if refusal:
        return refusal
    if ctx.verifier is None:
        return Refusal("source", "no_checkout")
    if not cited:
        return Refusal("source", "no_file_citation")
    problem = citation_problem(cited, ctx.verifier)
    if problem is None and ctx.read_paths is not None:
        problem = unread_problem(cited, ctx.read_paths)
    if problem is None and associations is not None:
        problem = association_problem(associations, cited, ctx.verifier)
    return Refusal("source", problem) if problem else None


_SCREEN_STAGES: dict[str, Stage] = {"secret": "secret", "personal": "personal"}


def _text_refusal(
    card_texts: Sequence[str], other_texts: Iterable[str]
) -> tuple[Refusal | None, tuple[str, ...]]:
    """The refusal for the first strong signal, else None and the weak signals found."""
    # Imported here, as in the two functions below: compiling the screens' patterns is a tenth
    # of a second, which every command that imports admission without admitting (``specialist
    # prompt``, ``evidence``, a command's --help) would pay at start.
    from active_memory.screening.verdict import screen_texts

    screening = screen_texts(card_texts, other_texts)
    if screening.refused:
        stage, code = screening.strong[0].split(":", 1)
        return Refusal(_SCREEN_STAGES.get(stage, "injection"), code), ()
    return None, screening.weak


def _legacy_refusal(lesson: Lesson) -> Refusal | None:
    from active_memory.screening.verdict import Screening, screen_texts

    strong = Screening(screen_texts((lesson.title, lesson.recommendation)).strong)
    if any(code.startswith("secret:") for code in strong.codes):
        return Refusal("secret", "kept_card_has_secret")
    if any(code.startswith("personal:") for code in strong.codes):
        return Refusal("personal", "kept_card_has_personal_data")
    if strong.codes:
        return Refusal("injection", "kept_card_has_instruction")
    if any(find_position(text) for text in (lesson.title, lesson.recommendation)):
        return Refusal("card", "kept_card_has_source_position")
    return None


def _draft(
    scope: Scope,
    card: Mapping[str, Any],
    references: Sequence[str],
    reason: str,
    run_id: str,
    source_commit: str | None,
) -> LessonDraft | Refusal:
    if find_position(card["title"]) or find_position(card["recommendation"]):
        return Refusal("card", "source_position")
    evidence = Evidence(
        run_id=run_id, references=tuple(references), reason=reason, source_commit=source_commit
    )
    return LessonDraft(
        scope=scope, title=card["title"], recommendation=card["recommendation"], evidence=evidence
    )


def _repository_scope(repository: str, associations: Associations) -> RepositoryScope:
    # An answer's associations are the scope's association fields, under the same names.
    return RepositoryScope(repository=repository, **asdict(associations))


def _carried(lesson: Lesson, action: str, associations: Associations | None) -> Associations | None:
    """The stored card's associations a repository keep or adapt carries on: all of them for a
    keep, those the replacement leaves unchanged for an adapt; None for anything else."""
    scope = lesson.scope
    if not isinstance(scope, RepositoryScope):
        return None
    if action == "keep":
        return Associations(scope.files, scope.folders, scope.identifiers, ())
    if action != "adapt" or associations is None:
        return None

    def kept(old: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
        return tuple(value for value in old if value in new)

    return Associations(
        kept(scope.files, associations.files),
        kept(scope.folders, associations.folders),
        kept(scope.identifiers, associations.identifiers),
        (),
    )


def _searched(references: Sequence[Reference], lesson: Lesson) -> tuple[str, ...]:
    """Where a carried identifier may still be found: the decision's citations, then the card's
    associated files and the files its stored evidence cited."""
    scope = lesson.scope
    files = scope.files if isinstance(scope, RepositoryScope) else ()
    stored = [text[len("repository:") :] for text in lesson.evidence.references
              if text.startswith("repository:")]  # fmt: skip
    return tuple(dict.fromkeys((*cited_paths(references), *files, *stored)))


def check_decision(
    raw: Mapping[str, Any], lesson: Lesson, ctx: ItemContext
) -> Decision | Refusal | Quarantined | Unconfirmed:
    """Stages references → card for one maintenance decision on ``lesson`` (coverage passed)."""
    action, reason = raw["action"], raw["reason"]
    replacement: Mapping[str, Any] | None = raw["replacement"]
    references, refusal = _references_refusal(tuple(raw["references"]), ctx)
    if refusal:
        return refusal
    texts = tuple(reference.text for reference in references)
    if action == "adapt" and not references:
        return Refusal("references", "no_references")
    if isinstance(lesson.scope, GraphScope):
        problem = attribution_problem(
            references, lesson.scope.node_id, ctx.evidence, require_own=False
        )
        if problem:
            return Refusal("attribution", problem)
    associations = None
    if replacement is not None and replacement["associations"] is not None:
        associations = Associations.from_answer(replacement["associations"])
    carried = _carried(lesson, action, associations)
    gone = (
        carried is not None
        and ctx.verifier is not None
        and carried_association_gone(carried, _searched(references, lesson), ctx.verifier)
    )
    adapt_repository = action == "adapt" and isinstance(lesson.scope, RepositoryScope)
    refusal = _source_refusal(
        ctx,
        references,
        # A gone association of the old card is reported as such, not as a new one missing.
        associations if adapt_repository and not gone else None,
        require_citation=adapt_repository and replacement is not None,
    )
    if refusal:
        return refusal
    card_texts = (replacement["title"], replacement["recommendation"]) if replacement else ()
    other = (reason, *texts, *(associations.strings() if associations else ()))
    refusal, weak = _text_refusal(card_texts, other)
    if refusal:
        return refusal
    if action == "keep":
        refusal = _legacy_refusal(lesson)
        if refusal:
            return refusal
    if card_texts and names_run_evidence(card_texts, ctx.run):
        return Refusal("card", "card_names_run_evidence")
    if (action == "adapt") != (replacement is not None):
        return Refusal(
            "card", "replacement_missing" if action == "adapt" else "replacement_unexpected"
        )
    draft: LessonDraft | None = None
    try:
        if replacement is not None:
            scope: Scope = lesson.scope
            commit = None
            if isinstance(lesson.scope, RepositoryScope):
                assert associations is not None
                scope = _repository_scope(lesson.scope.repository, associations)
                commit = ctx.source_commit
            built = _draft(scope, replacement, texts, reason, ctx.run.run_id, commit)
            if isinstance(built, Refusal):
                return Refusal("card", "replacement_has_source_position")
            draft = built
        decision = Decision(
            id=lesson.id, action=action, reason=reason, references=texts, replacement=draft
        )
    except LessonValidationError as error:
        return Refusal("card", card_code(error))
    if replacement is not None and isinstance(lesson.scope, GraphScope):
        # Last, on a card within its limits. A keep changes no card and is not judged again.
        graph = ctx.run.graph if lesson.scope.graph_hash == ctx.run.graph_hash else None
        from active_memory.admission.graph_advice import judge_graph_card

        advice = judge_graph_card(replacement, lesson.scope.node_id, graph)
        if advice.refusal:
            return Refusal("card", advice.refusal)
        weak = (*weak, *advice.signals)
    if gone:
        return Unconfirmed(decision, "association_gone")
    if carried is not None and action == "keep" and ctx.verifier is None:
        return Unconfirmed(decision, "no_checkout")
    return Quarantined(decision, weak) if weak else decision


def _discovery_scope_refusal(raw: Mapping[str, Any], ctx: ItemContext) -> Refusal | None:
    node = ctx.run.graph.node(raw["node_id"])
    if node is None:
        return Refusal("scope", "node_unknown")
    if not node.is_agent:
        return Refusal("scope", "node_not_agent")
    if not ctx.evidence.executed(node.id):
        return Refusal("scope", "node_not_executed")
    repository_role = ctx.spec.scope == "repository"
    if repository_role and not raw["repository_specific"]:
        return Refusal("scope", "not_repository_specific")
    if (repository_role or raw["repository_specific"]) and ctx.repository is None:
        return Refusal("scope", "no_repository")
    return None


def check_discovery(raw: Mapping[str, Any], ctx: ItemContext) -> Proposal | Refusal | Quarantined:
    """Stages scope → card for one discovered lesson."""
    refusal = _discovery_scope_refusal(raw, ctx)
    if refusal:
        return refusal
    node_id: str = raw["node_id"]
    references, refusal = _references_refusal(tuple(raw["references"]), ctx)
    if refusal:
        return refusal
    texts = tuple(reference.text for reference in references)
    if not any(reference.is_run_evidence for reference in references):
        return Refusal("references", "no_run_evidence")
    problem = attribution_problem(references, node_id, ctx.evidence, require_own=True)
    if problem:
        return Refusal("attribution", problem)
    repository_role = ctx.spec.scope == "repository"
    associations = None
    if raw["associations"] is not None:
        associations = Associations.from_answer(raw["associations"])
    refusal = _source_refusal(ctx, references, associations, require_citation=repository_role)
    if refusal:
        return refusal
    other = (raw["reason"], node_id, *texts, *(associations.strings() if associations else ()))
    refusal, weak = _text_refusal((raw["title"], raw["recommendation"]), other)
    if refusal:
        return refusal
    if names_run_evidence((raw["title"], raw["recommendation"]), ctx.run):
        return Refusal("card", "card_names_run_evidence")
    bound = repository_role or raw["repository_specific"]
    try:
        scope: Scope
        if repository_role:
            assert ctx.repository is not None
            assert associations is not None
            scope = _repository_scope(ctx.repository, associations)
        else:
            scope = GraphScope(
                graph_hash=ctx.run.graph_hash,
                node_id=node_id,
                repository=ctx.repository if bound else None,
            )
        commit = ctx.source_commit if bound else None
        draft = _draft(scope, raw, texts, raw["reason"], ctx.run.run_id, commit)
    except LessonValidationError as error:
        return Refusal("card", card_code(error))
    if isinstance(draft, Refusal):
        return draft
    if not repository_role:
        from active_memory.admission.graph_advice import judge_graph_card

        advice = judge_graph_card(raw, node_id, ctx.run.graph)
        if advice.refusal:
            return Refusal("card", advice.refusal)
        weak = (*weak, *advice.signals)
    proposal = Proposal(
        draft=draft, node_id=node_id, repository_specific=bool(raw["repository_specific"])
    )
    return Quarantined(proposal, weak) if weak else proposal
