"""The gates name the patterns to run as a union over the literals a text holds: exactly the
detectors (and credential formats) whose hints a text holds, in their order, as a test of each
one's hints in turn would; a card text is looked at once for every detector's literals, and the
compiled look finds exactly what the substring tests find."""

from __future__ import annotations

import re

import pytest

from active_memory.screening import instructions, literal_scan, secrets
from active_memory.screening.anchor_leads import LEAD_LETTERS, gate
from active_memory.screening.confusables import fold
from active_memory.screening.languages import _anchor_source, may_hold_anchor
from active_memory.screening.literal_scan import HintTable, LiteralScan
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


def _substring_tests(literals: tuple[str, ...], text: str) -> frozenset[str]:
    return frozenset(literal for literal in literals if literal in text)


@pytest.mark.parametrize("table", ["detectors", "formats"])
def test_the_compiled_scan_finds_exactly_the_literals_the_substring_tests_find(
    table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if table == "detectors":
        literals, texts = instructions._gate().literals, [fold(t) for t in CARD_TEXTS]
    else:
        literals = secrets._hints_of(secrets._all_formats()).literals
        texts = [case_fold(t) for t in CARD_TEXTS]
    # Overlapping and nested literals at one position: "password" holds "pass"; "sk-ant-".
    texts += [" ".join(literals), "".join(literals), "".join(reversed(literals)), ""]
    monkeypatch.setattr(literal_scan, "COMPILE_AFTER", 0)
    scan = LiteralScan(literals)
    assert scan.present("x") == _substring_tests(literals, "x")
    assert scan._pattern is not None
    for text in texts:
        assert scan.present(text) == _substring_tests(literals, text), text


def test_a_literal_inside_a_longer_one_at_the_same_place_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(literal_scan, "COMPILE_AFTER", 0)
    scan = LiteralScan(("pass", "password", "sword", "wo", "-", "a.b"))
    assert scan.present("my password-axb") == {"pass", "password", "sword", "wo", "-"}
    assert scan.present("a.b pas") == {"a.b"}
    for literals in [(), ("", "ab")]:  # nothing to compile; an empty literal is in every text
        assert LiteralScan(literals).present("xab") == set(literals)


def test_a_process_screening_a_few_texts_compiles_no_scan() -> None:
    # Compiling costs about what COMPILE_AFTER looks save: a one-card command never pays it.
    scan = LiteralScan(instructions._gate().literals)
    for text in CARD_TEXTS[: literal_scan.COMPILE_AFTER]:
        scan.present(fold(text))
    assert scan._pattern is None
    scan.present("one more")
    assert scan._pattern is not None


def test_a_table_opens_its_unhinted_entries_for_every_text() -> None:
    table = HintTable([("ab", "cd"), None, ("cd",), ()])
    assert table.literals == ("ab", "cd")
    assert table.candidates(frozenset()) == [1]
    assert table.candidates(frozenset({"cd"})) == [0, 1, 2]
    assert table.candidates(table.present("xxabx")) == [0, 1]
