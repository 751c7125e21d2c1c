"""Whether a match of an instruction pattern is a warning or a story rather than an order.

Advice against an act uses the act's own words: "never run rm -rf ~ or rm -rf / in cleanup
scripts", "do not skip hooks or disable signing", "avoid skipping checks, disabling signing, or
pushing with --no-verify", "rm -rf ~ must never appear in a script". So does a lesson about what
went wrong: "skipping hooks with --no-verify hid the lint failure last time". :func:`harmless`
tells these apart from an order, on folded text (see
:func:`active_memory.screening.confusables.fold`):

* **Negated.** A negation (``never``, ``do not``, ``avoid``, ``instead of``…) opens the clause
  the match is in, and nothing between them turns the sentence around: no clause break
  (``.;:!?``), no ``but``, ``instead``, ``then``, ``just``, ``so``, no plain ``and`` (``never
  push to main and run rm -rf ~`` orders the second act), and a comma only before ``or``,
  ``nor`` or a gerund (a list of things to avoid). Openers that negate no act (``don't
  hesitate to``, ``never mind``, ``do not worry``) do not count.
* **Forbidden afterwards.** The match is followed by ``must never be used``, ``should not
  appear``, ``is forbidden``…
* **A story with a bad ending.** The clause opens with a gerund or a subject (``skipping hooks
  with``, ``a teardown that ran``, ``someone committed with``), holds no modal or order
  (``should``, ``must``, ``please``, ``to``), and after the match says, in the past tense, what
  went wrong (``hid``, ``broke``, ``wiped``, ``leaked``, ``let … through``, ``never ran``).

Each test reads a bounded window around the match, so the cost stays linear.
"""

from __future__ import annotations

from active_memory.screening.compiled import compiled

__all__ = ["harmless"]

# The four tests below are sources, compiled on the first match a negation could excuse
# (:mod:`.compiled`): most texts match no instruction pattern, so most processes never need them.
_WINDOW = 160
# Turns that end a negation's reach: a new clause, or a word that starts a new order.
_BREAK = (
    r"(?:\b(?:but|instead(?!\s+of)|then|just|rather(?!\s+than)|so|however|yet|except|unless|"
    r"please|and(?!\s+(?:never|not|don't|do\s+not|no)\b))\b)"
)
# A comma continues a list of things not to do only before "or", "nor" or a gerund.
_LIST_COMMA = r",(?=\s*(?:or|nor|\w{2,}ing|and\s+(?:never|not))\b)"
# Openers that negate no act: "don't hesitate to", "never mind", "do not worry".
_NOT_AN_ACT = (
    r"(?:hesitate|fail|forget|stop|worry|mind|wait|bother|panic|ask|think|let|be|feel|skip\s+"
    r"(?:this|that|it))\b"
)
_NEGATION = (
    r"\b(?:never|don't|do\s+not|does\s+not|doesn't|must\s+not|mustn't|should\s+not|shouldn't|"
    r"cannot|can't|won't|avoid|instead\s+of|rather\s+than|no\s+longer|refuse\s+to|not\s+to|"
    r"stop|quit)(?:\s+(?:ever|once|again))?\s+(?!" + _NOT_AN_ACT + r")"
    r"(?:(?!" + _BREAK + r")(?:[^.;:!?,]|" + _LIST_COMMA + r")){0,140}$"
)
_FORBIDDEN_AFTER = (
    r"[\s`'\"]{0,3}(?:(?:must|should|may|can|is|are|will|shall)\s*(?:never|not|n't)\s+(?:ever\s+)?"
    r"(?:be\s+)?(?:appear|appears|used?|run|ran|executed?|typed|called|allowed|done|included|"
    r"committed|pushed|put|added|in)\b|(?:is|are)\s+(?:never\s+)?(?:forbidden|banned|prohibited|"
    r"not\s+(?:allowed|ok|okay|safe|acceptable)|never\s+(?:allowed|ok|okay|safe|acceptable)))"
)
# The opening of a story: a gerund ("skipping hooks with"), or a subject ("a teardown that ran",
# "someone committed with"), after an optional time ("last time,").
_STORY_OPENING = (
    r"(?:^|[.;:!?]\s*)(?:(?:last\s+time|once|previously|earlier|yesterday|before|in\s+\d{4}),?\s+)?"
    r"(?:\w{2,}ing\b|(?:a|an|the|one|our|their|someone|somebody|we|they|i|he|she|it)\b)"
    r"(?:(?!\b(?:should|must|shall|will|would|can|could|may|might|need|needs|have\s+to|has\s+to|"
    r"please|always|to)\b)[^.;:!?]){0,80}$"
)
_BAD_ENDING = (
    r"^[^.;:!?]{0,80}?\b(?:hid|masked|broke|caused|wiped|destroyed|erased|lost|leaked|exposed|"
    r"corrupted|let|allowed|bypassed|cost|took\s+down|went\s+unnoticed|slipped|got\s+through|"
    r"never\s+ran|did\s+not\s+run|didn't\s+run|was\s+(?:lost|leaked|wiped|exposed|skipped)|"
    r"were\s+(?:lost|leaked|wiped|exposed|skipped))\b"
)


def harmless(text: str, start: int, end: int) -> bool:
    """Whether the match at ``text[start:end]`` (folded text) warns against its act or tells
    how it went wrong, rather than ordering it."""
    before = text[max(0, start - _WINDOW) : start]
    if compiled(_NEGATION).search(before):
        return True
    after = text[end : end + _WINDOW]
    if compiled(_FORBIDDEN_AFTER).match(after):
        return True
    return bool(compiled(_STORY_OPENING).search(before)) and bool(
        compiled(_BAD_ENDING).match(after)
    )
