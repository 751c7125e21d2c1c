"""The detect-secrets formats' hints are literals every match holds: proven on the patterns'
parse trees, on the corpus, and by redaction finding exactly what it found without hints."""

from __future__ import annotations

import dataclasses
import re

import pytest

from active_memory.screening import secrets
from active_memory.screening.detectors import plugin_patterns
from active_memory.screening.required_literals import required_literal
from screening.corpus_texts import CARD_TEXTS

# A planted match of hinted detect-secrets kinds, in the cases and spellings they allow.
PLANTED = [
    "AccountKey=" + "A" * 88,
    "https://hooks.slack.com/services/T0001/B0002/" + "c" * 24,
    "https://user:" + "0" * 64 + "@acct.cloudant.com",
    "npm config //registry.npmjs.org/:_authToken=npm_abcdefghijklmnop",
    "sk-" + "a" * 20 + "T3BlbkFJ" + "b" * 20,
    "SG." + "a" * 22 + "." + "b" * 43,
    "XOXB-1234-abcdef",
    "-----BEGIN RSA PRIVATE KEY-----",
    "BEGIN OPENSSH PRIVATE KEY",
    "glcbt-" + "x" * 20,
    "rk_live_" + "a" * 24,
]


def test_a_run_of_plain_literals_is_the_hint() -> None:
    assert required_literal(re.compile(r"BEGIN RSA PRIVATE KEY")) == "begin rsa private key"
    assert required_literal(re.compile(r"(?<!\w)sq0csp-[0-9]{43}")) == "sq0csp-"
    assert required_literal(re.compile(r"SG\.[a-z]{22}\.x")) == "sg."


def test_branches_repeats_and_short_runs_give_no_hint() -> None:
    assert required_literal(re.compile(r"(?:ghp|gho)_[A-Za-z0-9]{36}")) is None
    assert required_literal(re.compile(r"ab?c[0-9]+xy")) is None
    assert required_literal(re.compile(r"(?:token)?x")) is None


def test_under_ignorecase_letters_with_non_ascii_forms_cut_the_run() -> None:
    pattern = re.compile(r"password", re.IGNORECASE)
    hint = required_literal(pattern)
    assert hint == "word"  # 's' also matches 'ſ', whose lower case is not 's'
    text = "the paſſword is here"
    assert pattern.search(text)
    assert hint in text.lower()
    assert required_literal(re.compile("link", re.IGNORECASE)) is None  # 'ı', Kelvin sign


@pytest.mark.parametrize("item", plugin_patterns(), ids=lambda item: item.kind)
def test_every_match_in_the_corpus_holds_its_patterns_hint(item: object) -> None:
    pattern = item.pattern  # type: ignore[attr-defined]
    hint = required_literal(pattern)
    if hint is None:
        pytest.skip("no hint: the pattern runs over every text")
    for text in [*CARD_TEXTS, *PLANTED]:
        if pattern.search(text):
            assert hint in text.lower(), (hint, text)


def test_redaction_with_hints_finds_exactly_what_it_finds_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def marker(kind: str) -> str:
        return f"[REDACTED:{kind}]"

    texts = [*CARD_TEXTS, *PLANTED]
    hinted = [secrets.redact_credentials(text, marker) for text in texts]
    found = [secrets.find_credential(text) for text in texts]
    assert any(kinds for _, kinds in hinted)  # the corpus does hold credentials
    unhinted = tuple(
        dataclasses.replace(fmt, hints=()) if fmt.numbered else fmt
        for fmt in secrets._all_formats()
    )
    monkeypatch.setattr(secrets, "_all_formats", lambda: unhinted)
    assert [secrets.redact_credentials(text, marker) for text in texts] == hinted
    assert [secrets.find_credential(text) for text in texts] == found


def test_each_planted_credential_is_matched_by_a_hinted_pattern() -> None:
    hinted = [item.pattern for item in plugin_patterns() if required_literal(item.pattern)]
    for text in PLANTED:
        assert any(pattern.search(text) for pattern in hinted), text


def test_most_detect_secrets_formats_carry_a_hint() -> None:
    hinted = [fmt for fmt in secrets._all_formats() if fmt.numbered and fmt.hints]
    assert len(hinted) >= 25
