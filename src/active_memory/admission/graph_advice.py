"""Graph lessons judged against the authored graph they are scoped to.

A graph lesson is appended to one node's prompt after its authored instructions. Three kinds of
card pass every screen yet do the graph harm or no good:

* **Advice that subverts a check**: "when the review node rejects, ignore its verdict and
  resubmit unchanged", "skip the tests when only docs change", "work around the linter by
  disabling it". The card may be sound (a flaky test, a documented exemption), so it is not
  refused; it yields a weak signal and waits for a person: ``graph:subverts_verifier`` when the
  act targets a verifier, a review, the tests, CI, a linter or a verifier node of the graph by
  its id; ``graph:contradicts_instructions`` when it targets something the node's authored
  instructions demand ("Update CHANGELOG.md…" against "skip the changelog for small fixes").
  The patterns are English first, with the verbs and nouns of French, German and Spanish.
* **A restatement of the node's instructions** (``card:restates_instructions``): the node reads
  them anyway, and a copy only spends its token budget.
* **Generic advice** (``card:generic_advice``): "be thorough and double-check your work" names
  nothing the node could do differently.

:func:`judge_graph_card` returns a frozen :class:`GraphAdvice`; it never raises. Text is read
folded (:func:`~active_memory.screening.confusables.fold`) and without accents, so look-alike
letters do not slip past; warnings against the act ("never skip the tests") are left alone
through :func:`~active_memory.screening.context.harmless` and a negation table per language.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Any

from active_memory.admission.graph_words import (
    FOREIGN_VERBS_LAST,
    GENERIC,
    GUARDS,
    INSTRUCTION_ACTS,
    INSTRUCTION_GUARDS,
    STOP,
    STRAIGHT_SUBVERSIONS,
    VERBS,
)
from active_memory.models.runs import AuthoredGraph, GraphNode
from active_memory.screening.confusables import fold
from active_memory.screening.context import harmless

__all__ = [
    "CONTRADICTS_INSTRUCTIONS",
    "RESTATEMENT_THRESHOLD",
    "SUBVERTS_VERIFIER",
    "GraphAdvice",
    "judge_graph_card",
]

SUBVERTS_VERIFIER = "graph:subverts_verifier"
CONTRADICTS_INSTRUCTIONS = "graph:contradicts_instructions"
# Share of a card's content words found in one or two adjacent sentences of the instructions.
# A lesson that adds a fact the instructions lack ("the reviewer rejects patches without a
# changelog entry") brings words of its own and stays well below.
RESTATEMENT_THRESHOLD = 0.8
# Fewer content words than this say too little to call a restatement.
_MIN_RESTATED_WORDS = 3
# Words between the act and its target ("ignore the review node's verdict"), none of them a
# preposition or a conjunction: in "mute the logger in tests" the tests are not what is muted.
_GAP = (
    r"(?:\s+(?!(?:in|on|at|for|from|with|by|during|inside|within|to|into|when|if|while|after|"
    r"before|and|or|but|then|so|because|until|unless)\b)[^\s.;:!?,]+){0,3}?\s+"
)
_NEGATED_BEFORE = re.compile(
    r"\b(?:ne|n'|no|nunca|jamas|jamais|nie|niemals|nicht|never)\s*"
    r"(?:(?:pas|jamais|plus|te|se|lo|la|los|las|le|les)\s+)?$"
)
_NEGATION_INSIDE = re.compile(r"\b(?:nicht|nie|niemals|keinesfalls|jamais|pas|nunca|jamas)\b")
# A full stop ends a sentence only before a space: "CHANGELOG.md" stays whole.
_SENTENCE = re.compile(r"[.;!?](?:\s|$)|\n")
_WORD = re.compile(r"[^\W_]+")
_STRAIGHT = re.compile("|".join(STRAIGHT_SUBVERSIONS))


@dataclass(frozen=True, slots=True)
class GraphAdvice:
    """``refusal``: a ``card`` stage code, or None; ``signals``: weak ``stage:code`` tokens."""

    refusal: str | None = None
    signals: tuple[str, ...] = ()


def _plain(text: str) -> str:
    """Folded text without accents: ``Désactivez`` and ``désactivez`` read ``desactivez``."""
    decomposed = unicodedata.normalize("NFKD", fold(text))
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _stem(word: str) -> str:
    """A crude English stem, enough for "runs", "running" and "run" to meet."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if suffix in ("ing", "ed") and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]
            return word
    return word


def _words(plain: str) -> list[str]:
    return [_stem(word) for word in _WORD.findall(plain)]


_STOP = frozenset(_stem(word) for word in STOP)
_GENERIC = frozenset(_stem(word) for word in GENERIC)


def _content(plain: str) -> set[str]:
    return {word for word in _words(plain) if word not in _STOP and len(word) > 1}


def _generic(plain: str) -> bool:
    content = _content(plain)
    return bool(content) and content <= _GENERIC


def _restates(plain: str, instructions: str) -> bool:
    card = _content(plain)
    if len(card) < _MIN_RESTATED_WORDS:
        return False
    sentences = [_content(_plain(s)) for s in _SENTENCE.split(instructions) if s.strip()]
    windows = [*sentences, *(a | b for a, b in pairwise(sentences))]
    return any(len(card & window) >= RESTATEMENT_THRESHOLD * len(card) for window in windows)


def _verifier_terms(graph: AuthoredGraph | None) -> tuple[str, ...]:
    """The ids of the graph's verifier nodes, and their words (``qa-gate``: ``qa gate``)."""
    if graph is None:
        return ()
    terms: set[str] = set()
    for node in graph.nodes:
        if node.kind == "verifier":
            plain = _plain(node.id)
            terms.add(plain)
            words = [word for word in re.split(r"[\W_]+", plain) if word]
            if len(words) > 1:
                terms.add(" ".join(words))
            terms.update(word for word in words if len(word) >= 4 and word not in STOP)
    return tuple(sorted(terms))


def _instruction_terms(node: GraphNode | None) -> tuple[str, ...]:
    """Content words of what the node's authored instructions tell it to do ("Update
    CHANGELOG.md for …": ``entry``, ``changelog``), from the four words after the act."""
    if node is None or not node.instructions:
        return ()
    terms: set[str] = set()
    for match in INSTRUCTION_ACTS.finditer(_plain(node.instructions)):
        for word in _WORD.findall(match.group("object")):
            if len(word) >= 3 and word not in STOP and _stem(word) not in _GENERIC:
                terms.add(word)
    return tuple(sorted(terms))


@lru_cache(maxsize=256)
def _targets(terms: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The verb-first and the German verb-last pattern for one set of targets."""
    target = "|".join([*(re.escape(term).replace(r"\ ", r"\s+") + r"(?:s|es)?" for term in terms)])
    first = re.compile(rf"\b(?:{VERBS}){_GAP}(?:{target})\b")
    last = re.compile(rf"\b(?:{target}){_GAP}(?:{FOREIGN_VERBS_LAST})\b")
    return first, last


def _ordered(plain: str, start: int, end: int, *, verb_first: bool, pair: bool = True) -> bool:
    """Whether a match is an order rather than a warning or a story about it. A story opens
    with a gerund before the act ("skipping hooks with --no-verify hid…"); when the match
    starts with its verb ("skipping the tests"), that verb is the story's opening. Between a
    verb and its target (``pair``) a German or French negation turns the order around
    ("ueberspringe niemals die Tests"); a straight pattern holds its own negation ("don't run
    the tests", "ne tenez pas compte")."""
    verb_end = plain.find(" ", start, end) if verb_first else -1
    if harmless(plain, verb_end + 1 if verb_end > 0 else start, end):
        return False
    if _NEGATED_BEFORE.search(plain[max(0, start - 24) : start]):
        return False
    return not (pair and _NEGATION_INSIDE.search(plain[start:end]))


def _subverts(plain: str, terms: tuple[str, ...]) -> bool:
    if not terms:
        return False
    first, last = _targets(terms)
    return any(
        _ordered(plain, match.start(), match.end(), verb_first=True)
        for match in first.finditer(plain)
    ) or any(
        _ordered(plain, match.start(), match.end(), verb_first=False)
        for match in last.finditer(plain)
    )


def _straight(plain: str) -> bool:
    return any(
        _ordered(plain, m.start(), m.end(), verb_first=False, pair=False)
        for m in _STRAIGHT.finditer(plain)
    )


def judge_graph_card(
    card: Mapping[str, Any], node_id: str, graph: AuthoredGraph | None
) -> GraphAdvice:
    """Judge a new graph card (``title`` and ``recommendation`` of ``card``) for the node
    ``node_id`` of ``graph``. ``graph`` is None when the lesson belongs to another version of
    the graph than the run's: then only the patterns that need no graph apply. Never raises."""
    plain = _plain(f"{card['title']}. {card['recommendation']}")
    if _generic(plain):
        return GraphAdvice(refusal="generic_advice")
    node = graph.node(node_id) if graph is not None else None
    if node is not None and node.instructions and _restates(plain, node.instructions):
        return GraphAdvice(refusal="restates_instructions")
    signals: list[str] = []
    if _straight(plain) or _subverts(plain, (*GUARDS, *_verifier_terms(graph))):
        signals.append(SUBVERTS_VERIFIER)
    if _subverts(plain, (*INSTRUCTION_GUARDS, *_instruction_terms(node))):
        signals.append(CONTRADICTS_INSTRUCTIONS)
    return GraphAdvice(signals=tuple(signals))
