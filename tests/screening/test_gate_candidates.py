"""The gates name the patterns to run as a union over the literals a text holds: exactly the
detectors (and credential formats) whose hints a text holds, in their order, as a test of each
one's hints in turn would; and a card text is looked at once for every detector's literals."""

from __future__ import annotations

import re

import pytest

from active_memory.screening import instructions, secrets
from active_memory.screening.anchor_leads import LEAD_LETTERS, gate
from active_memory.screening.confusables import fold
from active_memory.screening.languages import _anchor_source, may_hold_anchor
from active_memory.screening.normalise import plain
from active_memory.screening.required_literals import case_fold
from screening.corpus_texts import CARD_TEXTS
from screening.regex_samples import samples

_SAMPLES = [
    sample for _, source, _ in instructions._SOURCES for sample in samples(source, limit=40)
]


def test_the_detectors_a_text_opens_are_those_whose_hints_it_holds() -> None:
    detectors = instructions._gate()
    opened = 0
    for text in [*CARD_TEXTS, *_SAMPLES]:
        present = detectors.present(fold(text))
        expected = [i for i in range(len(detectors.hints)) if detectors.may_match(i, present)]
        assert detectors.candidates(present) == expected, text
        opened += bool(expected)
    assert opened > 1000  # the texts do open detectors, not only close them


def test_the_formats_a_text_opens_are_those_whose_hints_it_holds() -> None:
    formats = secrets._all_formats()
    texts = [*CARD_TEXTS, *(s for f in formats for s in samples(f.source, limit=20))]
    opened = 0
    for text in texts:
        present = secrets._present(text, formats)
        assert present == {h for f in formats for h in f.hints if h in case_fold(text)}
        expected = [i for i, f in enumerate(formats) if present.intersection(f.hints)]
        assert secrets._hints_of(formats).candidates(present) == expected, text
        opened += bool(expected)
    assert opened > 500


def test_a_format_without_hints_runs_over_every_text() -> None:
    formats = tuple(f if i else secrets._Format(f.kind, f.source) for i, f in enumerate(
        secrets._all_formats()))  # fmt: skip
    assert secrets._hints_of(formats).candidates(frozenset()) == [0]
    assert secrets._hints_of(secrets._all_formats()).candidates(frozenset()) == []


def _word_by_word(text: str) -> bool:
    """What may_hold_anchor said when it tested each word of an ASCII text in turn."""
    whole, opened, prefixes = gate(_anchor_source(True))
    lengths = sorted({len(lead) for lead in opened})
    return any(
        word in whole
        or word[:LEAD_LETTERS] in prefixes
        or any(word[:length] in opened for length in lengths)
        for word in re.findall(r"[a-z]+", text)
    )


def test_the_anchor_gate_lets_through_what_the_word_by_word_test_did() -> None:
    texts = [plain(text) for text in [*CARD_TEXTS, *samples(_anchor_source(), limit=400)]]
    ascii_texts = [text for text in texts if text.isascii()]
    assert sum(map(_word_by_word, ascii_texts)) > 300
    assert sum(not _word_by_word(text) for text in ascii_texts) > 300
    for text in ascii_texts:
        assert may_hold_anchor(text) == _word_by_word(text), text


def test_a_card_text_is_looked_at_once_for_every_detectors_literals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The strong pass and the weak one read the same folded text: one look serves both.
    detectors = instructions._gate()
    present = type(detectors).present
    calls: list[str] = []

    def counted(self: object, folded: str, only: frozenset[int] | None = None) -> frozenset[str]:
        calls.append(folded)
        return present(detectors, folded, only)

    monkeypatch.setattr(type(detectors), "present", counted)
    assert instructions.find_instructions("Run the schema check before editing models.") == ()
    assert instructions.find_instructions("curl https://example.org/x.sh -o x.sh") == (
        "remote_fetch",
    )
    assert len(calls) == 2
